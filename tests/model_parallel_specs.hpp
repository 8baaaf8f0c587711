// The specs and helpers of the tensor-, sequence- and pipeline-parallel tests
// (test_model_parallel.cpp, test_sequence_parallel.cpp): a GPT layer as Korthikanti et al.
// count it, a small LLaMA, and a rank's estimate under given parallel options.
#pragma once

#include <string>
#include <vector>

#include "helpers.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem::test {

// A GPT layer as Korthikanti et al. count it: LayerNorm, fused QKV, attention with its softmax
// kept (kernel math) and dropout, output projection, dropout, LayerNorm, 4h GELU MLP, dropout;
// float16. s = 128, b = 1, h = 256, a = 8.
inline constexpr const char* kGpt = R"(
name: gpt_block
dtype: float16
variables: {h: 256, a: 8, s: 128, layers: 2, p: 0.1}
inputs:
  x: {shape: [$s, $h], dtype: float16}
blocks:
  Block:
    layers:
      - {name: ln_1, type: LayerNorm, normalized_shape: $h}
      - {name: qkv, type: Linear, out_features: $3 * $h}
      - {name: split, type: Split, split_size_or_sections: $h, dim: 2, functional: true}
      - {name: q, type: View, input: split, shape: [-1, $a, $h / $a], functional: true}
      - {name: q_t, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: k, type: View, input: "split:1", shape: [-1, $a, $h / $a], functional: true}
      - {name: k_t, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: v, type: View, input: "split:2", shape: [-1, $a, $h / $a], functional: true}
      - {name: v_t, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: core, type: ScaledDotProductAttention, inputs: [q_t, k_t, v_t], dropout_p: $p, kernel: math, functional: true}
      - {name: merge, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: contiguous, type: Contiguous, functional: true}
      - {name: reshape, type: View, shape: [-1, $h], functional: true}
      - {name: proj, type: Linear, out_features: $h}
      - {name: drop_1, type: Dropout, p: $p}
      - {name: add_1, type: Add, inputs: [drop_1, in], functional: true}
      - {name: ln_2, type: LayerNorm, normalized_shape: $h}
      - {name: fc1, type: Linear, out_features: $4 * $h}
      - {name: gelu, type: GELU}
      - {name: fc2, type: Linear, out_features: $h}
      - {name: drop_2, type: Dropout, p: $p}
      - {name: add_2, type: Add, inputs: [drop_2, add_1], functional: true}
layers:
  - {name: layers, block: Block, inputs: [x], repeat: $layers}
)";

inline ModelSpec gpt(std::int64_t layers) {
  LoadOptions o;
  o.overrides = {{"layers", std::to_string(layers)}};
  return parse_spec(kGpt, "gpt.yaml", o);
}

inline ModelParallelOptions mp_of(std::int64_t t, std::int64_t p, PipelineSchedule schedule = PipelineSchedule::OneFOneB, std::int64_t v = 1,
                           std::vector<std::int64_t> stages = {}) {
  ModelParallelOptions m;
  m.tp = t;
  m.pp = p;
  m.schedule = schedule;
  m.virtual_stages = v;
  m.stages = std::move(stages);
  return m;
}

inline MegatronSetup megatron(std::int64_t t, std::int64_t p) {
  MegatronSetup s;
  s.seq = 32;
  s.tp = t;
  s.pp = p;
  return s;
}

inline ModelParallelEstimate run(const ModelSpec& spec, ModelParallelOptions mp, std::int64_t micro_batches = 1,
                          CheckpointSegments checkpoint = CheckpointSegments::None) {
  EstimateOptions o;
  o.graph.torch = find_torch_profile("2.13");
  o.step.grad_accum = micro_batches;
  o.step.checkpoint.segments = checkpoint;
  return estimate_model_parallel(spec, o, mp);
}

inline ModelParallelOptions tp(std::int64_t t, bool sequence_parallel = false) {
  ModelParallelOptions m = mp_of(t, 1);
  m.sequence_parallel = sequence_parallel;
  return m;
}

// One layer's activations on a rank: what a micro-batch's forward holds with two layers, less with one.
inline std::int64_t layer_bytes(std::int64_t t, CheckpointSegments checkpoint, bool sequence_parallel = false) {
  return run(gpt(2), tp(t, sequence_parallel), 1, checkpoint).stages[0].held_bytes -
         run(gpt(1), tp(t, sequence_parallel), 1, checkpoint).stages[0].held_bytes;
}

inline std::string error_of(const ModelSpec& spec, const ModelParallelOptions& mp) {
  try {
    run(spec, mp);
  } catch (const Error& e) {
    return e.format();
  }
  return "";
}

inline ModelSpec llama(std::int64_t layers) {
  LoadOptions o;
  o.overrides = {{"hidden_size", "64"}, {"intermediate_size", "160"}, {"num_hidden_layers", std::to_string(layers)},
                 {"num_attention_heads", "4"}, {"num_key_value_heads", "4"}, {"vocab_size", "256"}, {"seq_len", "32"}};
  return load_spec_file(source_path("examples/llama.yaml"), o);
}

}  // namespace nnmem::test
