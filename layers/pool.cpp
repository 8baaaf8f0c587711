// Sliding-window pooling: MaxPool1d/2d/3d and AvgPool1d/2d/3d.
// Backward: max-pooling keeps its input and the int64 indices of each maximum (output-shaped);
// average pooling keeps its input (the backward formula only needs its shape, but the tensor is
// held). Neither keeps anything when its input needs no gradient. CPU autocast runs max_pool3d
// and avg_pool3d in float32, 1.13 and 2.13 alike (their output is float32 under bfloat16
// autocast: validation/probe_autocast_113.py); the 1-D and 2-D ones in their input's dtype.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_pool(const LayerCall& call, int rank, bool max) {
  const auto r = static_cast<std::size_t>(rank);
  require_rank(call, r + 2, r + 2, spatial_layout(rank));
  require_float(call);
  const Attrs& a = call.attrs;
  const Shape& in = call.shape();
  const auto kernel = a.tuple("kernel_size");
  const auto stride = a.given("stride") ? a.tuple("stride") : kernel;  // PyTorch: stride defaults to kernel_size
  const auto padding = a.tuple("padding");
  const auto dilation = max ? a.tuple("dilation") : Shape(r, 1);
  // avg_pool3d's shape check (pool3d_shape_check with check_input_size, CPU and CUDA alike) also
  // wants the unpadded input to hold a whole kernel, even when padding or ceil_mode would give
  // an output: AvgPool3d(3, padding=1) on 2x2x2 fails, MaxPool3d and AvgPool1d/2d run.
  if (rank == 3 && !max)
    for (std::size_t d = 0; d < r; ++d)
      if (in[2 + d] < kernel[d])
        throw LayerError("the input " + dim_name(d, r) + " is " + std::to_string(in[2 + d]) +
                         ", smaller than the kernel size " + std::to_string(kernel[d]) +
                         " (AvgPool3d does not count padding here)");
  Shape out = {in[0], in[1]};
  for (std::size_t d = 0; d < r; ++d) {
    if (padding[d] > kernel[d] / 2)
      throw LayerError("padding must be at most half the kernel size (" + std::to_string(kernel[d] / 2) + "), found " +
                           std::to_string(padding[d]), "padding");
    out.push_back(window_output({in[2 + d], kernel[d], stride[d], padding[d], dilation[d], a.flag("ceil_mode")},
                                dim_name(d, r)));
  }
  return pooled(call, std::move(out), max);
}

LayerDef pool_def(int rank, bool max) {
  std::vector<AttrDef> attrs = {
      AttrDef::tuple("kernel_size", rank, "window size").needed().at_least(1),
      AttrDef::tuple("stride", rank, "window stride; default: kernel_size").optional().at_least(1),
      AttrDef::tuple("padding", rank, "implicit padding on each side (at most half the kernel)").or_else(0).at_least(0),
      AttrDef::flag("ceil_mode", false, "round the output size up instead of down"),
  };
  if (max) {
    attrs.push_back(AttrDef::tuple("dilation", rank, "spacing between window elements").or_else(1).at_least(1));
  } else {
    attrs.push_back(AttrDef::flag("count_include_pad", true, "count padding zeros in the average"));
    if (rank > 1)
      attrs.push_back(AttrDef::integer("divisor_override", "divide by this instead of the window size").optional().at_least(1));
  }
  const std::string n = std::to_string(rank);
  return LayerDef{
      .type = (max ? "MaxPool" : "AvgPool") + n + "d",
      .summary = rank_name(rank) + (max ? " max pooling" : " average pooling"),
      .attrs = std::move(attrs),
      .infer = [rank, max](const LayerCall& call) { return infer_pool(call, rank, max); },
      .autocast_cpu = rank == 3 ? std::optional(Autocast::Float32) : std::nullopt,
  };
}

const bool registered = register_layer(pool_def(1, true)) && register_layer(pool_def(2, true)) &&
                        register_layer(pool_def(3, true)) && register_layer(pool_def(1, false)) &&
                        register_layer(pool_def(2, false)) && register_layer(pool_def(3, false));

}  // namespace
}  // namespace nnmem::layers
