// Activations that transformers writes out in Python rather than calling PyTorch's kernel, so
// that autograd keeps every intermediate its formula multiplies (torch 2.13, saved_tensors_hooks):
//   NewGELU (GPT-2's "gelu_new"): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//     keeps x (for pow), tanh's output, 0.5 * x and 1 + tanh(...): the input and three
//     input-sized tensors.
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
