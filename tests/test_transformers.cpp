// The transformer examples: their parameter counts are Hugging Face's (each checked with
// transformers 5.23 on the meta device: sum(p.numel() for p in model.parameters())), for the
// default size and for others through --set; and the spec features they rest on (a tied LM
// head counted once, a shared module, a split's outputs, a reshape that merges the batch).
#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
std::int64_t params(const std::string& file, std::vector<std::pair<std::string, std::string>> sets = {}) {
  LoadOptions load;
  load.overrides = std::move(sets);
  load.overrides.emplace_back("seq_len", "16");  // the count does not depend on it (ViT has none to set)
  if (file == "examples/vit_b16.yaml") load.overrides.pop_back();
  EstimateOptions options;
  options.graph.mode = Mode::Eval;
  return estimate(load_spec_file(source_path(file), load), options).totals.params;
}
}  // namespace

TEST_CASE("the four examples give Hugging Face's parameter counts, and their --set variants too") {
  CHECK(params("examples/gpt2.yaml") == 124'439'808);
  CHECK(params("examples/gpt2.yaml", {{"n_embd", "1024"}, {"n_layer", "24"}, {"n_head", "16"}}) == 354'823'168);
  CHECK(params("examples/gpt2_medium.yaml") == 354'823'168);  // the same, as a file that extends gpt2.yaml
  CHECK(params("examples/gpt2.yaml", {{"n_embd", "1600"}, {"n_layer", "48"}, {"n_head", "25"}}) == 1'557'611'200);
  CHECK(params("examples/llama.yaml") == 6'738'415'616);
  CHECK(params("examples/llama.yaml", {{"hidden_size", "5120"}, {"intermediate_size", "13824"}, {"num_hidden_layers", "40"},
                                       {"num_attention_heads", "40"}, {"num_key_value_heads", "40"}}) == 13'015'864'320);
  CHECK(params("examples/llama.yaml", {{"hidden_size", "8192"}, {"intermediate_size", "28672"}, {"num_hidden_layers", "80"},
                                       {"num_attention_heads", "64"}, {"num_key_value_heads", "8"}}) == 68'976'648'192);
  CHECK(params("examples/llama.yaml", {{"tie_word_embeddings", "true"}}) == 6'738'415'616 - 32000LL * 4096);
  CHECK(params("examples/bert_base.yaml") == 109'482'240);
  CHECK(params("examples/bert_base.yaml", {{"hidden_size", "1024"}, {"num_hidden_layers", "24"}, {"num_attention_heads", "16"},
                                           {"intermediate_size", "4096"}}) == 335'141'888);
  CHECK(params("examples/vit_b16.yaml") == 86'567'656);
  CHECK(params("examples/vit_b16.yaml", {{"hidden_size", "1024"}, {"num_hidden_layers", "24"}, {"num_attention_heads", "16"},
                                         {"intermediate_size", "4096"}}) == 304'326'632);
}

TEST_CASE("a tied parameter and a shared module are one tensor: counted, graded and optimised once") {
  const std::string tied =
      "inputs: {ids: {shape: [4], dtype: int64}}\n"
      "loss: cross_entropy\n"
      "layers:\n"
      "  - {name: wte, type: Embedding, num_embeddings: 10, embedding_dim: 8}\n"
      "  - {name: fc, type: Linear, out_features: 8, bias: false}\n"
      "  - {name: fc_again, type: Linear, out_features: 8, bias: false, share: fc}\n"
      "  - {name: head, type: Linear, out_features: 10, bias: false, tie: {weight: wte.weight}}\n"
      "  - {name: logits, type: View, shape: [-1, 10], with_batch: true}\n";
  EstimateOptions options;
  options.graph.batch = 2;
  options.step.optimizer = OptimizerKind::Adam;
  const Estimate e = estimate_from(tied, options);
  CHECK(e.totals.params == 10 * 8 + 8 * 8);
  CHECK(e.totals.grad_bytes == (10 * 8 + 8 * 8) * 4);
  CHECK(e.totals.optimizer_state_bytes == 2 * (10 * 8 + 8 * 8) * 4);
  CHECK(e.layers.back().outputs.front().shape == Shape{8, 10});
  CHECK(error_from(tied + "  - {name: bad, type: Linear, input: wte, out_features: 9, tie: {weight: wte.weight}}\n") ==
        "test.yaml:9:74: error: Linear 'bad': its weight would be [9, 8], but wte.weight is [10, 8]");
  CHECK(error_from(tied + "  - {name: bad, type: Linear, input: wte, out_features: 8, tie: {gamma: wte.weight}}\n") ==
        "test.yaml:9:73: error: Linear 'bad': tie: it has no parameter 'gamma' (its parameters: weight, bias)");
  CHECK(error_from(tied + "  - {name: bad, type: ReLU, input: wte, share: fc}\n") ==
        "test.yaml:9:48: error: ReLU 'bad': shares the module of Linear 'fc', which has the parameters (weight); this "
        "layer would have (none)");
}

TEST_CASE("a split's parts are read as NAME:k; a part nobody reads is a located error") {
  const std::string spec =
      "inputs: {x: [8, 12]}\n"
      "layers:\n"
      "  - {name: fc, type: Linear, out_features: 12}\n"
      "  - {name: parts, type: Split, split_size_or_sections: 4, dim: 2}\n"
      "  - {name: prod, type: Mul, inputs: [parts, \"parts:2\"]}\n"
      "  - {name: out, type: Add, inputs: [prod, \"parts:1\"]}\n";
  CHECK(error_from(spec).empty());
  CHECK(error_from(spec + "  - {name: bad, type: ReLU, input: \"parts:3\"}\n") ==
        "test.yaml:7:36: error: ReLU 'bad': reads 'parts:3', but Split 'parts' has 3 outputs ('parts' to 'parts:2')");
}

TEST_CASE("T5 on the CPU: the relative position bias gets its gradient through the attention's mask") {
  // T5's position bias is an Embedding's output, the attn_mask of every block's
  // scaled_dot_product_attention: its gradient comes back through each (math's AddBackward0, on
  // the CPU with dropout), so the bias's weight gets one and the bucket table the lookup keeps
  // is let go in its backward (before, the CPU's node-by-node math gave the mask none: neither
  // happened, and the table outlived the step).
  EstimateOptions o;
  o.graph.device = Device::Cpu;
  o.step.timeline = true;
  const Estimate e = estimate_file("examples/t5.yaml", o);
  int grads = 0, freed = 0;
  for (const TimelineEvent& ev : e.timeline) {
    if (ev.phase != Phase::Backward) continue;
    const std::string_view t = e.timeline.tensor(ev);
    if (ev.delta > 0 && t == "grad of encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight") ++grads;
    if (ev.delta > 0 && t == "grad of decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight") ++grads;
    if (ev.delta < 0 && (t == "output of encoder.position_bucket" || t == "output of decoder.position_bucket")) ++freed;
  }
  CHECK(grads == 2);
  CHECK(freed == 2);
}
