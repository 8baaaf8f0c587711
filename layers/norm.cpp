// Normalisations over the last dimensions or over groups: LayerNorm, LayerNorm2d (torchvision's,
// over the channels of [N, C, H, W]), RMSNorm, GroupNorm, InstanceNorm1d/2d/3d. What each keeps (torch 2.13, saved_tensors_hooks;
// validation/probe_transformer_ops.py):
//   layer_norm    — the input, weight and bias, and mean and rstd ([..., 1] per normalised
//                   dimension) in the input's dtype, or float32 beside float32 parameters
//                   (autocast on the CPU runs it on a bfloat16 input with the float32 weight);
//   LayerNorm2d   — permute to [N, H, W, C], layer_norm, permute back (torchvision's ConvNeXt):
//                   layer_norm's tensors, its input the permuted view of the input (the same
//                   storage), mean and rstd [N, H, W, 1]; the permutes are views, and
//                   layer_norm's contiguous copy of its input is workspace
//                   (validation/probe_zoo.py);
//   rms_norm      — (form: torch, F.rms_norm, a composite) the input in float32 (a float32 copy
//                   of a 16-bit input), rstd in float32 and, when affine, the weight and the
//                   normalised input x * rstd in float32; a 16-bit input's result is cast back;
//                   (form: hf, transformers' LlamaRMSNorm: weight * (x.float() * rstd).to(dtype))
//                   the same, but the normalised input is kept cast back to the input's dtype;
//                   (form: t5, transformers' T5LayerNorm: weight * (x * rstd).to(weight's dtype
//                   when it is 16-bit), rstd from x.float()) pow keeps x.float(), the product keeps
//                   x itself (beside its float32 copy when x is 16-bit) and rstd, the weight's
//                   product the normalised input in the weight's dtype when that is 16-bit, else
//                   in float32 (the product's); for a float32 input the same as form: hf;
//   group_norm    — the input, the weight, and mean and rstd [N, groups];
//   instance_norm — batch_norm on the input viewed as [1, N*C, *]: the input, save_mean and
//                   save_invstd [N*C] in float32, and repeat()s of the weight and of the running
//                   statistics [N*C] when the module has them.
#include "common.hpp"
#include "rms_norm_backward.hpp"

namespace nnmem::layers {
namespace {

// The input's dtype, or float32 when a 16-bit input meets float32 parameters (mixed kernels).
DType stats_dtype(const LayerCall& call) {
  const DType in = call.input().dtype;
  return dtype_size(in) < 4 && call.ctx.float_dtype == DType::Float32 ? DType::Float32 : in;
}

// The trailing dimensions normalised: the input must end with `normalized_shape`. Returns the
// shape of the per-row statistics ([..., 1, 1] for two normalised dimensions).
Shape normalised(const LayerCall& call, const Shape& shape) {
  const Shape& in = call.shape();
  bool ok = !shape.empty() && shape.size() < in.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = in[in.size() - shape.size() + i] == shape[i];
  if (!ok)
    throw LayerError("normalized_shape is " + to_string(shape) + ", but the input " + to_string(in) +
                         " does not end with it (after the batch dimension)",
                     "normalized_shape");
  Shape stats(in.begin(), in.end() - static_cast<std::ptrdiff_t>(shape.size()));
  stats.resize(in.size(), 1);
  return stats;
}

bool needs_backward(const LayerCall& call, bool has_params) {
  return call.training() && (call.input_requires_grad() || (call.trainable && has_params));
}

// layer_norm over `shape` with per-row statistics `stats`: LayerNorm's and LayerNorm2d's.
LayerResult layer_norm(const LayerCall& call, const Shape& shape, const Shape& stats) {
  const bool affine = call.attrs.flag("elementwise_affine");
  LayerResult res;
  res.outputs.push_back(call.input());
  if (affine) res.params.push_back({"weight", shape});
  if (affine && call.attrs.flag("bias")) res.params.push_back({"bias", shape});
  res.macs = call.input().numel();
  if (needs_backward(call, affine)) {
    res.save_input(0);
    for (int k = 0; k < static_cast<int>(res.params.size()); ++k) res.save_param(k, res.params[k].name);
    res.save_extra({stats, stats_dtype(call)}, "mean");
    res.save_extra({stats, stats_dtype(call)}, "rstd");
  }
  return res;
}

LayerResult infer_layer_norm(const LayerCall& call) {
  require_float(call);
  const auto shape = call.attrs.list("normalized_shape");
  return layer_norm(call, shape, normalised(call, shape));
}

LayerResult infer_layer_norm_2d(const LayerCall& call) {
  require_rank(call, 4, 4, "[N, C, H, W]");
  require_float(call);
  const Shape& in = call.shape();
  check_declared(call, "normalized_shape", in[1], "channels");
  LayerResult res = layer_norm(call, {in[1]}, {in[0], in[2], in[3], 1});
  res.layout = Layout::ChannelsLast;  // layer_norm's contiguous [N, H, W, C] result, permuted back
  return res;
}

LayerResult infer_rms_norm(const LayerCall& call) {
  require_float(call);
  const auto shape = call.attrs.list("normalized_shape");
  const Shape stats = normalised(call, shape);
  const bool affine = call.attrs.flag("elementwise_affine");
  const bool hf = call.attrs.is("form", "hf");
  const bool t5 = call.attrs.is("form", "t5");
  if (!hf && !t5 && !call.ctx.torch->rms_norm_op)
    throw LayerError("PyTorch " + std::string(call.ctx.torch->version) + " has no nn.RMSNorm (2.4 added it); form: hf, "
                     "the hand-written LlamaRMSNorm, runs on it", "form");
  const TensorType& in = call.input();
  const TensorType wide{in.shape, DType::Float32};
  LayerResult res;
  // HF multiplies its weight by the result cast back: the product takes the promoted dtype.
  // T5LayerNorm's x * rstd is float32 (rstd is), cast to the weight's dtype only when that is
  // 16-bit.
  const DType weight = call.ctx.float_dtype;
  const DType normalised_dtype = t5 ? (dtype_size(weight) == 2 ? weight : DType::Float32) : hf ? in.dtype : DType::Float32;
  if (!affine && t5)
    throw LayerError("form: t5 is T5LayerNorm, which has a weight (elementwise_affine: true)", "elementwise_affine");
  res.outputs.push_back({in.shape, (hf || t5) && affine ? promote(weight, normalised_dtype) : in.dtype});
  if (affine) res.params.push_back({"weight", shape});
  res.macs = in.numel();
  // Inference, HF's forms (measured on rms_mlp, --mode eval, trace_diff.py): x.float() (a copy
  // of a 16-bit x) with its square and their mean, then x.float() * rsqrt(mean + eps) beside
  // the mean and the rsqrt; the output made while that product (and in 16 bits its cast back)
  // and the mean, which a Python variable holds to the end, are live.
  if (!call.training() && affine && (hf || (t5 && in.dtype == DType::Float32))) {
    const TensorType mean{stats, DType::Float32};
    if (in.dtype != DType::Float32)
      res.forward_moments = {{{wide, "input as float32"}, {wide, "input squared"}, {mean, "mean of the squares"}},
                             {{wide, "input as float32"}, {mean, "mean of the squares"}, {mean, "rsqrt"}, {wide, "input * rsqrt"}}};
    res.forward_scratch = {{wide, "input * rsqrt"}, {mean, "mean of the squares"}};
    if (in.dtype != DType::Float32) res.forward_scratch.push_back({in, "input * rsqrt, cast back"});
  }
  // 1.13's MeanBackward1 keeps its input, h^2 (TorchProfile::mean_keeps_input).
  const bool squared = (hf || t5) && call.ctx.torch->mean_keeps_input && call.training() && call.input_requires_grad(0);
  // Training, HF's forms (rms_mlp and rms_mlp_t5, trace_diff.py, float32, 16-bit and autocast):
  // the output is made while the mean (a Python variable to the end) is live, and in
  // LlamaRMSNorm the float32 product x * rsqrt when the normalised input kept is its cast.
  // T5LayerNorm lets go of that product once cast to a 16-bit weight's dtype, before the
  // output: its moment is the cast, beside x.float(), rstd and the mean.
  if (call.training() && affine && (hf || t5)) {
    const TensorType mean{stats, DType::Float32};
    res.forward_scratch = {{mean, "mean of the squares"}};
    if (normalised_dtype != DType::Float32 && hf) res.forward_scratch.push_back({wide, "input * rsqrt"});
    if (normalised_dtype != DType::Float32 && t5) {
      res.forward_moments = {{{wide, "input as float32"}, {mean, "rstd"}, {mean, "mean of the squares"},
                              {wide, "input * rsqrt"}, {{in.shape, normalised_dtype}, "input * rsqrt, cast"}}};
      if (squared) res.forward_moments[0].push_back({wide, "input squared"});  // (1.13: kept)
    }
  }
  if (needs_backward(call, affine)) {
    if (in.dtype == DType::Float32) res.save_input(0);
    else res.save_extra(wide, "input as float32");
    // T5's product reads the input as it is: a 16-bit input is kept beside its float32 copy.
    if (t5 && in.dtype != DType::Float32) res.save_input(0, "input (x * rstd)");
    const int x_itself = t5 && in.dtype != DType::Float32 ? static_cast<int>(res.saved.size()) - 1 : -1;
    if (squared) res.save_extra(wide, "input squared");
    const int squared_entry = squared ? static_cast<int>(res.saved.size()) - 1 : -1;
    res.save_extra({stats, DType::Float32}, "rstd");
    const int rstd = static_cast<int>(res.saved.size()) - 1;
    if (affine) {
      res.save_param(0);
      if (hf || (t5 && normalised_dtype == in.dtype)) res.save_extra({in.shape, normalised_dtype}, "normalised input");
      else res.save_extra({in.shape, normalised_dtype}, "normalised input (float32)");
    }
    // Node by node where measured: every form in float32 (nn.RMSNorm's F.rms_norm is on the CPU
    // a composite of the same ops, rms_mlp_torch), LlamaRMSNorm and nn.RMSNorm in a 16-bit
    // model and under autocast; the input and the weight both needing a gradient.
    const bool sixteen = dtype_size(in.dtype) == 2;
    const bool measured = in.dtype == DType::Float32 ? weight == DType::Float32
                                                     : sixteen && (weight == in.dtype || weight == DType::Float32);
    if (measured && affine && call.trainable && call.input_requires_grad(0)) {
      const RmsBackward program{.x = in, .wide = wide, .stats = {stats, DType::Float32}, .weight = {shape, weight},
                                .normalised = normalised_dtype, .cast_last = !hf && !t5 && sixteen,
                                .x_itself = x_itself,
                                .input = 0, .rstd = rstd, .normalised_entry = static_cast<int>(res.saved.size()) - 1,
                                .squared = squared_entry, .sum_in_place = call.ctx.torch->grad_sum_in_place};
      res.backward_program = [program](const std::vector<bool>&) { return rms_norm_backward(program); };
    }
  }
  return res;
}

LayerResult infer_group_norm(const LayerCall& call) {
  require_rank(call, 2, 64, "[N, C, *]");
  require_float(call);
  const Shape& in = call.shape();
  const std::int64_t groups = call.attrs.integer("num_groups");
  check_declared(call, "num_channels", in[1], "channels");
  if (in[1] % groups != 0)
    throw LayerError("num_groups " + std::to_string(groups) + " does not divide the input's " + with_commas(in[1]) +
                         " channels (input " + to_string(in) + ")",
                     "num_groups");
  const bool affine = call.attrs.flag("affine");
  LayerResult res;
  res.outputs.push_back(call.input());
  if (affine) {
    res.params.push_back({"weight", {in[1]}});
    res.params.push_back({"bias", {in[1]}});
  }
  res.macs = call.input().numel();
  if (needs_backward(call, affine)) {
    res.save_input(0);
    if (affine) res.save_param(0);
    res.save_extra({{in[0], groups}, stats_dtype(call)}, "mean");
    res.save_extra({{in[0], groups}, stats_dtype(call)}, "rstd");
  }
  return res;
}

LayerResult infer_instance_norm(const LayerCall& call, int rank) {
  require_rank(call, static_cast<std::size_t>(rank) + 2, static_cast<std::size_t>(rank) + 2, spatial_layout(rank));
  require_float(call);
  const Shape& in = call.shape();
  check_declared(call, "num_features", in[1], "channels");
  const bool affine = call.attrs.flag("affine"), tracking = call.attrs.flag("track_running_stats");
  LayerResult res;
  res.outputs.push_back(call.input());
  if (affine) {
    res.params.push_back({"weight", {in[1]}});
    res.params.push_back({"bias", {in[1]}});
  }
  if (tracking) {
    res.buffers.push_back({"running_mean", {in[1]}, call.ctx.float_dtype});
    res.buffers.push_back({"running_var", {in[1]}, call.ctx.float_dtype});
    res.buffers.push_back({"num_batches_tracked", {}, DType::Int64});
  }
  res.macs = call.input().numel();
  if (needs_backward(call, affine)) {
    const TensorType rows{{checked_mul(in[0], in[1])}, DType::Float32};
    const TensorType repeated{rows.shape, call.ctx.float_dtype};
    res.save_input(0);
    if (affine) res.save_extra(repeated, "weight.repeat(N)");
    if (tracking) {
      res.save_extra(repeated, "running_mean.repeat(N)");
      res.save_extra(repeated, "running_var.repeat(N)");
    }
    res.save_extra(rows, "save_mean");
    res.save_extra(rows, "save_invstd");
  }
  return res;
}

std::vector<AttrDef> trailing_attrs(bool with_bias) {
  std::vector<AttrDef> a = {AttrDef::list("normalized_shape", "the trailing dimensions normalised (an int n is [n])").needed().or_int(),
                            AttrDef::real("eps", "added to the variance").or_else_real(1e-5),
                            AttrDef::flag("elementwise_affine", true, "a learnable weight")};
  if (with_bias) a.push_back(AttrDef::flag("bias", true, "a learnable bias too (with elementwise_affine)"));
  return a;
}

const bool registered = [] {
  register_layer({.type = "LayerNorm",
                  .summary = "normalises the last dimensions: (x - mean) / std * weight + bias",
                  .attrs = trailing_attrs(true),
                  .autocast = Autocast::Float32,
                  .infer = infer_layer_norm,
                  .autocast_cpu = Autocast::Inherit});
  register_layer({.type = "LayerNorm2d",
                  .summary = "torchvision's LayerNorm2d (ConvNeXt): LayerNorm over the channels of [N, C, H, W], "
                             "permuted to the last dimension and back",
                  .attrs = {AttrDef::integer("normalized_shape", "the channels; inferred, checked when given").optional().at_least(1),
                            AttrDef::real("eps", "added to the variance").or_else_real(1e-5),
                            AttrDef::flag("elementwise_affine", true, "a learnable weight"),
                            AttrDef::flag("bias", true, "a learnable bias too (with elementwise_affine)")},
                  .autocast = Autocast::Float32,
                  .infer = infer_layer_norm_2d,
                  .autocast_cpu = Autocast::Inherit});
  std::vector<AttrDef> rms = trailing_attrs(false);
  rms.push_back(AttrDef::word("form", {"torch", "hf", "t5"},
                              "torch: nn.RMSNorm (F.rms_norm); hf: transformers' LlamaRMSNorm, which keeps the "
                              "normalised input in the input's dtype; t5: T5LayerNorm, which multiplies the input "
                              "itself by rstd (keeping it) and casts the product to a 16-bit weight's dtype"));
  register_layer({.type = "RMSNorm",
                  .summary = "x / sqrt(mean(x^2) + eps) * weight over the last dimensions",
                  .attrs = std::move(rms),
                  .infer = infer_rms_norm});
  register_layer({.type = "GroupNorm",
                  .summary = "normalises groups of channels of [N, C, *]",
                  .attrs = {AttrDef::integer("num_groups", "groups the channels are split into").needed().at_least(1),
                            AttrDef::integer("num_channels", "channels; inferred, checked when given").optional().at_least(1),
                            AttrDef::real("eps", "added to the variance").or_else_real(1e-5),
                            AttrDef::flag("affine", true, "a learnable weight and bias per channel")},
                  .autocast = Autocast::Float32,
                  .infer = infer_group_norm,
                  .autocast_cpu = Autocast::Inherit});
  for (int rank = 1; rank <= 3; ++rank)
    register_layer({.type = "InstanceNorm" + std::to_string(rank) + "d",
                    .summary = "normalises each channel of each sample of a " + std::to_string(rank + 2) + "-D input",
                    .attrs = {AttrDef::integer("num_features", "channels; inferred, checked when given").optional().at_least(1),
                              AttrDef::real("eps", "added to the variance").or_else_real(1e-5),
                              AttrDef::real("momentum", "running statistics' update rate").or_else_real(0.1),
                              AttrDef::flag("affine", false, "a learnable weight and bias per channel"),
                              AttrDef::flag("track_running_stats", false, "keep running statistics")},
                    .infer = [rank](const LayerCall& call) { return infer_instance_norm(call, rank); }});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
