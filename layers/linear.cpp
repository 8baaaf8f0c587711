// Linear: y = x Wᵀ + b over the last dimension of an input of any rank.
// Backward (derivatives.yaml, `addmm`/`mm`): the grad of the weight needs the input, the grad
// of the input needs the weight; each is kept only when its gradient is needed — so a frozen
// Linear keeps no activation, and the weight (a parameter) costs nothing extra.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_linear(const LayerCall& call) {
  require_rank(call, 2, 64, "[N, *, in_features]");
  require_float(call);
  const Shape& in = call.shape();
  const std::int64_t features = in.back();
  check_declared(call, "in_features", features, "features in its last dimension");
  const std::int64_t out_features = call.attrs.integer("out_features");

  LayerResult res;
  Shape out = in;
  out.back() = out_features;
  res.outputs.push_back({out, call.input().dtype});
  res.params.push_back({"weight", {out_features, features}});
  if (call.attrs.flag("bias")) res.params.push_back({.name = "bias", .shape = {out_features}, .grad_summed = true});
  const std::int64_t rows = numel(in) / features;
  res.macs = checked_mul(checked_mul(rows, features), out_features);
  // A non-contiguous input of more than two dimensions (a batch_first RNN's output) is copied
  // into rows first (matmul's reshape): the copy is what the weight's gradient keeps (when
  // nothing keeps it, it is freed inside aten::linear, a workspace).
  if (call.inputs[0].strided && in.size() > 2) {
    if (call.training() && call.trainable) res.save_extra({in, call.input().dtype}, "contiguous copy of the input");
  } else if (call.training() && call.trainable) {
    res.save_input(0);
  }
  if (call.training() && call.input_requires_grad()) res.save_param(0, "weight.t()");
  return res;
}

const bool registered = register_layer({
    .type = "Linear",
    .summary = "fully connected layer over the last dimension",
    .attrs = {
        AttrDef::integer("in_features", "input features; inferred, checked when given").optional().at_least(1),
        AttrDef::integer("out_features", "output features").needed().at_least(1),
        AttrDef::flag("bias", true, "learnable bias"),
    },
    .autocast = Autocast::Lower,
    .infer = infer_linear,
});

}  // namespace
}  // namespace nnmem::layers
