// Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d.
// Backward (derivatives.yaml, `convolution`): one formula computes the grads of input, weight
// and bias, so the node keeps its input and weight whenever any of them needs a gradient — the
// input, or the padded copy it convolves instead (non-zeros padding_mode; odd 'same' padding).
#include <algorithm>

#include "common.hpp"

namespace nnmem::layers {
namespace {

std::vector<AttrDef> conv_attrs(int rank, bool transposed) {
  std::vector<AttrDef> attrs = {
      AttrDef::integer("in_channels", "input channels; inferred, checked when given").optional().at_least(1),
      AttrDef::integer("out_channels", "output channels").needed().at_least(1),
      AttrDef::tuple("kernel_size", rank, "kernel size").needed().at_least(1),
      AttrDef::tuple("stride", rank, "stride").or_else(1).at_least(1),
      transposed ? AttrDef::tuple("padding", rank, "implicit zero padding removed from each side").or_else(0).at_least(0)
                 : AttrDef::tuple("padding", rank, "padding added to each side").or_else(0).at_least(0)
                       .or_words({"same", "valid"}),
      AttrDef::tuple("dilation", rank, "spacing between kernel elements").or_else(1).at_least(1),
      AttrDef::integer("groups", "blocked connections; groups = in_channels is depthwise").or_else(1).at_least(1),
      AttrDef::flag("bias", true, "learnable bias"),
  };
  if (transposed)
    attrs.push_back(AttrDef::tuple("output_padding", rank, "extra size added to one side of the output").or_else(0).at_least(0));
  else
    attrs.push_back(AttrDef::word("padding_mode", {"zeros", "reflect", "replicate", "circular"}, "how padding is filled"));
  return attrs;
}

// Padding before and after each spatial dimension. 'same' needs d(k - 1) in all, split as
// PyTorch splits it (Conv._ConvNd.__init__ and ATen's pooling_same_mode_padding_lr agree): the
// smaller half first, so an odd total puts the extra row or column at the end.
struct Padding {
  Shape before, after;
};

Padding padding_of(const Attrs& a, std::size_t rank) {
  Padding pad{Shape(rank, 0), Shape(rank, 0)};
  if (a.is("padding", "valid")) return pad;
  if (a.is("padding", "same")) {
    const auto kernel = a.tuple("kernel_size");
    const auto dilation = a.tuple("dilation");
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t total = checked_mul(dilation[d], kernel[d] - 1);
      pad.before[d] = total / 2;
      pad.after[d] = total - total / 2;
    }
    return pad;
  }
  pad.before = pad.after = a.tuple("padding");
  return pad;
}

// F.pad's limits for the non-zeros modes (torch 1.13): reflect needs each side's padding below
// the input's size ("Padding size should be less than the corresponding input dimension");
// circular may wrap around at most once ("Padding value causes wrapping around more than once").
void check_pad_mode(const std::string& mode, const Padding& pad, const Shape& in, std::size_t rank) {
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t len = in[2 + d];
    const std::int64_t widest = std::max(pad.before[d], pad.after[d]);
    if (mode == "reflect" && widest >= len)
      throw LayerError("reflect padding " + std::to_string(widest) + " must be smaller than the input " +
                           dim_name(d, rank) + " " + std::to_string(len), "padding");
    if (mode == "circular" && widest > len)
      throw LayerError("circular padding " + std::to_string(widest) + " must be at most the input " +
                           dim_name(d, rank) + " " + std::to_string(len) + " (it would wrap around more than once)",
                       "padding");
  }
}

// The tensor the convolution itself runs on, when it is not the input: `input` grown by
// `grow` (per spatial dimension).
TensorType grown(const TensorType& input, const Shape& grow) {
  TensorType t = input;
  for (std::size_t d = 0; d < grow.size(); ++d) t.shape[2 + d] = checked_add(t.shape[2 + d], grow[d]);
  return t;
}

LayerResult infer_conv(const LayerCall& call, int rank, bool transposed) {
  const auto r = static_cast<std::size_t>(rank);
  require_rank(call, r + 2, r + 2, spatial_layout(rank));
  require_float(call);
  const Attrs& a = call.attrs;
  const Shape& in = call.shape();
  const std::int64_t channels = in[1];
  check_declared(call, "in_channels", channels, "channels");
  const std::int64_t out_channels = a.integer("out_channels");
  const std::int64_t groups = a.integer("groups");
  if (channels % groups != 0)
    throw LayerError("groups is " + std::to_string(groups) + ", which does not divide the " + std::to_string(channels) +
                         " input channels", "groups");
  if (out_channels % groups != 0)
    throw LayerError("groups is " + std::to_string(groups) + ", which does not divide out_channels " +
                         std::to_string(out_channels), "groups");

  const auto kernel = a.tuple("kernel_size");
  const auto stride = a.tuple("stride");
  const auto dilation = a.tuple("dilation");
  const bool same = a.is("padding", "same");
  const Padding pad = padding_of(a, r);
  const std::string mode = transposed ? "zeros" : a.text("padding_mode");
  if (same)
    for (std::size_t d = 0; d < r; ++d)
      if (stride[d] != 1)
        throw LayerError("padding 'same' needs stride 1 (PyTorch does not support it for strided convolutions), found stride " +
                             std::to_string(stride[d]), "padding");

  check_pad_mode(mode, pad, in, r);  // F.pad runs before the convolution looks at sizes

  LayerResult res;
  Shape out;
  out.reserve(2 + r);
  out.push_back(in[0]);
  out.push_back(out_channels);
  for (std::size_t d = 0; d < r; ++d) {
    const std::int64_t len = in[2 + d];
    if (same) {
      out.push_back(len);
    } else if (transposed) {
      const auto output_padding = a.tuple("output_padding");
      if (output_padding[d] >= std::max(stride[d], dilation[d]))
        throw LayerError("output_padding must be smaller than stride or dilation, found " + std::to_string(output_padding[d]),
                         "output_padding");
      // (L - 1)s - 2p + d(k - 1) + output_padding + 1
      const std::int64_t grown_len = checked_add(checked_mul(len - 1, stride[d]),
                                                 checked_add(checked_mul(dilation[d], kernel[d] - 1), output_padding[d] + 1));
      const std::int64_t size = checked_sub(grown_len, checked_mul(2, pad.before[d]));
      if (size < 1)
        throw LayerError("the output " + dim_name(d, r) + " would be " + std::to_string(size) + " (padding " +
                             std::to_string(pad.before[d]) + " removes more than the " + std::to_string(grown_len) +
                             " produced)", "padding");
      out.push_back(size);
    } else {
      out.push_back(window_output({len, kernel[d], stride[d], pad.before[d], dilation[d]}, dim_name(d, r)));
    }
  }
  res.outputs.push_back({out, call.input().dtype});
  // torch 1.13's CPU kernel for a 3-D transposed convolution without groups
  // (slow_conv_transpose3d) makes its output with empty_like(input), then resizes it: an output
  // smaller than its input keeps the input's storage (docs/memory-model.md, "Devices").
  if (transposed && rank == 3 && groups == 1 && call.ctx.device == Device::Cpu)
    res.output_storage_bytes = call.input().bytes();

  Shape weight;
  weight.reserve(2 + kernel.size());
  weight.push_back(transposed ? channels : out_channels);
  weight.push_back(transposed ? out_channels / groups : channels / groups);
  weight.insert(weight.end(), kernel.begin(), kernel.end());
  res.params.reserve(2);
  res.params.push_back({"weight", std::move(weight)});
  // On a channels-last input a 2-D convolution computes channels-last: its output, and its
  // weight's gradient, whose strides differ from the weight's unless they cannot (one input
  // channel per group, or a 1x1 kernel). validation/fixtures: convnext_valid's downsampling.
  if (rank == 2 && !transposed && call.inputs[0].layout == Layout::ChannelsLast) {
    res.layout = Layout::ChannelsLast;
    res.params.back().grad_restrided = channels / groups > 1 && checked_product(kernel) > 1;
  }
  if (a.flag("bias")) res.params.push_back({"bias", {out_channels}});

  // Each output (or, transposed, each input) element takes in/groups × prod(kernel) products.
  const std::int64_t per_element = checked_mul(channels / groups, checked_product(kernel));
  res.macs = transposed ? checked_mul(checked_mul(numel(in), out_channels / groups), checked_product(kernel))
                        : checked_mul(numel(out), per_element);

  // The convolution keeps the tensor it runs on, and its weight, whenever any of its grads is
  // needed (one formula computes them all).
  if (!call.training() || !(call.input_requires_grad() || call.trainable)) return res;
  res.save_param(0);
  Shape grow(r, 0);
  if (mode != "zeros") {
    // Conv._conv_forward runs F.pad for every non-zeros padding_mode, even padding 0 or 'valid',
    // and convolves the padded copy. reflection/replication_padNd keep their input for backward
    // (when it needs a grad); circular padding is cat and slices, which keep nothing.
    for (std::size_t d = 0; d < r; ++d) grow[d] = checked_add(pad.before[d], pad.after[d]);
    res.save_extra(grown(call.input(), grow), "padded input", Saved::Made::Separate);
    if (call.input_requires_grad() && mode != "circular") res.save_input(0);
  } else {
    // zeros: ATen pads symmetrically inside the convolution. Only 'same' with an odd total
    // (an even kernel, odd dilation) is lopsided; convolution_same then pads the extra row or
    // column itself with constant_pad_nd (which keeps nothing) and convolves that copy.
    for (std::size_t d = 0; d < r; ++d) grow[d] = pad.after[d] - pad.before[d];
    if (std::any_of(grow.begin(), grow.end(), [](std::int64_t g) { return g > 0; }))
      res.save_extra(grown(call.input(), grow), "padded input", Saved::Made::Operand);  // inside aten::convNd
    else
      res.save_input(0);
  }
  return res;
}

LayerDef conv_def(int rank, bool transposed) {
  const std::string n = std::to_string(rank);
  return LayerDef{
      .type = (transposed ? "ConvTranspose" : "Conv") + n + "d",
      .summary = transposed ? "transposed " + rank_name(rank) + " convolution (a.k.a. deconvolution)"
                            : rank_name(rank) + " convolution",
      .attrs = conv_attrs(rank, transposed),
      .autocast = Autocast::Lower,
      .infer = [rank, transposed](const LayerCall& call) { return infer_conv(call, rank, transposed); },
  };
}

const bool registered = register_layer(conv_def(1, false)) && register_layer(conv_def(2, false)) &&
                        register_layer(conv_def(3, false)) && register_layer(conv_def(1, true)) &&
                        register_layer(conv_def(2, true)) && register_layer(conv_def(3, true));

}  // namespace
}  // namespace nnmem::layers
