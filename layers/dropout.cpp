// Dropout and Dropout1d/2d/3d (whole channels), AlphaDropout, and stochastic depth
// (torchvision's StochasticDepth, timm's DropPath). Identity in evaluation and when p = 0.
// What dropout keeps differs by device, because PyTorch's kernels differ (1.13 and 2.13):
//   CUDA, 0 < p < 1, not in place: the fused native_dropout keeps a bool mask (1 byte/element);
//   otherwise (CPU, or in place): the mask is a tensor of the input's dtype, kept by the multiply.
// The mask is kept only when the input needs a gradient. Channel dropout's mask is [N, C, 1…].
// p = 1 keeps no mask, only a 0-dim zero of the input's dtype.
// AlphaDropout is never fused: it keeps an input-shaped noise of the input's dtype (its shift
// `b` lives and dies inside aten::alpha_dropout). Stochastic depth multiplies by a noise of
// [N, 1, …] per sample (mode row) or [1, 1, …] (mode batch), which the multiply keeps.
#include "common.hpp"

namespace nnmem::layers {
namespace {

enum class Kind { Elements, Channels, Alpha };

LayerResult infer_dropout(const LayerCall& call, Kind kind, int channel_rank) {
  require_float(call);
  if (channel_rank > 0)
    require_rank(call, static_cast<std::size_t>(channel_rank) + 2, static_cast<std::size_t>(channel_rank) + 2,
                 "[N, C, ...]");
  const double p = call.attrs.real("p");
  // nn.AlphaDropout.forward calls F.alpha_dropout(input, p, training) without its inplace flag.
  const bool inplace = kind != Kind::Alpha && call.attrs.flag("inplace");
  LayerResult res;
  res.outputs.push_back(call.input());
  if (!call.training() || p == 0.0) {
    res.alias = Alias::View;  // F.dropout returns its input unchanged
    return res;
  }
  res.alias = inplace ? Alias::InPlace : Alias::None;
  if (!call.input_requires_grad()) return res;
  // _dropout_impl: `if (p == 1) return multiply<inplace>(input, at::zeros({}, input.options()))`,
  // before any noise is drawn (and never fused: p < 1 is a condition of the fused kernel). The
  // multiply keeps only that 0-dim zero, whatever the input's shape or device.
  if (p == 1.0) {
    res.save_extra({{}, call.input().dtype}, "zero scalar", Saved::Made::Operand);
    return res;
  }
  Shape mask = call.shape();
  if (channel_rank > 0)
    for (std::size_t d = 2; d < mask.size(); ++d) mask[d] = 1;
  const bool fused = call.ctx.device == Device::Cuda && !inplace && kind == Kind::Elements;
  // The fused kernel returns its mask; otherwise _dropout_impl draws it and multiplies by it.
  res.save_extra({mask, fused ? DType::Bool : call.input().dtype}, kind == Kind::Alpha ? "noise" : "mask",
                 fused ? Saved::Made::Result : Saved::Made::Operand);
  return res;
}

LayerDef dropout_def(Kind kind, int channel_rank) {
  const std::string type = kind == Kind::Alpha ? "AlphaDropout"
                           : channel_rank == 0 ? "Dropout"
                                               : "Dropout" + std::to_string(channel_rank) + "d";
  return LayerDef{
      .type = type,
      .summary = kind == Kind::Alpha ? "SELU's dropout: keeps mean and variance, while training"
                 : channel_rank == 0 ? "zeroes elements with probability p while training"
                                     : "zeroes whole channels with probability p while training",
      .attrs = {
          AttrDef::real("p", "probability of an element being zeroed").or_else_real(0.5).between(0, 1),
          AttrDef::flag("inplace", false, kind == Kind::Alpha ? "accepted, and ignored as nn.AlphaDropout ignores it"
                                                              : "overwrite the input instead of allocating"),
      },
      .infer = [kind, channel_rank](const LayerCall& call) { return infer_dropout(call, kind, channel_rank); },
  };
}

// torchvision.ops.stochastic_depth and timm's drop_path: `noise = empty(size).bernoulli_(1 - p)`,
// divided by 1 - p (unless p = 1, or timm's scale_by_keep is off), then `input * noise`. The
// multiply keeps the noise (when the input needs a gradient), never the input.
LayerResult infer_stochastic_depth(const LayerCall& call, double p, bool per_sample) {
  require_float(call);
  LayerResult res;
  res.outputs.push_back(call.input());
  if (!call.training() || p == 0.0) {
    res.alias = Alias::View;  // `return input`
    return res;
  }
  Shape noise(call.shape().size(), 1);
  if (per_sample) noise[0] = call.shape()[0];
  res.macs = call.input().numel();
  // torchvision's stochastic_depth draws the noise with ops of its own, then multiplies.
  if (call.input_requires_grad()) res.save_extra({noise, call.input().dtype}, "noise", Saved::Made::Separate);
  return res;
}

const bool registered = [] {
  register_layer(dropout_def(Kind::Elements, 0));
  for (int rank = 1; rank <= 3; ++rank) register_layer(dropout_def(Kind::Channels, rank));
  register_layer(dropout_def(Kind::Alpha, 0));
  register_layer({
      .type = "StochasticDepth",
      .summary = "torchvision's stochastic depth: drops a whole sample (row) or the whole batch with probability p",
      .attrs = {AttrDef::real("p", "probability of dropping").needed().between(0, 1),
                AttrDef::word("mode", {"row", "batch"}, "row: per sample; batch: the whole batch at once").needed()},
      .infer = [](const LayerCall& call) {
        return infer_stochastic_depth(call, call.attrs.real("p"), call.attrs.is("mode", "row"));
      },
  });
  register_layer({
      .type = "DropPath",
      .summary = "timm's drop path (stochastic depth per sample)",
      .attrs = {AttrDef::real("drop_prob", "probability of dropping a sample").or_else_real(0.0).between(0, 1),
                AttrDef::flag("scale_by_keep", true, "divide the kept samples by 1 - drop_prob")},
      .infer = [](const LayerCall& call) { return infer_stochastic_depth(call, call.attrs.real("drop_prob"), true); },
  });
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
