// Dropout and Dropout1d/2d/3d (whole channels). Identity in evaluation and when p = 0.
// What it keeps differs by device, because PyTorch's kernels differ (torch 1.13):
//   CUDA, 0 < p < 1, not in place: the fused native_dropout keeps a bool mask (1 byte/element);
//   otherwise (CPU, or in place): the mask is a tensor of the input's dtype, kept by the multiply.
// The mask is kept only when the input needs a gradient. Channel dropout's mask is [N, C, 1…].
// p = 1 keeps no mask, only a 0-dim zero of the input's dtype.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_dropout(const LayerCall& call, int channel_rank) {
  require_float(call);
  if (channel_rank > 0)
    require_rank(call, static_cast<std::size_t>(channel_rank) + 2, static_cast<std::size_t>(channel_rank) + 2,
                 "[N, C, ...]");
  const double p = call.attrs.real("p");
  const bool inplace = call.attrs.flag("inplace");
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
  const bool fused = call.ctx.device == Device::Cuda && !inplace && channel_rank == 0;
  // The fused kernel returns its mask; otherwise _dropout_impl draws it and multiplies by it.
  res.save_extra({mask, fused ? DType::Bool : call.input().dtype}, "mask", fused ? Saved::Made::Result : Saved::Made::Operand);
  return res;
}

LayerDef dropout_def(int channel_rank) {
  const std::string type = channel_rank == 0 ? "Dropout" : "Dropout" + std::to_string(channel_rank) + "d";
  return LayerDef{
      .type = type,
      .summary = channel_rank == 0 ? "zeroes elements with probability p while training"
                                   : "zeroes whole channels with probability p while training",
      .attrs = {
          AttrDef::real("p", "probability of an element being zeroed").or_else_real(0.5).between(0, 1),
          AttrDef::flag("inplace", false, "overwrite the input instead of allocating"),
      },
      .infer = [channel_rank](const LayerCall& call) { return infer_dropout(call, channel_rank); },
  };
}

const bool registered = register_layer(dropout_def(0)) && register_layer(dropout_def(1)) &&
                        register_layer(dropout_def(2)) && register_layer(dropout_def(3));

}  // namespace
}  // namespace nnmem::layers
