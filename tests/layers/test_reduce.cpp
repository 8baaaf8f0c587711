// Mean, Sum, Amax, Scale, MaskedFill (layers/reduce.cpp) and NewGELU, Float16Clamp (layers/hf_activation.cpp);
// torch 2.13.0+cpu, saved_tensors_hooks.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("reductions: shapes, keepdim, what they keep") {
  const auto mean = run_rule("{type: Mean, dim: -1, keepdim: true}", {tensor({2, 8, 64})});
  CHECK(out_shape(mean) == "[2, 8, 1]");
  CHECK(saved_of(mean).empty());
  const auto sum = run_rule("{type: Sum, dim: 1}", {tensor({2, 8, 64})});
  CHECK(out_shape(sum) == "[2, 64]");
  CHECK(sum.grad_passthrough);  // its gradient is the output's, expanded
  CHECK(saved_of(run_rule("{type: Amax, dim: [-1]}", {tensor({2, 8, 64})})) == "input0 output0");
  CHECK(rule_error("{type: Mean, dim: [1, 1]}", {tensor({2, 8, 64})}) == "dim names dimension 1 twice: [1, 1]");
  CHECK(rule_error("{type: Sum, dim: 0}", {tensor({2, 8, 64})}) == "dim 0 is the batch; nnmem keeps every sample");
}

TEST_CASE("Scale, Neg, MaskedFill, NewGELU") {
  // x * 0.125 keeps 0.125, a wrapped number: a 0-dim double on the CPU, nothing on the device
  const auto scale = run_rule("{type: Scale, by: 0.125}", {tensor({2, 8, 64})});
  CHECK(saved_of(scale) == "extra[]:float64");
  CHECK(scale.saved.at(0).wrapped_number);
  CHECK(saved_of(run_rule("{type: Scale, by: 0.125}", {tensor({2, 8, 64})}, kCuda)).empty());
  CHECK(saved_of(run_rule("{type: Scale, by: 8, divide: true}", {tensor({2, 8, 64})}, kEval)).empty());
  // -x keeps nothing, where x * -1 keeps its -1 (HF LLaMA's rotate_half: 32 bytes of its peak)
  const auto neg = run_rule("{type: Neg}", {tensor({2, 8, 64})});
  CHECK(saved_of(neg).empty());
  CHECK(neg.outputs.at(0).shape == Shape{2, 8, 64});
  CHECK(rule_error("{type: Neg}", {tensor({2, 8}, false, DType::Int64)}).find("int64") != std::string::npos);
  const auto fill = run_rule("{type: MaskedFill, value: -1e9}", {tensor({2, 4, 8, 8}), tensor({1, 1, 8, 8}, false, DType::Bool)});
  CHECK(saved_of(fill) == "input1");
  CHECK(rule_error("{type: MaskedFill, value: 0}", {tensor({2, 4, 8, 8}), tensor({8, 8}, false)}) ==
        "the mask (input 1) must be bool, found float32");
  CHECK(rule_error("{type: MaskedFill, value: 0}", {tensor({2, 4, 8, 8}), tensor({7, 8}, false, DType::Bool)}) ==
        "the mask [7, 8] does not broadcast to the input [2, 4, 8, 8]");
  // On the CPU it keeps the three Python numbers it multiplies by too, each a wrapped float64 tensor
  // (measured: GPT-2's step peak was 48 bytes short without them, 3 per layer); on a GPU they are
  // host memory. Without a gradient it keeps nothing, and holds two more input-sized tensors as it goes.
  CHECK(saved_of(run_rule("{type: NewGELU}", {tensor({2, 8, 64})}, kCpu)) ==
        "input0 extra[2, 8, 64]:float32 extra[2, 8, 64]:float32 extra[2, 8, 64]:float32 extra[]:float64 extra[]:float64 "
        "extra[]:float64");
  CHECK(saved_of(run_rule("{type: NewGELU}", {tensor({2, 8, 64})}, kCuda)) ==
        "input0 extra[2, 8, 64]:float32 extra[2, 8, 64]:float32 extra[2, 8, 64]:float32");
  const auto frozen = run_rule("{type: NewGELU}", {tensor({2, 8, 64}, false)}, kCpu);
  CHECK(saved_of(frozen).empty());
  CHECK(frozen.forward_scratch.size() == 3);
}

// T5's clamp in float16 (hf_t5_sdpa as a float16 model, torch 2.13: ClampBackward0 keeps x and the
// two 0-dim float32 bounds, 8,200 bytes per clamp of [2, 32, 64]); in any other dtype x itself.
TEST_CASE("Float16Clamp: keeps x and its bounds in float16 only") {
  const Context f16{Mode::Train, Device::Cpu, DType::Float16, std::nullopt};
  const auto half = run_rule("{type: Float16Clamp}", {tensor({2, 8, 64}, true, DType::Float16)}, f16);
  CHECK(saved_of(half) == "input0 extra[]:float32 extra[]:float32");
  CHECK(half.alias == Alias::None);
  CHECK(half.forward_scratch.size() == 2);  // isinf's bool mask and any()'s result, before the clamp
  CHECK(half.backward_scratch.size() == 2);
  const auto other = run_rule("{type: Float16Clamp}", {tensor({2, 8, 64})});
  CHECK(saved_of(other).empty());
  CHECK(other.alias == Alias::View);
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  CHECK(run_rule("{type: Float16Clamp}", {tensor({2, 8, 64}, true, DType::BFloat16)}, bf16).alias == Alias::View);
}
