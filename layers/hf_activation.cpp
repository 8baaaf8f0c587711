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

const bool registered = register_layer({
    .type = "NewGELU",
    .summary = "transformers' gelu_new, written out in Python: keeps three input-sized tensors",
    .attrs = {},
    .infer = infer_new_gelu,
});

}  // namespace
}  // namespace nnmem::layers
