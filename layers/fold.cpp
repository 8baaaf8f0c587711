// Unfold (im2col: sliding blocks to columns) and Fold (col2im: columns summed back into an
// image). Backward keeps nothing in 2.13; 1.13's Im2ColBackward0 keeps Unfold's input. Unfold's
// input gradient comes from col2im, whose CPU kernel allocates an output-sized buffer and
// resizes it down: the gradient holds a storage as large as Unfold's output (1.13 and 2.13,
// validation/ops_saved_zoo.md).
#include "common.hpp"

namespace nnmem::layers {
namespace {

std::vector<AttrDef> fold_attrs(bool fold) {
  std::vector<AttrDef> attrs;
  if (fold) attrs.push_back(AttrDef::tuple("output_size", 2, "the image's height and width").needed().at_least(1));
  attrs.push_back(AttrDef::tuple("kernel_size", 2, "block size").needed().at_least(1));
  attrs.push_back(AttrDef::tuple("dilation", 2, "spacing between block elements").or_else(1).at_least(1));
  attrs.push_back(AttrDef::tuple("padding", 2, "implicit zero padding on each side").or_else(0).at_least(0));
  attrs.push_back(AttrDef::tuple("stride", 2, "block stride").or_else(1).at_least(1));
  return attrs;
}

// The number of blocks along each of the image's dimensions.
Shape blocks(const Attrs& a, const Shape& image) {
  const auto kernel = a.tuple("kernel_size"), dilation = a.tuple("dilation"), padding = a.tuple("padding"),
             stride = a.tuple("stride");
  Shape n;
  for (std::size_t d = 0; d < 2; ++d)
    n.push_back(window_output({image[d], kernel[d], stride[d], padding[d], dilation[d]}, dim_name(d, 2)));
  return n;
}

// [N, C, H, W] -> [N, C·kh·kw, blocks]
LayerResult infer_unfold(const LayerCall& call) {
  require_rank(call, 4, 4, spatial_layout(2));
  require_float(call);  // im2col: "not implemented for 'Long'" (1.13 and 2.13)
  const Shape& in = call.shape();
  const auto n = blocks(call.attrs, {in[2], in[3]});
  LayerResult res;
  res.outputs.push_back({{in[0], checked_mul(in[1], checked_product(call.attrs.tuple("kernel_size"))), checked_mul(n[0], n[1])},
                         call.input().dtype});
  if (call.training() && call.input_requires_grad()) {
    if (call.ctx.torch->im2col_keeps_input) res.save_input(0);
    res.input_grad_storage = res.outputs[0];
  }
  return res;
}

// [N, C·kh·kw, blocks] -> [N, C, output_size]
LayerResult infer_fold(const LayerCall& call) {
  require_rank(call, 3, 3, "[N, C·kh·kw, blocks]");
  require_float(call);
  const Shape& in = call.shape();
  const auto size = call.attrs.tuple("output_size");
  const std::int64_t kernel = checked_product(call.attrs.tuple("kernel_size"));
  if (in[1] % kernel != 0)
    throw LayerError("the input's dimension 1 (" + std::to_string(in[1]) + " in " + to_string(in) +
                     ") must divide by the kernel's " + std::to_string(kernel) + " elements", "kernel_size");
  const auto n = blocks(call.attrs, size);
  if (in[2] != checked_mul(n[0], n[1]))
    throw LayerError("output_size " + to_string(size) + " holds " + std::to_string(n[0]) + " x " + std::to_string(n[1]) +
                     " = " + std::to_string(n[0] * n[1]) + " blocks, but the input " + to_string(in) + " has " +
                     std::to_string(in[2]), "output_size");
  LayerResult res;
  res.outputs.push_back({{in[0], in[1] / kernel, size[0], size[1]}, call.input().dtype});
  return res;
}

const bool registered = [] {
  register_layer({.type = "Unfold",
                  .summary = "sliding blocks to columns (im2col): [N, C, H, W] -> [N, C·kh·kw, blocks]",
                  .attrs = fold_attrs(false),
                  .infer = infer_unfold,
                  .versions = "torch 1.13 keeps the input for backward, 2.x nothing"});
  register_layer({.type = "Fold",
                  .summary = "columns summed back into an image (col2im): [N, C·kh·kw, blocks] -> [N, C, H, W]",
                  .attrs = fold_attrs(true),
                  .infer = infer_fold});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
