// Activations that transformers writes out in Python rather than calling PyTorch's kernel, so
// that autograd keeps every intermediate its formula multiplies (torch 2.13, saved_tensors_hooks):
//   NewGELU (GPT-2's "gelu_new"): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//     keeps x (for pow), tanh's output, 0.5 * x and 1 + tanh(...): the input and three
//     input-sized tensors; and, on the CPU, the three Python numbers it multiplies by (0.5,
//     0.044715, sqrt(2/pi)), each a wrapped 8-byte float64 tensor MulBackward0 keeps, which
//     2.13's saved_tensors_hooks do not see (measured: +8 before each of those muls, -8 as
//     each MulBackward0 runs; validation/ops_saved.md). Without a gradient the intermediates
//     are let go as the expression goes: at most three input-sized tensors at once (0.5 * x,
//     x^3 and 0.044715 * x^3, with the wrapped 0.044715), the last of them the output.
//   Float16Clamp (T5's "clamp inf values to enable fp16 training", after each of a block's
//     layers): only when x is float16, clamp_value = torch.where(torch.isinf(x).any(),
//     finfo.max - 1000, finfo.max), a 0-dim float32 tensor, and torch.clamp(x, min=-clamp_value,
//     max=clamp_value): ClampBackward0 keeps x and both bounds (4 bytes each); isinf's bool mask
//     and any()'s result are let go before the clamp runs. Its backward, where((x >= min)
//     .logical_and_(x <= max), grad, zero), holds a bool mask and a 0-dim zero beside the
//     input's gradient. In any other dtype the model skips it: x itself.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_new_gelu(const LayerCall& call) {
  require_float(call);
  LayerResult res;
  res.outputs.push_back(call.input());
  if (call.training() && call.input_requires_grad()) {
    res.save_input(0, "input (pow)");
    res.save_extra(call.input(), "tanh(...)");
    res.save_extra(call.input(), "0.5 * x");
    res.save_extra(call.input(), "1 + tanh(...)");
    for (const char* number : {"the wrapped 0.5", "the wrapped 0.044715", "the wrapped sqrt(2/pi)"})
      res.save_wrapped_number(call.ctx, number);
  } else {
    res.forward_scratch.push_back({call.input(), "0.5 * x"});
    res.forward_scratch.push_back({call.input(), "x^3"});
    if (call.ctx.device == Device::Cpu) res.forward_scratch.push_back({{{}, DType::Float64}, "the wrapped 0.044715"});
  }
  return res;
}

LayerResult infer_float16_clamp(const LayerCall& call) {
  require_float(call);
  LayerResult res;
  res.outputs.push_back(call.input());
  if (call.input().dtype != DType::Float16) {
    res.alias = Alias::View;
    res.grad_passthrough = true;
    return res;
  }
  const TensorType mask{call.shape(), DType::Bool};
  const TensorType bound{{}, DType::Float32};
  res.forward_scratch.push_back({mask, "isinf(x)"});
  res.forward_scratch.push_back({{{}, DType::Bool}, "isinf(x).any()"});
  res.scratch_before_output = true;
  if (call.training() && call.input_requires_grad()) {
    res.save_input(0);
    res.save_extra(bound, "clamp_value (max)", Saved::Made::Separate);
    res.save_extra(bound, "-clamp_value (min)", Saved::Made::Separate);
    res.backward_scratch.push_back({mask, "(x >= min) & (x <= max)"});
    res.backward_scratch.push_back({{{}, DType::Float16}, "zero"});
  } else {
    res.forward_scratch.push_back({bound, "clamp_value"});
    res.forward_scratch.push_back({bound, "-clamp_value"});
  }
  return res;
}

const bool registered = [] {
  register_layer({
      .type = "NewGELU",
      .summary = "transformers' gelu_new, written out in Python: keeps three input-sized tensors",
      .attrs = {},
      .infer = infer_new_gelu,
  });
  register_layer({
      .type = "Float16Clamp",
      .summary = "T5's clamp of a float16 x to the dtype's finite range (keeps x); x itself in another dtype",
      .attrs = {},
      .infer = infer_float16_clamp,
  });
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
