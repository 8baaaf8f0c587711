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
#include "backward_program.hpp"
#include "common.hpp"

namespace nnmem::layers {
namespace {

// RMSNorm's backward, the input and the weight both needing a gradient, node by node as the
// engine runs them, for each form in float32, as a 16-bit model and under autocast (torch 2.13
// and 1.13, validation/trace_diff.py hf_llama_sdpa, hf_t5_sdpa, rms_mlp, rms_mlp_torch and
// rms_mlp_t5: every backward event aligned). LlamaRMSNorm's (x is the input, h its float32 copy
// (x itself in float32), r = rsqrt(mean(h^2) + eps) [..., 1]):
//   MulBackward0    weight * (h * r).to(x's dtype): the normalised input's gradient and the
//                   weight's product, summed to the weight, in x's dtype; lets go of the
//                   normalised input and the incoming gradient; the weight's AccumulateGrad;
//   ToCopyBackward0 (16-bit) that gradient in float32;
//   MulBackward0    h * r: h's gradient through the product (in float32 a part of x's, handed
//                   to x as the node returns) and r's product, summed to [..., 1];
//   RsqrtBackward0  -0.5 * grad * r^3: three [..., 1] tensors, one kept; lets go of r;
//   MeanBackward1   the gradient of h^2, expanded: an input-sized tensor (1.13: lets go of h^2);
//   PowBackward0    2 * h * grad: three input-sized tensors, the last h's gradient's other part
//                   (in float32 handed to x, else added into the first part); lets go of h;
//   ToCopyBackward0 (16-bit) x's gradient in its dtype.
// Before, one node made the input's and the weight's gradients: two or three input-sized
// tensors below the norm's own peak (hf_llama_sdpa's final norm: 1,951,560 against the measured
// 1,984,072; as a bfloat16 model 1,027,112 against 1,076,008). In float32 x's gradient comes in
// two parts, each handed to x as its node returns: where x already has a gradient (a residual
// stream's: every norm but the final one) the engine adds x * r's part into it at once and frees
// it (InputBuffer accumulates in place), then the pow's part likewise.
// nn.RMSNorm (F.rms_norm) on a 16-bit input differs only before h * r (rms_mlp_torch as a
// bfloat16 model and under bfloat16 autocast): it multiplies the float32 normalised input by the
// weight and casts the result back, so its backward begins with
//   ToCopyBackward0 the gradient in float32; lets go of the incoming one;
//   MulBackward0    both products in float32, the weight's summed in float32 (and cast to a
//                   16-bit weight's dtype); lets go of the normalised input and the float32
//                   gradient.
// Under autocast (a 16-bit input beside a float32 weight; rms_mlp --amp bfloat16) LlamaRMSNorm's
// weight product is float32: its two products are float32, the normalised input's gradient
// cast to the input's dtype. T5LayerNorm on a 16-bit x (rms_mlp_t5 as a bfloat16 model and
// under autocast) multiplies x itself by r: that product's node makes x's gradient in float32,
// casts it to x's dtype (x's first part, handed to x as the node returns) and lets go of x; the
// pow's float32 gradient of h is then h's whole one, cast to x's dtype (the second part).
struct RmsBackward {
  TensorType x, wide, stats;    // the input, its float32 copy, rstd
  TensorType weight;            // the weight (float32 beside a 16-bit x: autocast)
  DType normalised = DType::Float32;  // the normalised input's dtype (what the weight multiplies)
  bool cast_last = false;       // nn.RMSNorm on a 16-bit input: the cast back after the weight's product
  int x_itself = -1;            // T5LayerNorm on a 16-bit x: the saved entry of x itself (x * r)
  int input, rstd, normalised_entry;  // saved entries (input: x in float32, else its float32 copy)
  int squared;                  // h^2, which 1.13's MeanBackward1 keeps (else -1)
  bool sum_in_place = true;     // TorchProfile::grad_sum_in_place: 1.13 adds h's two parts out of place
};

DType wider(DType a, DType b) { return dtype_size(a) > dtype_size(b) ? a : b; }

std::vector<BackwardEvent> rms_norm_backward(const RmsBackward& b) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const bool upcast = b.x.dtype != b.wide.dtype;
  const bool t5_upcast = b.x_itself >= 0;
  // The weight's product, in the wider of its operands' dtypes (in float32 beside a float32
  // weight; nn.RMSNorm's normalised input is float32).
  const TensorType product_type{b.x.shape, wider(b.weight.dtype, b.normalised)};
  int grad = -1;
  if (b.cast_last) {
    grad = p.temporary(b.wide, "grad of the output (float32)");
    p.release_grad_out(0);
  }
  int normalised_grad = p.temporary(product_type, "grad of the normalised input");
  const int product = p.temporary(product_type, "grad times the normalised input");
  // (a 16-bit weight beside a float32 product: its gradient summed in float32, then cast)
  const int weight_grad = b.weight.dtype == product_type.dtype ? -1
                          : p.temporary({b.weight.shape, product_type.dtype}, "grad of the weight (float32)");
  if (weight_grad < 0) p.param_grad(0);
  p.free(product);
  if (weight_grad >= 0) p.param_grad(0);
  if (b.normalised != product_type.dtype) {  // the normalised input's gradient in its own dtype
    const int cast = p.temporary({b.x.shape, b.normalised}, "grad of the normalised input, cast");
    p.free(normalised_grad);
    normalised_grad = cast;
  }
  p.release(b.normalised_entry);
  if (grad >= 0) p.free(grad);
  else p.release_grad_out(0);
  if (weight_grad >= 0) p.free(weight_grad);
  p.params_done();  // the weight's AccumulateGrad runs as soon as its gradient is complete
  if (b.normalised != DType::Float32) {  // the cast of x * r (float32, r is) to it
    const int wide = p.temporary(b.wide, "grad of the normalised input (float32)");
    p.free(normalised_grad);
    normalised_grad = wide;
  }
  // h's gradient through h * r: in float32 a part of the input's own, else a float32 tensor
  // the pow's part is added into; T5's x * r on a 16-bit x: x's first part, cast to its dtype
  const int h_grad = upcast ? p.temporary(b.wide, t5_upcast ? "grad of the input through x * rstd (float32)"
                                                            : "grad of the input (float32)")
                            : -1;
  if (!upcast) p.input_grad(0);
  const int by_h = p.temporary(b.wide, "grad times the input");
  if (t5_upcast) {
    p.input_grad(0);
    p.free(h_grad);
  }
  const int rstd_grad = p.temporary(b.stats, "grad of rstd");
  p.free(by_h);
  p.free(normalised_grad);
  if (t5_upcast) p.release(b.x_itself);
  if (!upcast || t5_upcast) p.input_grads_out();  // as the product's node returns: added into a gradient x has
  const int cube = p.temporary(b.stats, "rstd cubed");
  const int scaled = p.temporary(b.stats, "grad times -0.5");
  const int variance_grad = p.temporary(b.stats, "grad of the variance");
  p.free(cube);
  p.free(scaled);
  p.free(rstd_grad);
  p.release(b.rstd);
  const int square_grad = p.temporary(b.wide, "grad of the input squared");
  p.free(variance_grad);
  if (b.squared >= 0) p.release(b.squared);
  const int power = p.temporary(b.wide, "the input to the power 1");
  const int twice = p.temporary(b.wide, "2 * the input");
  // The pow's part of h's gradient: in float32 x's own again, added into it as the node returns;
  // for a 16-bit x, added into the float32 part before the cast back (T5's: all of h's).
  // (1.13 makes the sum anew once the pow's node has let go of h)
  const bool sum_at_h = upcast && !t5_upcast;
  int pow_grad = upcast ? p.temporary(b.wide, "grad of the input through pow") : -1;
  if (!upcast) p.input_grad(0);
  p.free(power);
  p.free(twice);
  p.free(square_grad);
  if (sum_at_h && b.sum_in_place) p.free(pow_grad);
  p.release(b.input);
  if (upcast) {  // x's gradient in its dtype
    if (sum_at_h && !b.sum_in_place) {
      const int sum = p.temporary(b.wide, "grad of the input (float32), summed");
      p.free(h_grad);
      p.free(pow_grad);
      pow_grad = sum;
    }
    p.input_grad(0);
    p.free(sum_at_h && b.sum_in_place ? h_grad : pow_grad);
  }
  return events;
}

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
  // HF multiplies its weight by the result cast back: the product takes the wider dtype.
  // T5LayerNorm's x * rstd is float32 (rstd is), cast to the weight's dtype only when that is
  // 16-bit.
  const DType weight = call.ctx.float_dtype;
  const DType normalised_dtype = t5 ? (dtype_size(weight) == 2 ? weight : DType::Float32) : hf ? in.dtype : DType::Float32;
  if (!affine && t5)
    throw LayerError("form: t5 is T5LayerNorm, which has a weight (elementwise_affine: true)", "elementwise_affine");
  res.outputs.push_back({in.shape, (hf || t5) && affine ? wider(weight, normalised_dtype) : in.dtype});
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
                                .x_itself = t5 && sixteen ? 1 : -1,
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
