// The families' tables: keys and defaults are the transformers config classes' (GPT2Config,
// LlamaConfig, MistralConfig, Qwen2Config, MixtralConfig, BertConfig, RobertaConfig, ViTConfig,
// T5Config), and the sizes that make a model big or small are required rather than guessed.
#include "hf_families.hpp"

#include <cstdint>

#include "nnmem/diagnostic.hpp"

namespace nnmem::hf {

namespace {

std::int64_t size_of(const Translation& t, const std::string& variable) { return std::stoll(t.variables.at(variable)); }

// transformers refuses a hidden size its heads do not divide (GPT2Attention, BertSelfAttention,
// ViTSelfAttention raise ValueError).
void check_heads(const json_text::Document& doc, const Translation& t, const std::string& hidden, const std::string& heads) {
  if (size_of(t, hidden) % size_of(t, heads) != 0)
    throw Error(doc.value_loc(hidden), "'" + hidden + "' " + t.variables.at(hidden) + " is not a multiple of '" + heads +
                                           "' " + t.variables.at(heads) + ", as the attention's heads need");
}

void finish_gpt2(const json_text::Document& doc, Translation& t) {
  check_heads(doc, t, "n_embd", "n_head");
  t.variables["seq_len"] = t.variables.at("n_positions");  // n_inner null: the template's 4 * n_embd
}

// LlamaAttention, MistralAttention, Qwen2Attention: head_dim = getattr(config, "head_dim",
// hidden_size // num_attention_heads); num_key_value_heads None means as many as the heads.
void finish_llama(const json_text::Document&, Translation& t) {
  if (!t.variables.count("head_dim"))
    t.variables["head_dim"] = std::to_string(size_of(t, "hidden_size") / size_of(t, "num_attention_heads"));
  if (!t.variables.count("num_key_value_heads")) t.variables["num_key_value_heads"] = t.variables.at("num_attention_heads");
  t.variables["seq_len"] = t.variables.at("max_position_embeddings");
  t.variables.erase("max_position_embeddings");  // the rotary tables' length, not a parameter's
}

// A sliding window longer than the sequence masks nothing: the sequence is kept within it, where
// the attention is plain causal attention, the step nnmem models.
void finish_windowed(const json_text::Document& doc, Translation& t) {
  finish_llama(doc, t);
  const bool used = !t.variables.count("use_sliding_window") || t.variables.at("use_sliding_window") == "true";
  const auto window_text = t.variables.find("sliding_window");
  const std::int64_t window = window_text == t.variables.end() ? 0 : std::stoll(window_text->second);
  t.variables.erase("use_sliding_window");  // neither is a template variable
  t.variables.erase("sliding_window");
  if (!used || window == 0 || window >= size_of(t, "seq_len")) return;
  t.variables["seq_len"] = std::to_string(window);
  t.notes.push_back("sliding_window " + std::to_string(window) + ": seq_len is " + std::to_string(window) +
                    ", where the window masks nothing; a longer sequence needs the window's mask, which is not modelled");
}

// MixtralSparseMoeBlock: the routing is sampled only under router_jitter_noise (training
// multiplies the hidden states by noise in place), which nnmem does not model.
void finish_mixtral(const json_text::Document& doc, Translation& t) {
  finish_windowed(doc, t);
  if (std::stod(t.variables.at("router_jitter_noise")) != 0.0)
    throw Error(doc.value_loc("router_jitter_noise"), "'router_jitter_noise' " + t.variables.at("router_jitter_noise") +
                                                          ": the router's jitter (an in-place multiplication by noise) is not "
                                                          "modelled; nnmem models 0 (MixtralConfig's default)");
  t.variables.erase("router_jitter_noise");
  const std::int64_t experts = size_of(t, "num_local_experts"), top_k = size_of(t, "num_experts_per_tok");
  if (top_k > experts)
    throw Error(doc.value_loc("num_experts_per_tok"), "'num_experts_per_tok' " + std::to_string(top_k) +
                                                          " is more than 'num_local_experts' " + std::to_string(experts));
  t.notes.push_back("routing: each token goes to its top " + std::to_string(top_k) + " of " + std::to_string(experts) +
                    " experts with no capacity limit (transformers drops no token), on average tokens x " +
                    std::to_string(top_k) + " / " + std::to_string(experts) + " per expert; what training keeps has "
                    "tokens x " + std::to_string(top_k) + " rows whichever experts they pick (the grouped_mm experts), "
                    "so the estimate does not depend on the routing");
}

void finish_bert(const json_text::Document& doc, Translation& t) {
  check_heads(doc, t, "hidden_size", "num_attention_heads");
  t.variables["seq_len"] = t.variables.at("max_position_embeddings");
}

// RobertaEmbeddings numbers positions from pad_token_id + 1: the template's seq_len is what is left
// of the positions (512 of roberta-base's 514), which must be at least one.
void finish_roberta(const json_text::Document& doc, Translation& t) {
  check_heads(doc, t, "hidden_size", "num_attention_heads");
  const std::int64_t positions = size_of(t, "max_position_embeddings"), pad = size_of(t, "pad_token_id");
  if (positions - pad - 1 < 1)
    throw Error(doc.value_loc(doc.root.contains("max_position_embeddings") ? "max_position_embeddings" : "pad_token_id"),
                "'max_position_embeddings' " + std::to_string(positions) + " leaves no position after pad_token_id " +
                    std::to_string(pad) + ": RoBERTa's positions start at pad_token_id + 1");
}

// ViTForImageClassification's classifier has config.num_labels outputs: `num_labels` when the
// file has it, else as many as id2label's entries (how PretrainedConfig sets it), else 2.
void finish_vit(const json_text::Document& doc, Translation& t) {
  check_heads(doc, t, "hidden_size", "num_attention_heads");
  const auto& root = doc.root;
  std::int64_t labels = 2;
  if (root.contains("num_labels")) {
    const auto& v = root["num_labels"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
      throw Error(doc.value_loc("num_labels"), "'num_labels': expected a positive integer, found " + v.dump());
    labels = v.get<std::int64_t>();
  } else if (root.contains("id2label")) {
    const auto& v = root["id2label"];
    if (!v.is_object() || v.empty())
      throw Error(doc.value_loc("id2label"), "'id2label': expected an object of labels (its size is num_labels), found " +
                                                 std::string(v.type_name()));
    labels = static_cast<std::int64_t>(v.size());
  }
  t.variables["num_labels"] = std::to_string(labels);
}

// T5Config has no position table: n_positions (512 in the t5 configs) is the sequence length the
// template takes for the encoder and the decoder alike. transformers 5's T5Config ties lm_head to
// the shared embedding whatever tie_word_embeddings says (which then only decides the scaling).
void finish_t5(const json_text::Document&, Translation& t) {
  t.variables["seq_len"] = t.variables.at("n_positions");
  t.variables.erase("n_positions");
  if (t.variables.at("tie_word_embeddings") == "false")
    t.notes.push_back("tie_word_embeddings false: transformers 5 ties lm_head to the shared embedding all the same "
                      "(T5Config forces it) and only leaves out the d_model ** -0.5 scaling of the decoder's output; "
                      "--set tie_lm_head=false gives the untied head transformers 4 built (vocab_size x d_model more "
                      "parameters)");
}

Field size(const std::string& key) { return {key, Kind::Size, "", {}}; }
Field size(const std::string& key, const std::string& fallback) { return {key, Kind::Size, fallback, {}}; }
Field number(const std::string& key, const std::string& fallback) { return {key, Kind::Number, fallback, {}}; }
Field flag(const std::string& key, const std::string& fallback) { return {key, Kind::Bool, fallback, {}}; }
Field optional(const std::string& key, const std::string& fallback) { return {key, Kind::OptionalSize, fallback, {}}; }
Field word(const std::string& key, const std::string& only) { return {key, Kind::Word, only, {only}, false}; }

// The keys LLaMA-shaped families share; `kv` and `positions` are the class's defaults.
std::vector<Field> llama_fields(const std::string& kv, const std::string& positions) {
  return {size("vocab_size"), size("hidden_size"), size("intermediate_size"), size("num_hidden_layers"),
          size("num_attention_heads"), optional("num_key_value_heads", kv), optional("head_dim", "null"),
          size("max_position_embeddings", positions), number("rms_norm_eps", "1e-06"), number("attention_dropout", "0.0"),
          flag("tie_word_embeddings", "false"), word("hidden_act", "silu")};
}

// BertConfig's keys, which RobertaConfig shares (its pad_token_id is 1).
std::vector<Field> bert_fields(const std::string& pad) {
  return {size("vocab_size"), size("hidden_size"), size("num_hidden_layers"), size("num_attention_heads"),
          size("intermediate_size"), size("max_position_embeddings", "512"), size("type_vocab_size", "2"),
          number("layer_norm_eps", "1e-12"), number("hidden_dropout_prob", "0.1"),
          number("attention_probs_dropout_prob", "0.1"), {"pad_token_id", Kind::Index, pad, {}},
          flag("tie_word_embeddings", "true"), word("hidden_act", "gelu"), word("position_embedding_type", "absolute")};
}

std::vector<Family> make() {
  std::vector<Family> out;
  out.push_back({"gpt2", "gpt2",
                 {size("vocab_size"), size("n_positions"), size("n_embd"), size("n_layer"), size("n_head"),
                  optional("n_inner", "null"), number("layer_norm_epsilon", "1e-05"), number("resid_pdrop", "0.1"),
                  number("embd_pdrop", "0.1"), number("attn_pdrop", "0.1"), flag("tie_word_embeddings", "true"),
                  word("activation_function", "gelu_new")},
                 {{"GPT2LMHeadModel", {}, ""}},
                 finish_gpt2});
  std::vector<Field> llama = llama_fields("null", "2048");
  llama.push_back(flag("attention_bias", "false"));
  llama.push_back(flag("mlp_bias", "false"));
  out.push_back({"llama", "llama", llama, {{"LlamaForCausalLM", {}, ""}}, finish_llama});
  std::vector<Field> mistral = llama_fields("8", "131072");
  mistral.push_back(optional("sliding_window", "4096"));
  out.push_back({"mistral", "llama", mistral, {{"MistralForCausalLM", {}, ""}}, finish_windowed});
  std::vector<Field> qwen2 = llama_fields("32", "32768");
  qwen2.push_back(optional("sliding_window", "4096"));
  qwen2.push_back(flag("use_sliding_window", "false"));
  out.push_back({"qwen2", "llama", qwen2, {{"Qwen2ForCausalLM", {{"qkv_bias", "true"}}, ""}}, finish_windowed});
  std::vector<Field> mixtral = llama_fields("8", "131072");
  mixtral.push_back(optional("sliding_window", "null"));
  mixtral.push_back(size("num_local_experts", "8"));
  mixtral.push_back(size("num_experts_per_tok", "2"));
  mixtral.push_back(number("router_jitter_noise", "0.0"));
  out.push_back({"mixtral", "mixtral", mixtral, {{"MixtralForCausalLM", {}, ""}}, finish_mixtral});
  out.push_back({"bert", "bert_base", bert_fields("0"),
                 {{"BertModel", {}, ""},
                  {"BertForMaskedLM", {{"head", "masked_lm"}}, ""},
                  {"BertForPreTraining", {{"head", "pretraining"}}, ""}},
                 finish_bert});
  out.push_back({"roberta", "roberta", bert_fields("1"),
                 {{"RobertaModel", {}, ""},
                  {"RobertaForMaskedLM", {{"add_pooling_layer", "false"}, {"lm_head", "true"}}, "cross_entropy"}},
                 finish_roberta});
  out.push_back({"vit", "vit_b16",
                 {size("hidden_size"), size("num_hidden_layers"), size("num_attention_heads"), size("intermediate_size"),
                  size("image_size", "224"), size("patch_size", "16"), size("num_channels", "3"),
                  number("layer_norm_eps", "1e-12"), number("hidden_dropout_prob", "0.0"),
                  number("attention_probs_dropout_prob", "0.0"), flag("qkv_bias", "true"), word("hidden_act", "gelu")},
                 {{"ViTForImageClassification", {}, ""}},
                 finish_vit});
  out.push_back({"t5", "t5",
                 {size("vocab_size"), size("d_model"), size("d_kv"), size("d_ff"), size("num_layers"),
                  optional("num_decoder_layers", "null"), size("num_heads"), size("relative_attention_num_buckets", "32"),
                  size("relative_attention_max_distance", "128"), size("n_positions", "512"),
                  number("dropout_rate", "0.1"), number("layer_norm_epsilon", "1e-06"),
                  flag("tie_word_embeddings", "true"), {"feed_forward_proj", Kind::Word, "relu", {"relu", "gated-gelu"}}},
                 {{"T5ForConditionalGeneration", {}, ""}},
                 finish_t5});
  return out;
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> all = make();
  return all;
}

}  // namespace nnmem::hf
