// MatMul: torch.matmul of two activations, [..., n, k] @ [..., k, m] -> [..., n, m], the leading
// dimensions broadcast (attention's q @ k^T and weights @ v). Backward (derivatives.yaml, as
// bmm after matmul folds the leading dimensions; saved_tensors_hooks on 2.13): each operand's
// gradient needs the other, so each is kept when the other needs a gradient.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_matmul(const LayerCall& call) {
  for (std::size_t i = 0; i < 2; ++i) {
    require_float(call, i);
    if (call.shape(i).size() < 2)
      throw LayerError("expected operands of at least 2 dimensions [..., n, k] and [..., k, m], found " +
                       to_string(call.shape(0)) + " and " + to_string(call.shape(1)));
  }
  const Shape& a = call.shape(0);
  const Shape& b = call.shape(1);
  if (a.back() != b[b.size() - 2])
    throw LayerError("the first operand " + to_string(a) + " has " + with_commas(a.back()) +
                     " columns, but the second " + to_string(b) + " has " + with_commas(b[b.size() - 2]) + " rows");
  if (call.input(0).dtype != call.input(1).dtype)
    throw LayerError("the operands' dtypes differ: " + std::string(dtype_name(call.input(0).dtype)) + " and " +
                     std::string(dtype_name(call.input(1).dtype)));
  const std::size_t lead = std::max(a.size(), b.size()) - 2;
  Shape out(lead);
  for (std::size_t k = 0; k < lead; ++k) {
    const std::int64_t x = k + a.size() >= lead + 2 ? a[k + a.size() - lead - 2] : 1;
    const std::int64_t y = k + b.size() >= lead + 2 ? b[k + b.size() - lead - 2] : 1;
    if (x != y && x != 1 && y != 1)
      throw LayerError("the operands' leading dimensions " + to_string(a) + " and " + to_string(b) +
                       " do not broadcast: " + std::to_string(x) + " and " + std::to_string(y) + " meet in dimension " +
                       std::to_string(k));
    out[k] = std::max(x, y);
  }
  out.push_back(a[a.size() - 2]);
  out.push_back(b.back());
  LayerResult res;
  res.outputs.push_back({out, call.input(0).dtype});
  res.macs = checked_mul(numel(out), a.back());
  if (call.training()) {
    if (call.input_requires_grad(1)) res.save_input(0, "first operand");
    if (call.input_requires_grad(0)) res.save_input(1, "second operand");
  }
  return res;
}

const bool registered = register_layer({
    .type = "MatMul",
    .summary = "torch.matmul of two inputs: [..., n, k] @ [..., k, m], leading dimensions broadcast",
    .attrs = {},
    .min_inputs = 2,
    .max_inputs = 2,
    .autocast = Autocast::Lower,
    .infer = infer_matmul,
});

}  // namespace
}  // namespace nnmem::layers
