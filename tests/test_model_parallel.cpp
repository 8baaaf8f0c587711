// Tensor and pipeline parallelism (docs/parallel.md): one rank's spec and each stage's step,
// checked against Megatron-LM's parameter count and Korthikanti et al.'s activation formulas
// term by term, the schedules' micro-batches in flight, and every error. Modelled: no GPU
// cluster here to measure them.
#include <map>

#include <nlohmann/json.hpp>

#include "model_parallel_specs.hpp"
#include "nnmem/report.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("--tp: a GPT layer's activations against Korthikanti et al.'s formulas, term by term") {
  const std::int64_t s = 128, b = 1, h = 256, a = 8, sbh = s * b * h;
  const std::int64_t ln_stats = 2 * 2 * s * b * 2;  // two LayerNorms' mean and rstd, s·b float16 values each
  // Without recomputation nnmem keeps 4 s·b·h more than 34 s·b·h + 5 a s² b: the math kernel's
  // q and k, each multiplied by √scale, are new tensors its matmul keeps (the formula counts q and
  // k once, nnmem the fused QKV output through v's view and the scaled copies); split by t.
  CHECK(layer_bytes(1, CheckpointSegments::None) == korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::None) + 4 * sbh + ln_stats);
  CHECK(layer_bytes(2, CheckpointSegments::None) == korthikanti_layer_bytes(s, b, h, a, 2, false, Recompute::None) + 4 * sbh / 2 + ln_stats);
  CHECK(layer_bytes(4, CheckpointSegments::None) == korthikanti_layer_bytes(s, b, h, a, 4, false, Recompute::None) + 4 * sbh / 4 + ln_stats);
  // Selective recomputation keeps the core's inputs q, k, v only: the formula's 34 s·b·h exactly.
  CHECK(layer_bytes(1, CheckpointSegments::Selective) == korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::Selective) + ln_stats);
  CHECK(layer_bytes(2, CheckpointSegments::Selective) == korthikanti_layer_bytes(s, b, h, a, 2, false, Recompute::Selective) + ln_stats);
}

TEST_CASE("--tp: a LLaMA rank's parameters are Megatron-LM's count, exactly") {
  TransformerShape m;
  m.hidden = 64;
  m.layers = 4;
  m.heads = 4;
  m.ffn_hidden = 160;
  m.vocab = 256;
  m.swiglu = m.rmsnorm = m.untied = true;
  for (std::int64_t t : {1, 2, 4}) {
    CAPTURE(t);
    const ModelParallelEstimate e = run(llama(4), tp(t));
    const MegatronMemory mg = megatron_theoretical_memory(m, megatron(t, 1));
    CHECK(static_cast<double>(e.stages[0].params) * 18 == mg.weight_and_optimizer_bytes);
    if (t == 2) {
      std::size_t c = 0, r = 0, v = 0, rep = 0;
      for (const TpLayer& l : e.split)
        ++(l.role == TpRole::Column ? c : l.role == TpRole::Row ? r : l.role == TpRole::VocabEmbedding ? v : rep);
      CHECK(c == 4 * 5 + 1);  // q, k, v, gate, up; the head
      CHECK(r == 4 * 2);      // o_proj, down_proj
      CHECK(v == 1);
      CHECK(rep == 4 * 2 + 1);  // the RMSNorms
    }
  }
  // Pipeline stage 0 holds the embedding and its layers; Megatron's most loaded rank also counts
  // 1/pp of the final norm, which nnmem puts on the last stage with the norm.
  const ModelParallelEstimate e = run(llama(4), mp_of(2, 4));
  const MegatronMemory mg = megatron_theoretical_memory(m, megatron(2, 4));
  CHECK(static_cast<double>(e.stages[0].params) * 18 == mg.weight_and_optimizer_bytes - 18.0 * 64 / 4);
}

TEST_CASE("--pp: stages, the schedules' micro-batches in flight, and the first stage holding the most") {
  SUBCASE("1F1B: stage i holds pp - i micro-batches, at most all of them") {
    const ModelParallelEstimate e = run(gpt(8), mp_of(1, 4), 8);
    REQUIRE(e.stages.size() == 4);
    for (std::int64_t i = 0; i < 4; ++i) {
      const PipelineStage& st = e.stages[static_cast<std::size_t>(i)];
      CAPTURE(i);
      CHECK(st.layers == 2);
      CHECK(st.in_flight == 4 - i);
      CHECK(st.peak_bytes == st.estimate.totals.peak_bytes + st.held_bytes * (3 - i));
    }
    CHECK(e.most_loaded() == 0);
    CHECK(run(gpt(8), mp_of(1, 4), 2).stages[0].in_flight == 2);
  }
  SUBCASE("GPipe: every micro-batch in flight on every stage") {
    for (const PipelineStage& st : run(gpt(8), mp_of(1, 4, PipelineSchedule::GPipe), 8).stages) CHECK(st.in_flight == 8);
  }
  SUBCASE("interleaved: Megatron's warm-up forwards, pp (1 + (pp - 1) / (pp V)) micro-batches on the first stage") {
    const ModelParallelEstimate e = run(gpt(8), mp_of(1, 4, PipelineSchedule::Interleaved, 2), 8);
    CHECK(e.stages[0].in_flight_chunks == 3 * 2 + 1 * 4 + 1);
    CHECK(e.stages[3].in_flight_chunks == 0 * 2 + 1 * 4 + 1);
    CHECK(e.stages[0].units == std::vector<std::string>{"layers.0", "layers.4"});
    CHECK(e.stages[0].layers == 2);
  }
  SUBCASE("--stages: an uneven split as given; balanced by default with the remainder on the last stages") {
    const ModelParallelEstimate given = run(gpt(8), mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {3, 5}));
    CHECK(given.stages[0].layers == 3);
    CHECK(given.stages[1].layers == 5);
    const ModelParallelEstimate balanced = run(gpt(7), mp_of(1, 2));
    CHECK(balanced.stages[0].layers == 3);
    CHECK(balanced.stages[1].layers == 4);
    CHECK(balanced.stages[1].params > balanced.stages[0].params);
  }
  SUBCASE("the activations crossing in are the stage's input; the sum of the stages' parameters is the model's") {
    const ModelParallelEstimate e = run(llama(4), mp_of(1, 2));
    CHECK(e.stages[1].estimate.inputs.front().name == "model.layers.1.add_2");
    const Estimate whole = estimate(llama(4), EstimateOptions{});
    CHECK(e.stages[0].params + e.stages[1].params == whole.totals.params);
  }
}

TEST_CASE("--tp and --pp: the bad combinations are located errors naming both sides") {
  CHECK(error_of(gpt(2), tp(3)) ==
        "gpt.yaml:19:9: error: --tp 3: ScaledDotProductAttention 'layers.0.core' splits its attention heads across the ranks: "
        "expected the 8 query heads and 8 key-value heads to divide by 3, found remainders 2 and 2");
  CHECK(error_of(gpt(6), mp_of(1, 8)) ==
        "gpt.yaml:1:1: error: 'gpt_block' has 6 pipeline layers (its block instances, or its top-level layers with parameters): "
        "too few to fill 8 pipeline stages (--pp 8)");
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {1, 2})).find("--stages adds up to 3 layers; 'gpt_block' has 4 pipeline layers") != std::string::npos);
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {4})).find("--stages gives 1 sizes; expected one for each of the 2 pipeline stages") != std::string::npos);
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::Interleaved)).find("needs --virtual-stages of 2 or more") != std::string::npos);
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::OneFOneB, 2)).find("--virtual-stages 2 needs --schedule interleaved, found --schedule 1f1b") !=
        std::string::npos);
  const ModelSpec norm_on_split = parse_spec(R"(
inputs: {x: [16]}
layers:
  - {name: up, type: Linear, out_features: 32}
  - {name: norm, type: LayerNorm, normalized_shape: 32}
  - {name: down, type: Linear, out_features: 16}
)", "n.yaml");
  CHECK(error_of(norm_on_split, tp(2)) ==
        "n.yaml:5:5: error: --tp 2: LayerNorm 'norm' normalises or reduces a tensor split across the ranks, 'up' [1, 32], split over "
        "the ranks along dimension 1; only Linear, views, transposes, element-wise layers and attention can read one");
  CHECK(error_of(load_spec_file(source_path("examples/torch_encoder.yaml")), tp(2)).find("MultiheadAttention 'encoder.layers.0.self_attn' is one module") !=
        std::string::npos);
  CHECK(error_of(norm_on_split, mp_of(1, 4)).find("has 3 pipeline layers (its block instances, or its top-level layers with parameters): "
                                                "too few to fill 4 pipeline stages") != std::string::npos);
}

TEST_CASE("--tp on other architectures: an MLP's pairs, a CNN's classifier column-parallel, the rest replicated") {
  const ModelParallelEstimate mlp = run(load_spec_file(source_path("examples/mlp.yaml")), tp(2));
  std::vector<std::string> roles;
  for (const TpLayer& l : mlp.split) roles.emplace_back(name_of(l.role));
  CHECK(roles == std::vector<std::string>{"column-parallel", "row-parallel", "column-parallel"});
  const ModelParallelEstimate cnn = run(load_spec_file(source_path("examples/resnet18.yaml")), tp(2));
  CHECK(cnn.split.back().name == "fc");
  CHECK(cnn.split.back().role == TpRole::Column);
}

TEST_CASE("--checkpoint selective: each attention core a segment of its own; an error without one") {
  EstimateOptions o;
  o.step.checkpoint.segments = CheckpointSegments::Selective;
  const Estimate e = estimate(gpt(3), o);
  CHECK(e.checkpointed == std::vector<std::string>{"layers.0.core", "layers.1.core", "layers.2.core"});
  const Estimate none = estimate(gpt(3), {});
  CHECK(e.totals.peak_bytes < none.totals.peak_bytes);
  // Attention written out: the MatMul of the scores through the Softmax to the MatMul of the values.
  const Estimate unet = estimate(load_spec_file(source_path("examples/diffusion_unet.yaml")), o);
  REQUIRE_FALSE(unet.checkpointed.empty());
  CHECK(unet.checkpointed.front().find("w_soft") != std::string::npos);
  CHECK(error_from("inputs: {x: [16]}\nlayers:\n  - {name: fc, type: Linear, out_features: 4}\n", o) ==
        "test.yaml:1:1: error: --checkpoint selective recomputes the attention cores, and 'test' has none: expected a "
        "ScaledDotProductAttention layer, or a Softmax between two MatMul layers; found neither (use --checkpoint blocks or every:K)");
}

TEST_CASE("--tp and --pp reports: per GPU, labelled modelled, as a table and as JSON") {
  const ModelParallelEstimate e = run(gpt(4), mp_of(2, 2), 4);
  const std::string table = render_table(e);
  CHECK(table.find("gpt_block: tensor parallel 2 × pipeline parallel 2 × data parallel 1; schedule 1f1b, 4 micro-batches a step") == 0);
  CHECK(table.find("per GPU, modelled") != std::string::npos);
  CHECK(table.find("Most loaded: stage 0") != std::string::npos);
  CHECK(table.find("Layers with parameters: 8 column-parallel, 8 row-parallel, 8 replicated") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render_json(e));
  const nlohmann::json& m = j["model_parallel"];
  CHECK(m["modelled"] == true);
  CHECK(m["tp"] == 2);
  CHECK(m["stages"].size() == 2);
  CHECK(m["peak_bytes_per_gpu"] == e.stages[e.most_loaded()].peak_bytes);
  CHECK(m["stages"][1]["in_flight"] == 1);
  CHECK(m["stages"][0]["estimate"]["totals"]["params"] == e.stages[0].params);
  CHECK(m["split"][1]["role"] == "column-parallel");
}

TEST_CASE("--tp: a row-parallel Linear's given in_features is the rank's share; --pp: a boundary inside a skip connection") {
  const ModelSpec explicit_in = parse_spec(R"(
inputs: {x: [16]}
layers:
  - {name: up, type: Linear, in_features: 16, out_features: 32}
  - {name: act, type: ReLU}
  - {name: down, type: Linear, in_features: 32, out_features: 16}
)", "e.yaml");
  CHECK(run(explicit_in, tp(2)).stages[0].params == (16 * 16 + 16) + (16 * 16 + 16));  // up: 16 of its 32 rows; down: 16 of its 32 columns
  const ModelSpec skip = parse_spec(R"(
inputs: {x: [16]}
layers:
  - {name: a, type: Linear, out_features: 16}
  - {name: b, type: Linear, out_features: 16}
  - {name: c, type: Linear, out_features: 16}
  - {name: sum, type: Add, inputs: [a, c]}
)", "s.yaml");
  CHECK(error_of(skip, mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {2, 1})) ==
        "s.yaml:5:5: error: --pp: pipeline stage 0 would send 2 tensors on ('a', 'b', …); a stage sends "
                                       "one, so the boundary cannot fall inside a skip connection: move it with --stages");
}

TEST_CASE("--tp on a mixture of experts: the router replicated, each expert's fc1/fc2 split, with and without --sequence-parallel") {
  LoadOptions small;
  small.overrides = {{"num_hidden_layers", "2"}, {"hidden_size", "64"}, {"intermediate_size", "96"}, {"num_attention_heads", "4"},
                     {"num_key_value_heads", "2"}, {"vocab_size", "128"}, {"seq_len", "16"}};
  const ModelSpec mixtral = load_spec_file(source_path("examples/mixtral.yaml"), small);
  const std::int64_t h = 64, i = 96, e = 8, kv = 2 * 16;  // kv: two heads of 16
  const std::int64_t whole = run(mixtral, tp(1)).stages[0].params;
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const ModelParallelEstimate r = run(mixtral, tp(2, sp));
    std::map<std::string, TpRole> role;
    for (const TpLayer& l : r.split) role[l.name] = l.role;
    CHECK(role.at("model.layers.0.mlp.gate") == TpRole::Replicated);   // Megatron's TopKRouter: every rank scores every expert
    CHECK(role.at("model.layers.0.mlp.experts") == TpRole::Experts);
    CHECK(name_of(TpRole::Experts) == "expert-tensor-parallel");
    // Per layer, a rank holds half of q, k, v, o, of each expert's gate_up [2I, H] and down [H, I],
    // and all of the router [E, H] and the two norms; half the embeddings and the head.
    const std::int64_t per_layer = (h * h + 2 * h * kv + h * h) / 2 + e * 3 * i * h / 2 + e * h + 2 * h;
    CHECK(r.stages[0].params == 2 * per_layer + 128 / 2 * h * 2 + h);  // vocabulary-parallel embeddings, column-parallel head, final norm
    CHECK(r.stages[0].params < whole);
  }
  LoadOptions odd = small;
  for (auto& [name, value] : odd.overrides)
    if (name == "intermediate_size") value = "95";
  CHECK(error_of(load_spec_file(source_path("examples/mixtral.yaml"), odd), tp(2))
            .find("MoEExperts 'model.layers.0.mlp.experts' splits each expert's intermediate_size across the ranks (fc1 column-, "
                  "fc2 row-parallel): expected it to divide by 2, found 95") != std::string::npos);
}

TEST_CASE("--tp: the vocabulary's table is the one reading the token ids, not the largest") {
  // A char-level GPT (nanoGPT's Shakespeare: 65 tokens, 256 positions): the position table is
  // the larger, and replicated; the tied head's vocabulary split with the token table.
  const auto spec = [](std::int64_t vocab) {
    LoadOptions o;
    o.overrides = {{"vocab", std::to_string(vocab)}};
    return parse_spec(R"(
variables: {vocab: 65, positions: 256, h: 64}
inputs:
  ids: {shape: [256], dtype: int64}
layers:
  - {name: wte, type: Embedding, num_embeddings: $vocab, embedding_dim: $h}
  - {name: position_ids, type: Constant, inputs: [], shape: [1, $positions], dtype: int64, functional: true}
  - {name: wpe, type: Embedding, num_embeddings: $positions, embedding_dim: $h}
  - {name: sum, type: Add, inputs: [wte, wpe], functional: true}
  - {name: fc, type: Linear, out_features: $4 * $h}
  - {name: proj, type: Linear, out_features: $h}
  - {name: lm_head, type: Linear, out_features: $vocab, bias: false, tie: {weight: wte.weight}}
)", "char_gpt.yaml", o);
  };
  for (const std::int64_t vocab : {65, 256, 1000}) {
    CAPTURE(vocab);
    const ModelParallelEstimate e = run(spec(vocab), tp(2));
    std::map<std::string, TpRole> roles;
    for (const TpLayer& l : e.split) roles[l.name] = l.role;
    CHECK(roles.at("wte") == TpRole::VocabEmbedding);
    CHECK(roles.at("wpe") == TpRole::Replicated);
    CHECK(roles.at("lm_head") == TpRole::Column);
    const std::int64_t h = 64;
    CHECK(e.stages[0].params == (vocab + 1) / 2 * h + 256 * h + (h * 4 * h + 4 * h) / 2 + (4 * h * h) / 2 + h);
  }
}
