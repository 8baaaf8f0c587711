// More activations: Hardtanh, SELU, CELU, Threshold (table rows, elementwise.hpp), PReLU (a
// learned slope), GLU, LogSigmoid, Softsign, Softmin and Tanhshrink. What each keeps and
// allocates was measured on 1.13 and 2.13 with saved_tensors_hooks and the profiler
// (validation/probe_zoo.py -> validation/ops_saved_zoo.md); the two versions agree except PReLU.
//   Hardtanh, Threshold: keep the input; in place, a clone of it (their formulas read `self`).
//   SELU, CELU: elu with a scale; keep the input, in place the result (as ELU).
//   GLU: keeps its input (the output is half of it along dim).
//   LogSigmoid: keeps its input and, on the CPU, an input-sized buffer (empty on CUDA).
//   Softsign = x / (1 + |x|): keeps x and the denominator; its forward wraps the 1 in an 8-byte
//     double, and its backward (div, abs) holds three input-sized temporaries besides x's gradient.
//   Tanhshrink = x - tanh(x): keeps tanh(x); backward holds one more input-sized temporary.
//   Softmin = softmax(-x): see softmax_def.
//   PReLU: keeps its input and weight (under autocast the weight's low-precision copy, where
//     autocast lists prelu: TorchProfile::cpu_autocast_uncast); see prelu_scratch.
#include "elementwise.hpp"

namespace nnmem::layers {
namespace {

// PReLU's backward computes both gradients whenever any is needed. 2.13's _prelu_kernel_backward
// makes the weight's gradient element-wise (input-sized) and sums it down; when the input needs
// no gradient, its gradient is still made and dropped — first in 2.13, last in 1.13
// (1.13: +input +weight -input; 2.13: +input +input -input +weight -input).
// Under autocast the weight is read as it is cast: to the low-precision dtype where PReLU is on
// autocast's lower-precision list (CUDA; the CPU in 2.x), as it is where it is not (1.13's CPU).
void prelu_scratch(const LayerCall& call, LayerResult& res) {
  const TensorType& in = call.input();
  const bool elementwise = call.ctx.torch->prelu_weight_grad_elementwise;
  if (!call.input_requires_grad()) res.backward_scratch.push_back({in, "unused input gradient", elementwise});
  if (elementwise) res.backward_scratch.push_back({in, "element-wise weight gradient"});
  const bool weight_cast = call.ctx.amp && in.dtype == *call.ctx.amp &&
                           !(call.ctx.device == Device::Cpu && call.ctx.torch->cpu_autocast_uncasts("PReLU"));
  if (!call.trainable)
    res.backward_scratch.push_back({{res.params[0].shape, weight_cast ? in.dtype : res.params[0].dtype}, "unused weight gradient"});
}

LayerResult infer_prelu(const LayerCall& call) {
  require_float(call);
  const std::int64_t n = call.attrs.integer("num_parameters");
  // F.prelu: the weight has one value, or one per channel (dimension 1).
  const std::int64_t channels = call.shape().size() >= 2 ? call.shape()[1] : 1;
  if (n != 1 && n != channels)
    throw LayerError("num_parameters is " + std::to_string(n) + ", but the input " + to_string(call.shape()) + " has " +
                     std::to_string(channels) + " channels (it must be 1 or the channels)", "num_parameters");
  LayerResult res;
  res.outputs.push_back(call.input());
  res.params.push_back({"weight", {n}});
  if (call.training() && (call.input_requires_grad() || call.trainable)) {
    res.save_input(0);
    res.save_param(0);
    prelu_scratch(call, res);
  }
  return res;
}

LayerResult infer_glu(const LayerCall& call) {
  require_float(call);
  Shape out = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), out.size(), "dim");
  if (out[dim] % 2 != 0)
    throw LayerError("halves dimension " + std::to_string(dim) + ", but the input " + to_string(out) + " has " +
                     std::to_string(out[dim]) + " there, an odd size", "dim");
  out[dim] /= 2;
  LayerResult res;
  res.outputs.push_back({out, call.input().dtype});
  if (call.training() && call.input_requires_grad()) res.save_input(0);
  return res;
}

// One of the composite activations: what it keeps beyond its input, and its temporaries.
enum class Composite { LogSigmoid, Softsign, Tanhshrink };

// Softsign and Tanhshrink are Python arithmetic: an integer input gives a float32 output (true
// division, tanh), and bool is refused (abs, subtraction); log_sigmoid takes floats only.
LayerResult infer_composite(const LayerCall& call, Composite op) {
  const TensorType& in = call.input();
  LayerResult res;
  res.outputs.push_back(activation_output(call, op == Composite::LogSigmoid ? Dtypes::Float : Dtypes::FloatOrInt));
  if (!is_floating(in.dtype)) res.outputs[0].dtype = DType::Float32;
  const bool backward = call.training() && call.input_requires_grad();
  // the 1 of 1 + |x|, a wrapped Python number: a double beside a float, an int64 beside an integer
  const TensorType wrapped_one{{}, is_floating(in.dtype) ? DType::Float64 : DType::Int64};
  switch (op) {
    case Composite::LogSigmoid:
      if (!backward) break;
      res.save_input(0);
      if (call.ctx.device == Device::Cpu) res.save_extra(in, "buffer");
      break;
    case Composite::Softsign:
      // a wrapped Python number is a CPU tensor: device memory only on the CPU
      if (call.ctx.device == Device::Cpu) res.forward_scratch.push_back({wrapped_one, "the 1 of 1 + |x|"});
      if (!backward) {
        res.forward_scratch.push_back({in, "1 + |x|"});
        break;
      }
      res.save_input(0);
      res.save_extra(in, "1 + |x|", Saved::Made::Separate);
      for (int k = 0; k < 3; ++k) res.backward_scratch.push_back({in, "division's temporaries"});
      break;
    case Composite::Tanhshrink:
      if (!backward) {
        res.forward_scratch.push_back({res.outputs[0], "tanh(x)"});
        break;
      }
      res.save_extra(in, "tanh(x)", Saved::Made::Separate);
      res.backward_scratch.push_back({in, "tanh's gradient"});
      break;
  }
  return res;
}

LayerDef composite_def(const char* type, const char* summary, Composite op) {
  return LayerDef{.type = type, .summary = summary, .attrs = {},
                  .infer = [op](const LayerCall& call) { return infer_composite(call, op); }};
}

const bool registered = [] {
  using enum Keeps;
  using enum InPlace;
  using enum Dtypes;
  const std::vector<Activation> table = {
      {"Hardtanh", "clamp(x, min_val, max_val)", Input, KeepsClone, FloatOrInt,
       {AttrDef::real("min_val", "lower bound").or_else_real(-1.0), AttrDef::real("max_val", "upper bound").or_else_real(1.0)},
       nullptr,
       [](const Attrs& a) {
         if (!(a.real("max_val") > a.real("min_val")))
           throw LayerError("max_val (" + real_text(a.real("max_val")) + ") must be greater than min_val (" +
                            real_text(a.real("min_val")) + ")", "max_val");
       }},
      {"SELU", "scale * elu(x, alpha) with fixed scale and alpha", Input, KeepsResult, Float, {}},
      {"CELU", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1))", Input, KeepsResult, Float,
       {AttrDef::real("alpha", "scale of the negative part (not 0)").or_else_real(1.0)},
       "alpha",  // celu_ is elu_: "In-place elu backward calculation is triggered with a negative slope" (2.13)
       [](const Attrs& a) {
         if (a.real("alpha") == 0) throw LayerError("alpha cannot be 0 (PyTorch divides by it)", "alpha");
       }},
      {"Threshold", "x if x > threshold else value", Input, KeepsClone, FloatOrInt,
       {AttrDef::real("threshold", "the value to threshold at").needed(),
        AttrDef::real("value", "what replaces values at or below it").needed()}},
  };
  for (const auto& a : table) register_layer(activation_def(a));
  register_layer({.type = "PReLU",
                  .summary = "x if x > 0 else weight * x, with a learned weight (one, or one per channel)",
                  .attrs = {AttrDef::integer("num_parameters", "1, or the input's channels").or_else(1).at_least(1),
                            AttrDef::real("init", "the weight's initial value (no effect on memory)").or_else_real(0.25)},
                  .autocast = Autocast::Lower,
                  .infer = infer_prelu,
                  .versions = "torch 2.x's backward makes the weight's gradient at the input's size, then sums it "
                              "down (an input-sized temporary); 1.13's does not. CPU autocast casts the input and "
                              "weight to the low-precision dtype in 2.x (the weight's copy kept), not in 1.13"});
  register_layer({.type = "GLU",
                  .summary = "a * sigmoid(b), with a and b the halves of the input along dim",
                  .attrs = {AttrDef::integer("dim", "the dimension halved (batch is 0)").or_else(-1)},
                  .infer = infer_glu});
  register_layer(composite_def("LogSigmoid", "log(1 / (1 + exp(-x)))", Composite::LogSigmoid));
  register_layer(composite_def("Softsign", "x / (1 + |x|)", Composite::Softsign));
  register_layer(composite_def("Tanhshrink", "x - tanh(x)", Composite::Tanhshrink));
  register_layer(softmax_def("Softmin", "softmax(-x) along dim", true));
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
