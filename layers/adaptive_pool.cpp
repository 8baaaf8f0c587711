// Adaptive pooling: AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool1d/2d/3d, any output size.
// Backward: adaptive max-pooling keeps its input and int64 indices; adaptive average pooling
// keeps its input — at output size 1 too in PyTorch 1.13, whose mean over the spatial
// dimensions (MeanBackward1) still holds it, but not in 2.13 (validation/ops_saved_zoo.md).
// CPU autocast runs the 3-D ones in float32, 1.13 and 2.13 alike (validation/probe_autocast_113.py).
#include <algorithm>

#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_adaptive(const LayerCall& call, int rank, bool max) {
  const auto r = static_cast<std::size_t>(rank);
  require_rank(call, r + 2, r + 2, spatial_layout(rank));
  require_float(call);
  const auto size = call.attrs.tuple("output_size");
  Shape out = {call.shape()[0], call.shape()[1]};
  out.insert(out.end(), size.begin(), size.end());
  const bool global = std::all_of(size.begin(), size.end(), [](std::int64_t s) { return s == 1; });
  LayerResult res = pooled(call, std::move(out), max);
  if (!max && global && !call.ctx.torch->mean_keeps_input) res.saved.clear();
  return res;
}

LayerDef adaptive_def(int rank, bool max) {
  const std::string n = std::to_string(rank);
  return LayerDef{
      .type = (max ? "AdaptiveMaxPool" : "AdaptiveAvgPool") + n + "d",
      .summary = rank_name(rank) + " adaptive " + (max ? "max" : "average") + " pooling to a fixed output size",
      .attrs = {AttrDef::tuple("output_size", rank, "the output's spatial size").needed().at_least(1)},
      .infer = [rank, max](const LayerCall& call) { return infer_adaptive(call, rank, max); },
      .autocast_cpu = rank == 3 ? std::optional(Autocast::Float32) : std::nullopt,
      .versions = max ? "" : "at output size 1 (global pooling) torch 1.13 keeps the input for backward, 2.x nothing",
  };
}

const bool registered = register_layer(adaptive_def(1, false)) && register_layer(adaptive_def(2, false)) &&
                        register_layer(adaptive_def(3, false)) && register_layer(adaptive_def(1, true)) &&
                        register_layer(adaptive_def(2, true)) && register_layer(adaptive_def(3, true));

}  // namespace
}  // namespace nnmem::layers
