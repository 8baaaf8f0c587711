// Hugging Face config.json -> spec, against the models transformers builds from the same files
// (validation/hf_configs.py, committed as validation/hf_configs.json): the parameter count
// exact for every config, every state_dict tensor's name and size for the small ones; and the
// spec `nnmem import` prints estimates as the config itself does.
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "nnmem/checkpoint.hpp"
#include "nnmem/hf_config.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

Graph graph_of(const std::string& config, const std::string& architecture) {
  const ImportedSpec imported = import_hf_config(source_path(config), architecture);
  return build_graph(parse_spec(imported.text, config));
}

std::string error_of(const std::string& text, const std::string& architecture = "") {
  try {
    import_hf_config_text(text, "config.json", architecture);
  } catch (const Error& e) {
    return e.format();
  }
  return "";
}

}  // namespace

TEST_CASE("every config's parameters, as transformers counts them") {
  const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(source_path("validation/hf_configs.json")));
  REQUIRE(fixture["models"].size() >= 20);
  for (const auto& m : fixture["models"]) {
    const std::string config = m["config"], architecture = m["architecture"];
    CAPTURE(config);
    CAPTURE(architecture);
    const Graph graph = graph_of(config, architecture);
    CHECK(estimate(graph).totals.params == m["parameters"].get<std::int64_t>());
    if (!m.contains("state_dict")) continue;
    std::map<std::string, Shape> theirs, ours;
    std::multiset<Shape> their_shapes, our_shapes;
    for (const auto& t : m["state_dict"]) {
      theirs[t[0]] = t[1].get<Shape>();
      their_shapes.insert(t[1].get<Shape>());
    }
    for (const StateTensor& t : state_dict_tensors(graph)) {
      ours[t.name] = t.type.shape;
      our_shapes.insert(t.type.shape);
    }
    CHECK(our_shapes == their_shapes);
    // The names too, but for ViT: transformers 5 renamed its modules (vit.layers.0.mlp.fc1) where
    // the Hub's checkpoints and the spec keep vit.encoder.layer.0.intermediate.dense.
    if (architecture != "ViTForImageClassification") CHECK(ours == theirs);
  }
}

// The small configs under examples/hf/ are validation/networks.py's Hugging Face models; imported
// (at the harness's sequence length, 32), they must give every measured figure of those models'
// fixtures exactly, the step's peak included: the imported spec is checked against transformers'
// modules themselves, not only against the example it was made from.
// Both attention implementations: attn_implementation "eager" (--set) writes the attention out.
TEST_CASE("imported small configs are exact against transformers' measured runs") {
  const std::vector<std::array<std::string, 4>> cases = {  // config, network, architecture, attention
      {"examples/hf/tiny-gpt2/config.json", "hf_gpt2", "", "sdpa"},
      {"examples/hf/tiny-gpt2/config.json", "hf_gpt2", "", "eager"},
      {"examples/hf/tiny-llama/config.json", "hf_llama", "", "sdpa"},
      {"examples/hf/tiny-llama/config.json", "hf_llama", "", "eager"},
      {"examples/hf/tiny-bert/config.json", "hf_bert", "BertModel", "sdpa"},
      {"examples/hf/tiny-bert/config.json", "hf_bert", "BertModel", "eager"},
      {"examples/hf/tiny-bert/config.json", "hf_bert_pretraining", "BertForPreTraining", ""},
      {"examples/hf/tiny-roberta/config.json", "hf_roberta_sdpa", "", ""},  // sdpa only
      {"examples/hf/tiny-mixtral/config.json", "hf_mixtral_sdpa", "", ""},
      {"examples/hf/tiny-t5/config.json", "hf_t5", "", "sdpa"},
      {"examples/hf/tiny-t5/config.json", "hf_t5", "", "eager"}};
  for (const auto& [config, model, architecture, impl] : cases) {
    const std::string network = impl.empty() ? model : model + "_" + impl;
    const nlohmann::json fixture =
        nlohmann::json::parse(std::ifstream(source_path("validation/fixtures/torch-2.13/" + network + ".json")));
    LoadOptions load;
    load.overrides.emplace_back("seq_len", "32");
    if (!impl.empty()) load.overrides.emplace_back("attn_implementation", impl);
    const ModelSpec spec = parse_spec(import_hf_config(source_path(config), architecture).text, config, load);
    REQUIRE(fixture["runs"].size() >= 7);
    for (const auto& run : fixture["runs"]) {
      CAPTURE(network);
      CAPTURE(run.dump());
      const Totals t = estimate(spec, fixture_run_options("2.13", run)).totals;
      check_measured_figures(t, run);
      CHECK(t.peak_bytes == run["peak_bytes"].get<std::int64_t>());
    }
  }
}

TEST_CASE("the published counts") {
  CHECK(estimate(graph_of("examples/hf/gpt2/config.json", "")).totals.params == 124'439'808);
  CHECK(estimate(graph_of("examples/hf/bert-base-uncased/config.json", "BertModel")).totals.params == 109'482'240);
  // transformers' BertForPreTraining(BertConfig()) on the meta device (validation/hf_configs.py).
  CHECK(estimate(graph_of("examples/hf/bert-base-uncased/config.json", "BertForPreTraining")).totals.params == 110'106'428);
  CHECK(estimate(graph_of("examples/hf/vit-base-patch16-224/config.json", "")).totals.params == 86'567'656);
  CHECK(estimate(graph_of("examples/hf/Llama-2-7b-hf/config.json", "")).totals.params == 6'738'415'616);
  CHECK(estimate(graph_of("examples/hf/roberta-base/config.json", "RobertaModel")).totals.params == 124'645'632);
  CHECK(estimate(graph_of("examples/hf/Mixtral-8x7B-v0.1/config.json", "")).totals.params == 46'702'792'704);
  CHECK(estimate(graph_of("examples/hf/t5-small/config.json", "")).totals.params == 60'506'624);
  CHECK(estimate(graph_of("examples/hf/t5-base/config.json", "")).totals.params == 222'903'552);
}

TEST_CASE("the imported spec estimates as the config does, from its own file") {
  for (const char* config : {"examples/hf/tiny-gpt2/config.json", "examples/hf/tiny-qwen2/config.json",
                             "examples/hf/tiny-mistral/config.json", "examples/hf/tiny-vit/config.json",
                             "examples/hf/tiny-roberta/config.json", "examples/hf/tiny-mixtral/config.json"}) {
    CAPTURE(config);
    const ImportedSpec imported = import_hf_config(source_path(config));
    const std::string path = (std::filesystem::temp_directory_path() / "nnmem_test_imported.yaml").string();
    std::ofstream(path) << imported.text;
    EstimateOptions o;
    o.graph.batch = 2;
    const Estimate direct = estimate(parse_spec(imported.text, config), o), from_file = estimate(load_spec_file(path), o);
    CHECK(direct.totals.params == from_file.totals.params);
    CHECK(direct.totals.peak_bytes == from_file.totals.peak_bytes);
    CHECK(direct.totals.saved_bytes == from_file.totals.saved_bytes);
  }
}

TEST_CASE("the family's rules: defaults, nulls, head classes, storage dtype, windows") {
  const std::string llama = R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 100,
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4)";
  // num_key_value_heads absent or null: as many as the heads; LlamaConfig's rms_norm_eps 1e-06.
  const ImportedSpec plain = import_hf_config_text(llama + "}", "c.json");
  CHECK(plain.text.find("  num_key_value_heads: 4\n") != std::string::npos);
  CHECK(plain.text.find("  rms_norm_eps: 1e-06\n") != std::string::npos);
  CHECK(plain.text.find("  head_dim: 16\n") != std::string::npos);
  CHECK(plain.storage_dtype.empty());
  const ImportedSpec biased =
      import_hf_config_text(llama + R"(, "attention_bias": true, "mlp_bias": true, "torch_dtype": "bfloat16"})", "c.json");
  // q, k, v, o biases (64 + 64 + 64 + 64) and gate, up, down (128 + 128 + 64)
  CHECK(estimate(build_graph(parse_spec(biased.text, "c"))).totals.params -
            estimate(build_graph(parse_spec(plain.text, "c"))).totals.params == 256 + 320);
  CHECK(biased.storage_dtype == "bfloat16");
  CHECK(biased.text.find("float32 unless --dtype") != std::string::npos);
  // The dtype the config names does not change the step's.
  CHECK(estimate(build_graph(parse_spec(biased.text, "c"))).totals.param_bytes ==
        4 * estimate(build_graph(parse_spec(biased.text, "c"))).totals.params);

  // A window shorter than the positions bounds seq_len, and says so.
  const std::string mistral = R"({"model_type": "mistral", "architectures": ["MistralForCausalLM"], "vocab_size": 100,
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
    "max_position_embeddings": 256, "sliding_window": )";
  const ImportedSpec windowed = import_hf_config_text(mistral + "64}", "c.json");
  CHECK(windowed.text.find("  seq_len: 64\n") != std::string::npos);
  CHECK(windowed.text.find("  num_key_value_heads: 8\n") != std::string::npos);  // MistralConfig's default
  REQUIRE(windowed.notes.size() == 1);
  CHECK(windowed.notes[0].find("sliding_window 64") == 0);
  CHECK(import_hf_config_text(mistral + "null}", "c.json").text.find("  seq_len: 256\n") != std::string::npos);

  // ViT's classes: num_labels, else id2label's size, else PretrainedConfig's 2.
  const std::string vit = R"({"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 128, "image_size": 32, "patch_size": 8)";
  CHECK(import_hf_config_text(vit + "}", "c.json").text.find("  num_labels: 2\n") != std::string::npos);
  CHECK(import_hf_config_text(vit + R"(, "id2label": {"0": "a", "1": "b", "2": "c"}})", "c.json").text.find("  num_labels: 3\n") !=
        std::string::npos);
  CHECK(error_of(vit + R"(, "id2label": [1]})").find("'id2label': expected an object") != std::string::npos);

  // --architecture replaces architectures[0], which may then be absent.
  const std::string bert = R"({"model_type": "bert", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 1,
    "num_attention_heads": 4, "intermediate_size": 128})";
  // The head class picks bert_base.yaml's head, whose losses follow (pretraining: two, summed).
  CHECK(import_hf_config_text(bert, "c.json", "BertForMaskedLM").text.find("  head: masked_lm\n") != std::string::npos);
  const std::string pretraining = import_hf_config_text(bert, "c.json", "BertForPreTraining").text;
  CHECK(pretraining.find("  head: pretraining\n") != std::string::npos);
  CHECK(estimate(parse_spec(pretraining, "c.json"), EstimateOptions{}).losses.size() == 2);
  CHECK(error_of(bert) == "config.json:1:1: error: missing field 'architectures', the model class (as [\"BertModel\"]); "
                          "--architecture gives it");
  CHECK(error_of(bert, "BertForNextSentencePrediction")
            .find("model class 'BertForNextSentencePrediction' of model_type 'bert' is not supported; "
                  "supported: BertModel, BertForMaskedLM, BertForPreTraining") != std::string::npos);
}

TEST_CASE("RoBERTa's positions and Mixtral's routing") {
  const std::string roberta = R"({"model_type": "roberta", "architectures": ["RobertaForMaskedLM"], "vocab_size": 100,
    "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 128,
    "max_position_embeddings": )";
  // RobertaConfig's pad_token_id 1: positions 2 onwards, so 514 positions leave 512 tokens.
  const ImportedSpec imported = import_hf_config_text(roberta + "514}", "c.json");
  CHECK(imported.text.find("  pad_token_id: 1\n") != std::string::npos);
  CHECK(imported.text.find("loss: cross_entropy\n") != std::string::npos);
  CHECK(parse_spec(imported.text, "c").inputs.at(0).shape == Shape{512});
  CHECK(error_of(roberta + "2}") == "config.json:3:32: error: 'max_position_embeddings' 2 leaves no position after "
                                    "pad_token_id 1: RoBERTa's positions start at pad_token_id + 1");

  const std::string mixtral = R"({"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "vocab_size": 100,
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
    "max_position_embeddings": 64)";
  const ImportedSpec moe = import_hf_config_text(mixtral + "}", "c.json");
  REQUIRE(moe.notes.size() == 1);
  CHECK(moe.notes[0].find("routing: each token goes to its top 2 of 8 experts with no capacity limit") == 0);
  CHECK(moe.text.find("# Note: routing: each token") != std::string::npos);
  CHECK(error_of(mixtral + R"(, "router_jitter_noise": 0.01})").find("'router_jitter_noise' 0.01: the router's jitter") !=
        std::string::npos);
  CHECK(error_of(mixtral + R"(, "num_experts_per_tok": 9})").find("'num_experts_per_tok' 9 is more than 'num_local_experts' 8") !=
        std::string::npos);
}

TEST_CASE("T5's feed-forward kinds, decoder depth and tied head") {
  const std::string t5 = R"({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 100,
    "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4)";
  const ImportedSpec plain = import_hf_config_text(t5 + "}", "c.json");
  CHECK(plain.text.find("  seq_len: 512\n") != std::string::npos);            // n_positions' default
  CHECK(plain.text.find("  num_decoder_layers: $num_layers") != std::string::npos);  // null: the encoder's
  CHECK(plain.notes.empty());
  const std::int64_t base = estimate(build_graph(parse_spec(plain.text, "c"))).totals.params;
  // A third decoder block: self-attention and cross-attention (4 + 4 projections of 64 x 64),
  // the feed-forward's wi and wo (2 x 64 x 128) and three norms.
  const ImportedSpec deeper = import_hf_config_text(t5 + R"(, "num_decoder_layers": 3})", "c.json");
  CHECK(estimate(build_graph(parse_spec(deeper.text, "c"))).totals.params - base == 8 * 64 * 64 + 2 * 64 * 128 + 3 * 64);
  // gated-gelu: wi_0 and wi_1 in place of wi, one more 64 x 128 per block (4 blocks); the head
  // stays tied (transformers 5), and the note says so.
  const ImportedSpec gated = import_hf_config_text(t5 + R"(, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": false})",
                                                   "c.json");
  CHECK(estimate(build_graph(parse_spec(gated.text, "c"))).totals.params - base == 4 * 64 * 128);
  REQUIRE(gated.notes.size() == 1);
  CHECK(gated.notes[0].find("tie_word_embeddings false: transformers 5 ties lm_head") == 0);
  CHECK(error_of(t5 + R"(, "feed_forward_proj": "gated-silu"})")
            .find("'feed_forward_proj': expected one of \"relu\", \"gated-gelu\"") != std::string::npos);
  CHECK(error_of(t5 + "}").empty());
  CHECK(error_of(R"({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 100,
    "d_model": 64, "d_ff": 128, "num_layers": 2, "num_heads": 4})")
            .find("missing field 'd_kv'") != std::string::npos);
}

TEST_CASE("located errors name the field") {
  CHECK(error_of("{\n  \"model_type\": \"bart\"\n}") ==
        "config.json:2:17: error: model_type 'bart' is not supported; supported: gpt2 (GPT2LMHeadModel); llama "
        "(LlamaForCausalLM); mistral (MistralForCausalLM); qwen2 (Qwen2ForCausalLM); mixtral (MixtralForCausalLM); bert "
        "(BertModel, BertForMaskedLM, BertForPreTraining); roberta (RobertaModel, RobertaForMaskedLM); vit "
        "(ViTForImageClassification); t5 (T5ForConditionalGeneration)");
  CHECK(error_of("{}").find("config.json:1:1: error: missing field 'model_type'") == 0);
  // Nested objects and strings with braces and escaped quotes do not confuse the positions.
  CHECK(error_of("{\"x\": {\"model_type\": 1, \"s\": \"}\\\"{\"},\n \"model_type\": \"gpt2\", \"architectures\": "
                 "[\"GPT2LMHeadModel\"],\n \"vocab_size\": 10, \"n_positions\": 8, \"n_embd\": 8, \"n_layer\": 1,\n"
                 " \"n_head\": 2, \"layer_norm_epsilon\": -1}") ==
        "config.json:4:37: error: 'layer_norm_epsilon': expected a number >= 0, found the number -1");
  CHECK(error_of("{\"model_type\": \"gpt2\", \"architectures\": [\"GPT2LMHeadModel\"], \"vocab_size\": 10, \"n_positions\": 8, "
                 "\"n_embd\": 8, \"n_layer\": 1.5, \"n_head\": 2}").find("'n_layer': expected a positive integer, found the number 1.5") !=
        std::string::npos);
  CHECK(error_of("").find("config.json:1:1: error: not valid JSON") == 0);
  CHECK(is_hf_config("a/config.json"));
  CHECK_FALSE(is_hf_config("a/gpt2.yaml"));
}
