// Layers that combine several inputs: Add (x + y + …, broadcasting, optionally in place as in
// `out += identity`), Mul (x * y, e.g. squeeze-and-excitation gates) and Concat (torch.cat).
// Backward: add and cat keep nothing (only sizes); mul keeps each operand the other's grad needs.
#include "common.hpp"

namespace nnmem::layers {
namespace {

// Whether an in-place op may store a result of type `from` in a tensor of type `to`
// (c10::canCast): not a float into an integer, nor anything but bool into bool.
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  return to != DType::Bool || from == DType::Bool;
}

std::string input_shapes(const LayerCall& call) {
  std::string s;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) s += (i ? ", " : "") + to_string(call.shape(i));
  return s;
}

// Broadcasting: align from the right; each pair of sizes must be equal or contain a 1.
TensorType broadcast(const LayerCall& call) {
  TensorType out = call.input(0);
  for (std::size_t i = 1; i < call.inputs.size(); ++i) {
    const Shape& s = call.shape(i);
    Shape merged(std::max(out.shape.size(), s.size()), 1);
    for (std::size_t k = 0; k < merged.size(); ++k) {
      const std::int64_t a = k < out.shape.size() ? out.shape[out.shape.size() - 1 - k] : 1;
      const std::int64_t b = k < s.size() ? s[s.size() - 1 - k] : 1;
      if (a != b && a != 1 && b != 1)
        throw LayerError("input shapes " + input_shapes(call) + " do not match (and cannot be broadcast): sizes " +
                         std::to_string(a) + " and " + std::to_string(b) + " meet in dimension " +
                         std::to_string(merged.size() - 1 - k));
      merged[merged.size() - 1 - k] = std::max(a, b);
    }
    out.shape = merged;
    out.dtype = promote(out.dtype, call.input(i).dtype);
  }
  return out;
}

LayerResult infer_add(const LayerCall& call) {
  LayerResult res;
  res.outputs.push_back(broadcast(call));
  // The output's gradient goes to every input as it is; a broadcast input's is summed down.
  res.grad_passthrough = true;
  res.broadcasts = true;
  if (call.attrs.flag("inplace")) {
    // `a += b` writes into a: the broadcast shape must be a's, and the promoted type is cast
    // back to a's dtype (float16 += float32 stays float16) when PyTorch allows the cast.
    const TensorType& first = call.input(0);
    if (res.outputs[0].shape != first.shape)
      throw LayerError("in place, the result " + to_string(res.outputs[0].shape) + " must have the first input's shape " +
                       to_string(first.shape), "inplace");
    if (!can_cast(res.outputs[0].dtype, first.dtype))
      throw LayerError("in place, the result's dtype " + std::string(dtype_name(res.outputs[0].dtype)) +
                       " cannot be stored in the first input's dtype " + std::string(dtype_name(first.dtype)) +
                       " (PyTorch casts no float into an integer, nor anything into bool)", "inplace");
    res.outputs[0].dtype = first.dtype;
    res.alias = Alias::InPlace;
  }
  return res;
}

LayerResult infer_mul(const LayerCall& call) {
  LayerResult res;
  res.outputs.push_back(broadcast(call));
  res.broadcasts = true;
  res.macs = res.outputs[0].numel();
  if (call.training()) {
    if (call.input_requires_grad(0)) res.save_input(1, "other operand");
    if (call.input_requires_grad(1)) res.save_input(0, "other operand");
  }
  return res;
}

LayerResult infer_concat(const LayerCall& call) {
  const Shape& first = call.shape(0);
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), first.size(), "dim");
  TensorType out = call.input(0);
  for (std::size_t i = 1; i < call.inputs.size(); ++i) {
    const Shape& s = call.shape(i);
    bool ok = s.size() == first.size();
    for (std::size_t d = 0; ok && d < s.size(); ++d) ok = d == dim || s[d] == first[d];
    if (!ok)
      throw LayerError("inputs must match in every dimension but dim " + std::to_string(dim) + ", found " +
                       input_shapes(call));
    out.shape[dim] = checked_add(out.shape[dim], s[dim]);
    out.dtype = promote(out.dtype, call.input(i).dtype);
  }
  LayerResult res;
  res.outputs.push_back(out);
  res.grad_passthrough = true;  // each input's gradient is a narrow() view of the output's
  return res;
}

const bool registered = [] {
  register_layer({.type = "Add",
                  .summary = "element-wise sum of its inputs (broadcasting), e.g. a residual connection",
                  .attrs = {AttrDef::flag("inplace", false, "add into the first input, as `out += identity`")},
                  .min_inputs = 2,
                  .max_inputs = -1,
                  .infer = infer_add});
  register_layer({.type = "Mul",
                  .summary = "element-wise product of two inputs (broadcasting), e.g. a gate",
                  .attrs = {},
                  .min_inputs = 2,
                  .max_inputs = 2,
                  .infer = infer_mul});
  register_layer({.type = "Concat",
                  .summary = "torch.cat of its inputs along dim",
                  .attrs = {AttrDef::integer("dim", "the dimension joined (batch is 0; channels are 1)").needed()},
                  .min_inputs = 1,  // torch.cat([x]) copies x
                  .max_inputs = -1,
                  .infer = infer_concat});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
