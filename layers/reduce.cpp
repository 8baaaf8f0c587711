// Reductions over dimensions (never the batch's): Mean, Sum, Amax, with `keepdim`; and the
// element-wise Scale (x * by, or x / by, by a constant), Neg (-x) and MaskedFill (x.masked_fill(mask,
// value), the mask a bool input). What 2.13 keeps (validation/probe_transformer_ops.py): sum,
// mean (1.13's its input: TorchProfile::mean_keeps_input) and negation nothing, scaling its wrapped number (below); amax its input and output; masked_fill the mask. Gradients: a sum's
// is the output's expanded (a view); a mean's, amax's, scaling's and masked_fill's are new.
#include <algorithm>

#include "common.hpp"

namespace nnmem::layers {
namespace {

enum class Reduce { Mean, Sum, Amax };

LayerResult infer_reduction(const LayerCall& call, Reduce kind) {
  require_float(call);
  const Shape& in = call.shape();
  const auto dims = call.attrs.list("dim");
  std::vector<bool> reduced(in.size());
  for (std::int64_t d : dims) {
    const std::size_t k = normalize_dim(d, in.size(), "dim");
    if (k == 0) throw LayerError("dim 0 is the batch; nnmem keeps every sample", "dim");
    if (reduced[k]) throw LayerError("dim names dimension " + std::to_string(k) + " twice: " + to_string(dims), "dim");
    reduced[k] = true;
  }
  const bool keepdim = call.attrs.flag("keepdim");
  Shape out;
  for (std::size_t k = 0; k < in.size(); ++k)
    if (!reduced[k]) out.push_back(in[k]);
    else if (keepdim) out.push_back(1);
  LayerResult res;
  res.outputs.push_back({out, call.input().dtype});
  res.grad_passthrough = kind == Reduce::Sum;
  if (kind == Reduce::Amax && call.training() && call.input_requires_grad()) {
    res.save_input(0);
    res.save_output(0);
  }
  if (kind == Reduce::Mean && call.ctx.torch->mean_keeps_input && call.training() && call.input_requires_grad()) res.save_input(0);
  return res;
}

LayerResult infer_scale(const LayerCall& call) {
  require_float(call);
  LayerResult res;
  res.outputs.push_back(call.input());
  res.alias = call.attrs.flag("inplace") ? Alias::InPlace : Alias::None;
  // `by` is a Python number, which mul/div take as a wrapped number, a 0-dim double; their
  // backward keeps it (MulBackward0 and DivBackward0's _saved_other, torch 1.13 and 2.13). It
  // is a CPU tensor: device memory only on the CPU.
  if (call.training() && call.input_requires_grad()) res.save_wrapped_number(call.ctx, "the scalar");
  return res;
}

// -x: NegBackward0 keeps nothing (unlike x * -1, whose -1 is a kept wrapped number; Hugging
// Face's rotate_half negates).
LayerResult infer_neg(const LayerCall& call) {
  require_float(call);
  LayerResult res;
  res.outputs.push_back(call.input());
  return res;
}

LayerResult infer_masked_fill(const LayerCall& call) {
  require_float(call);
  const TensorType& mask = call.input(1);
  if (mask.dtype != DType::Bool)
    throw LayerError("the mask (input 1) must be bool, found " + std::string(dtype_name(mask.dtype)));
  const Shape& in = call.shape();
  bool ok = mask.shape.size() <= in.size();
  for (std::size_t k = 0; ok && k < mask.shape.size(); ++k) {
    const std::int64_t m = mask.shape[mask.shape.size() - 1 - k];
    ok = m == 1 || m == in[in.size() - 1 - k];
  }
  if (!ok) throw LayerError("the mask " + to_string(mask.shape) + " does not broadcast to the input " + to_string(in));
  LayerResult res;
  res.outputs.push_back(call.input());
  res.alias = call.attrs.flag("inplace") ? Alias::InPlace : Alias::None;
  if (call.training() && call.input_requires_grad()) res.save_input(1, "mask");
  return res;
}

LayerDef reduction(const char* type, const char* summary, Reduce kind) {
  return LayerDef{.type = type,
                  .summary = summary,
                  .attrs = {AttrDef::list("dim", "the dimensions reduced (an int n is [n]; batch is 0)").needed().or_int(),
                            AttrDef::flag("keepdim", false, "keep them as size 1")},
                  .infer = [kind](const LayerCall& call) { return infer_reduction(call, kind); }};
}

const bool registered = [] {
  register_layer(reduction("Mean", "x.mean(dim, keepdim)", Reduce::Mean));
  register_layer(reduction("Sum", "x.sum(dim, keepdim)", Reduce::Sum));
  register_layer(reduction("Amax", "x.amax(dim, keepdim)", Reduce::Amax));
  register_layer({.type = "Scale",
                  .summary = "x * by, or x / by with divide: true (a constant)",
                  .attrs = {AttrDef::real("by", "the constant").needed(),
                            AttrDef::flag("divide", false, "x / by rather than x * by"),
                            AttrDef::flag("inplace", false, "x *= by")},
                  .infer = infer_scale});
  register_layer({.type = "Neg", .summary = "-x (torch.neg): keeps nothing for backward", .attrs = {}, .infer = infer_neg});
  register_layer({.type = "MaskedFill",
                  .summary = "x.masked_fill(mask, value): inputs x and a bool mask that broadcasts to it",
                  .attrs = {AttrDef::real("value", "written where the mask is true").needed(),
                            AttrDef::flag("inplace", false, "x.masked_fill_(mask, value)")},
                  .min_inputs = 2,
                  .max_inputs = 2,
                  .infer = infer_masked_fill});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
