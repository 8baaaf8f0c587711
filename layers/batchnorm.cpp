// Batch normalisation: BatchNorm1d/2d/3d.
// Parameters: weight and bias (C each) when affine; buffers: running_mean and running_var (C
// each) and the int64 scalar num_batches_tracked when tracking running statistics.
// Backward (derivatives.yaml, `native_batch_norm`): keeps the input and the per-channel
// save_mean and save_invstd (float32 for 16-bit inputs on CUDA or beside float32 parameters).
#include <limits>

#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_batchnorm(const LayerCall& call, int rank) {
  if (rank == 1) require_rank(call, 2, 3, "[N, C] or [N, C, L]");
  else require_rank(call, static_cast<std::size_t>(rank) + 2, static_cast<std::size_t>(rank) + 2,
                    spatial_layout(rank));
  require_float(call);
  const Shape& in = call.shape();
  const std::int64_t channels = in[1];
  check_declared(call, "num_features", channels, "channels");
  const Attrs& a = call.attrs;
  const DType dtype = call.input().dtype;

  LayerResult res;
  res.outputs.push_back({in, dtype});
  res.params.reserve(2);
  res.buffers.reserve(3);
  if (a.flag("affine")) {
    res.params.push_back({"weight", {channels}});
    res.params.push_back({"bias", {channels}});
  }
  const bool tracking = a.flag("track_running_stats");
  if (tracking) {
    res.buffers.push_back({"running_mean", {channels}, call.ctx.float_dtype});
    res.buffers.push_back({"running_var", {channels}, call.ctx.float_dtype});
    res.buffers.push_back({"num_batches_tracked", {}, DType::Int64});
  }
  res.macs = numel(in);
  // _BatchNorm.forward normalises with batch statistics when training, and in evaluation too
  // when it has no running statistics (bn_training = running_mean is None); F.batch_norm then
  // refuses a single value per channel ("Expected more than 1 value per channel when training").
  if ((call.training() || !tracking) && numel(in) / channels == 1)
    throw LayerError("needs more than 1 value per channel " +
                     std::string(call.training() ? "when training" : "in evaluation without running statistics") +
                     ", but the input " + to_string(in) + " has one; use a batch larger than 1");
  if (call.training() && (call.input_requires_grad() || (call.trainable && a.flag("affine")))) {
    res.save_input(0);
    // 16-bit inputs get float32 statistics on CUDA, and on the CPU beside float32 parameters
    // (autocast runs batch norm on a bfloat16 input with the model's float32 weight).
    const bool widen = dtype_size(dtype) < 4 && (call.ctx.device == Device::Cuda || call.ctx.float_dtype == DType::Float32);
    const DType stat = widen ? DType::Float32 : dtype;
    res.save_extra({{channels}, stat}, "save_mean");
    res.save_extra({{channels}, stat}, "save_invstd");
  }
  return res;
}

LayerDef batchnorm_def(int rank) {
  return LayerDef{
      .type = "BatchNorm" + std::to_string(rank) + "d",
      .summary = "batch normalisation over the channels of a " + std::to_string(rank + 1) + "-D or " +
                 std::to_string(rank + 2) + "-D input",
      .attrs = {
          AttrDef::integer("num_features", "channels; inferred, checked when given").optional().at_least(1),
          // No upper bound: 1e300 as a stand-in would show in `nnmem layers`.
          AttrDef::real("eps", "added to the variance").or_else_real(1e-5)
              .between(0, std::numeric_limits<double>::infinity()),
          // null is PyTorch's momentum=None: a cumulative moving average instead of an exponential one.
          AttrDef::real("momentum", "running statistics update factor; null: cumulative average")
              .optional().or_else_real(0.1).between(0, 1),
          AttrDef::flag("affine", true, "learnable per-channel scale and shift"),
          AttrDef::flag("track_running_stats", true, "keep running mean and variance buffers"),
      },
      .autocast = Autocast::Inherit,
      .infer = [rank](const LayerCall& call) { return infer_batchnorm(call, rank); },
  };
}

const bool registered =
    register_layer(batchnorm_def(1)) && register_layer(batchnorm_def(2)) && register_layer(batchnorm_def(3));

}  // namespace
}  // namespace nnmem::layers
