// Padding layers: ZeroPad1d/2d/3d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d,
// ReplicationPad1d/2d/3d and CircularPad1d/2d/3d. `padding` is PyTorch's: one value for every
// side, or (left, right[, top, bottom[, front, back]]), the last dimension first; a negative
// value crops. Measured on 1.13 and 2.13 (validation/ops_saved_zoo.md):
//   constant (zero) padding keeps nothing (constant_pad_nd's backward slices the gradient);
//   reflection and replication padding keep their input (reflection_padNd_backward(grad, self));
//   circular padding (2.x: a copy into slices of an empty output, CopySlices in backward) keeps
//   nothing, but its backward holds a clone of the output's gradient beside the input's.
// nn.ZeroPad1d/3d and nn.CircularPad* do not exist in 1.13, whose reflection and replication
// kernels take fewer dtypes. CPU autocast runs reflection_pad1d/2d and replication_pad1d/2d/3d in
// float32 (their output is float32 under bfloat16 autocast).
#include <algorithm>

#include "common.hpp"

namespace nnmem::layers {
namespace {

enum class Fill { Zero, Constant, Reflection, Replication, Circular };

constexpr const char* kNames[] = {"ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad"};

std::string pair(std::int64_t a, std::int64_t b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; }

// The dtypes reflection_padNd and replication_padNd take (constant and circular padding take any).
void check_pad_dtype(const LayerCall& call, Fill fill, int rank) {
  const DType dtype = call.input().dtype;
  const std::string op = std::string(fill == Fill::Reflection ? "reflection" : "replication") + "_pad" +
                         std::to_string(rank) + "d";
  if (dtype == DType::Bool) throw LayerError(op + " does not take bool");
  if (!call.ctx.torch->pad_kernels_float_only) return;
  const bool cpu_half = call.ctx.device == Device::Cpu && dtype_size(dtype) == 2 && !(fill == Fill::Reflection && rank == 3);
  if (!is_floating(dtype) || cpu_half)
    throw LayerError("PyTorch " + std::string(call.ctx.torch->version) + "'s " + op + (cpu_half ? " on the CPU" : "") +
                     " is not implemented for " + std::string(dtype_name(dtype)));
}

LayerResult infer_pad(const LayerCall& call, Fill fill, int rank) {
  if (fill == Fill::Reflection || fill == Fill::Replication) check_pad_dtype(call, fill, rank);
  const auto r = static_cast<std::size_t>(rank);
  const bool constant = fill == Fill::Zero || fill == Fill::Constant;
  // F.pad's constant mode pads the last dimensions of any tensor; the other modes take one
  // sample or a batch of them, [C, *] or [N, C, *].
  const std::string dims = rank == 1 ? "L" : rank == 2 ? "H, W" : "D, H, W";
  require_rank(call, r + 1, constant ? 64 : r + 2, constant ? "[*, " + dims + "]" : "[C, " + dims + "] or [N, C, " + dims + "]");
  const Shape pad = call.attrs.tuple("padding");
  Shape out = call.shape();
  for (std::size_t k = 0; k < r; ++k) {
    const std::size_t d = out.size() - 1 - k;  // the pairs run from the last dimension backwards
    const std::int64_t len = out[d], before = pad[2 * k], after = pad[2 * k + 1];
    const std::string where = "the input " + dim_name(r - 1 - k, r) + " " + std::to_string(len) + " of " +
                              to_string(call.shape());
    if (fill == Fill::Reflection && std::max(before, after) >= len)
      throw LayerError("reflection padding " + pair(before, after) + " must be smaller than " + where, "padding");
    if (fill == Fill::Circular && std::max(before, after) > len)
      throw LayerError("circular padding " + pair(before, after) + " must be at most " + where +
                       " (it would wrap around more than once)", "padding");
    out[d] = checked_add(len, checked_add(before, after));
    if (out[d] < 1)
      throw LayerError("padding " + pair(before, after) + " leaves nothing of " + where, "padding");
  }
  LayerResult res;
  res.outputs.push_back({out, call.input().dtype});
  if (!call.training() || !call.input_requires_grad()) return res;
  if (fill == Fill::Reflection || fill == Fill::Replication) res.save_input(0);
  // Each CopySlices node clones the gradient it is handed and frees the one it got; the last
  // one's clone lives while the input's gradient is made: output + input above the incoming
  // gradient (the wrap-arounds' slices, output + 2 x a padded strip, stay below that unless a
  // pad exceeds half the input).
  if (fill == Fill::Circular) res.backward_scratch.push_back({res.outputs[0], "clone of the output's gradient"});
  return res;
}

LayerDef pad_def(Fill fill, int rank) {
  const std::string type = kNames[static_cast<int>(fill)] + std::to_string(rank) + "d";
  std::vector<AttrDef> attrs = {AttrDef::tuple("padding", 2 * rank, "before and after each padded dimension, the last "
                                                                    "first (negative crops)").needed()};
  if (fill == Fill::Constant) attrs.push_back(AttrDef::real("value", "the fill value").needed());
  const bool float32_on_cpu = (fill == Fill::Reflection && rank < 3) || fill == Fill::Replication;
  return LayerDef{
      .type = type,
      .summary = "pads the last " + std::to_string(rank) + " dimension" + (rank > 1 ? "s" : "") + " with " +
                 (fill == Fill::Zero ? "zeros" : fill == Fill::Constant ? "a constant" : fill == Fill::Reflection ? "their reflection"
                  : fill == Fill::Replication ? "their edge values" : "their other end (wrapping around)"),
      .attrs = std::move(attrs),
      .infer = [fill, rank](const LayerCall& call) { return infer_pad(call, fill, rank); },
      .autocast_cpu = float32_on_cpu ? std::optional(Autocast::Float32) : std::nullopt,
      .versions = fill == Fill::Reflection || fill == Fill::Replication
                      ? "torch 1.13's kernels take floating point only (on the CPU float32 and float64), 2.x's every dtype but bool"
                      : "",
  };
}

const bool registered = [] {
  for (Fill fill : {Fill::Zero, Fill::Constant, Fill::Reflection, Fill::Replication, Fill::Circular})
    for (int rank = 1; rank <= 3; ++rank) register_layer(pad_def(fill, rank));
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
