// MatMul: torch.matmul of two activations, [..., n, k] @ [..., k, m] -> [..., n, m], the leading
// dimensions broadcast (attention's q @ k^T and weights @ v). Backward (derivatives.yaml, as
// bmm after matmul folds the leading dimensions; saved_tensors_hooks on 2.13): each operand's
// gradient needs the other, so each is kept when the other needs a gradient.
// What is kept is the operand as mm or bmm reads it (torch 2.13 and 1.13 alike,
// validation/ops_saved_transformers.md, probe_transformer_ops.py matmul_*): 2-D @ 2-D and 3-D @ 3-D read the operands as they are, strides
// and all; otherwise matmul folds the leading dimensions with reshape, which copies an operand whose
// leading dimensions do not merge — a transposed view of a [B, L, H, D] projection (HF's eager
// attention's q, k and v), any other non-contiguous view, or one broadcast over some leading
// dimensions but not all — and, with the other operand 2-D, a first operand of 3 or more
// dimensions that is not contiguous (a second one folds through its .mT(); that path's output
// copy, a CloneBackward0, is not modelled). The copy ([leading..., n, k], contiguous) is what bmm
// keeps; when nothing keeps it, it lives for the call. A contiguous tensor with its last two
// dimensions swapped (k.transpose(-2, -1)) folds without a copy.
#include "common.hpp"

namespace nnmem::layers {
namespace {

// Whether matmul copies operand i (of rank >= 3) to fold its leading dimensions, given the output's.
bool folds_by_copy(const LayerCall& call, std::size_t i, const Shape& out) {
  const Shape& x = call.shape(i);
  const Shape& other = call.shape(1 - i);
  if (x.size() < 3 || (x.size() == 3 && other.size() == 3)) return false;
  const Layout layout = call.inputs[i].layout;
  // Folded into one matrix: the first operand's rows (it must be contiguous), or the second's
  // columns (its .mT() must be: contiguous or with its last two swapped will do).
  if (other.size() <= 2) return layout != Layout::Contiguous && (i == 0 || layout != Layout::TransposedLast);
  if (layout == Layout::Strided || (layout == Layout::Swapped12 && x.size() >= 4)) return true;
  bool expanded = false, real = false;  // leading dimensions that broadcast, and ones that do not
  const std::size_t lead = out.size() - 2;
  for (std::size_t k = 0; k < lead; ++k) {
    const std::int64_t have = k + x.size() >= lead + 2 ? x[k + x.size() - lead - 2] : 1;
    if (have == 1 && out[k] > 1) expanded = true;
    if (have > 1) real = true;
  }
  return expanded && real;
}

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
  const char* names[] = {"first operand", "second operand"};
  for (std::size_t i = 0; i < 2; ++i) {
    const bool kept = call.training() && call.input_requires_grad(1 - i);
    if (!folds_by_copy(call, i, out)) {
      if (kept) res.save_input(static_cast<int>(i), names[i]);
      continue;
    }
    const Shape& x = call.shape(i);
    Shape copy(out.begin(), out.end() - 2);  // the operand expanded to the output's leading dimensions
    copy.insert(copy.end(), x.end() - 2, x.end());
    const TensorType folded{copy, call.input(i).dtype};
    const std::string what = std::string(names[i]) + " (folded by a copy)";
    if (kept) res.save_extra(folded, what, Saved::Made::Operand);
    else res.forward_scratch.push_back({folded, what});
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
