// Element-wise activations and the softmax family. They add no parameters; what they keep for
// backward is what their derivative formula reads (derivatives.yaml):
//   the output — ReLU, Sigmoid, Tanh, Softmax, LogSoftmax;
//   the input  — out-of-place ReLU6 (hardtanh), LeakyReLU, ELU, GELU, SiLU, Mish, Hardswish,
//                Hardsigmoid, Softplus.
// An in-place activation's output is its input's storage, so it costs no new memory — but what
// its backward keeps depends on the formula (PyTorch 1.13, saved_tensors_hooks):
//   relu_, leaky_relu_, elu_ have formulas in terms of the result, and keep it (they read the
//   input's sign from it, so PyTorch's backward refuses leaky_relu_ and elu_ with a negative
//   slope or alpha, which flips that sign: a located error when training);
//   hardtanh_ (ReLU6), silu_, mish_, hardswish_, hardsigmoid_ need the input's old values, so
//   autograd clones the input before overwriting it and keeps the clone: a new input-sized tensor.
#include <sstream>

#include "common.hpp"

namespace nnmem::layers {
namespace {

enum class Keeps { Input, Output };
enum class InPlace { No, KeepsResult, KeepsClone };  // whether `inplace` exists, and what it keeps
enum class Dtypes {
  Float,       // floating point only ("not implemented for 'Long'")
  FloatOrInt,  // clamps (relu, hardtanh): integers too, in their own dtype; not bool
  AnyToFloat,  // sigmoid, tanh: integers and bool give the default dtype, float32
};

struct Activation {
  const char* type;
  const char* summary;
  Keeps keeps;
  InPlace inplace;
  Dtypes dtypes;
  std::vector<AttrDef> extra_attrs;
  const char* negative_scale = nullptr;  // the attribute scaling x < 0, when `inplace` exists
};

TensorType activation_output(const LayerCall& call, Dtypes dtypes) {
  TensorType out = call.input();
  if (dtypes == Dtypes::Float) require_float(call);
  if (dtypes == Dtypes::FloatOrInt && out.dtype == DType::Bool)
    throw LayerError("expected a floating-point or integer input, found bool");
  // torch.get_default_dtype(), whatever the model's dtype: .half() does not change it.
  if (dtypes == Dtypes::AnyToFloat && !is_floating(out.dtype)) out.dtype = DType::Float32;
  return out;
}

// The backward of leaky_relu_ and elu_ reads x's sign from the result; a negative scale of
// x < 0 flips it, and PyTorch refuses ("In-place leakyReLu backward calculation is triggered
// with a negative slope which is not supported"; 0 and -0.0 pass, torch 1.13 and 2.13).
void check_result_sign(const LayerCall& call, const char* negative_scale) {
  if (!negative_scale || !(call.attrs.real(negative_scale) < 0)) return;
  std::ostringstream found;
  found << call.attrs.real(negative_scale);
  throw LayerError(std::string("in place, ") + negative_scale + " must be at least 0 to train (PyTorch's in-place backward "
                       "reads the input's sign from the result, which a negative value flips), found " + found.str() +
                       "; set inplace: false",
                   negative_scale);
}

LayerResult infer_activation(const LayerCall& call, Keeps keeps, InPlace kind, Dtypes dtypes, const char* negative_scale) {
  const bool inplace = kind != InPlace::No && call.attrs.flag("inplace");
  LayerResult res;
  res.outputs.push_back(activation_output(call, dtypes));
  res.alias = inplace ? Alias::InPlace : Alias::None;
  if (call.training() && call.input_requires_grad()) {
    if (!inplace) {
      keeps == Keeps::Output ? res.save_output(0) : res.save_input(0);
    } else if (kind == InPlace::KeepsResult) {
      check_result_sign(call, negative_scale);
      res.save_output(0);
    } else {
      res.save_extra(call.input(), "input clone", Saved::Made::Operand);
    }
  }
  return res;
}

LayerDef activation_def(Activation a) {
  std::vector<AttrDef> attrs = std::move(a.extra_attrs);
  if (a.inplace != InPlace::No) attrs.push_back(AttrDef::flag("inplace", false, "overwrite the input instead of allocating"));
  return LayerDef{
      .type = a.type,
      .summary = a.summary,
      .attrs = std::move(attrs),
      .infer = [keeps = a.keeps, kind = a.inplace, dtypes = a.dtypes, scale = a.negative_scale](const LayerCall& call) {
        return infer_activation(call, keeps, kind, dtypes, scale);
      },
  };
}

// PyTorch's legacy choice when Softmax is built without dim: 0 for 0-, 1- and 3-D inputs, else 1.
LayerResult infer_softmax(const LayerCall& call) {
  require_float(call);
  const std::size_t rank = call.shape().size();
  if (call.attrs.given("dim")) normalize_dim(call.attrs.integer("dim"), rank, "dim");
  LayerResult res;
  res.outputs.push_back(call.input());
  if (call.training() && call.input_requires_grad()) res.save_output(0);
  return res;
}

LayerDef softmax_def(const char* type, const char* summary) {
  return LayerDef{
      .type = type,
      .summary = summary,
      .attrs = {AttrDef::integer("dim", "the dimension normalised (batch is dimension 0); default: PyTorch's "
                                        "legacy choice, 0 for 1-D and 3-D inputs, else 1").optional()},
      .autocast = Autocast::Float32,        // CUDA autocast's fp32 list
      .infer = infer_softmax,
      .autocast_cpu = Autocast::Inherit,    // CPU autocast (torch 1.13) runs softmax in bfloat16
  };
}

const bool registered = [] {
  using enum Keeps;
  using enum InPlace;
  using enum Dtypes;
  const std::vector<Activation> table = {
      {"ReLU", "max(0, x)", Output, KeepsResult, FloatOrInt, {}},
      {"ReLU6", "min(max(0, x), 6)", Input, KeepsClone, FloatOrInt, {}},
      {"LeakyReLU", "x if x > 0 else negative_slope * x", Input, KeepsResult, Float,
       {AttrDef::real("negative_slope", "slope for x < 0").or_else_real(0.01)}, "negative_slope"},
      {"ELU", "x if x > 0 else alpha * (exp(x) - 1)", Input, KeepsResult, Float,
       {AttrDef::real("alpha", "scale of the negative part").or_else_real(1.0)}, "alpha"},
      {"GELU", "x * Phi(x)", Input, No, Float,
       {AttrDef::word("approximate", {"none", "tanh"}, "exact, or the tanh approximation")}},
      {"SiLU", "x * sigmoid(x) (a.k.a. swish)", Input, KeepsClone, Float, {}},
      {"Mish", "x * tanh(softplus(x))", Input, KeepsClone, Float, {}},
      {"Hardswish", "x * relu6(x + 3) / 6", Input, KeepsClone, Float, {}},
      {"Hardsigmoid", "relu6(x + 3) / 6", Input, KeepsClone, Float, {}},
      {"Softplus", "log(1 + exp(beta * x)) / beta", Input, No, Float,
       {AttrDef::real("beta", "sharpness").or_else_real(1.0), AttrDef::real("threshold", "linear above this").or_else_real(20.0)}},
      {"Sigmoid", "1 / (1 + exp(-x))", Output, No, AnyToFloat, {}},
      {"Tanh", "hyperbolic tangent", Output, No, AnyToFloat, {}},
  };
  for (const auto& a : table) register_layer(activation_def(a));
  register_layer(softmax_def("Softmax", "exp(x) / sum(exp(x)) along dim"));
  register_layer(softmax_def("LogSoftmax", "log(softmax(x)) along dim"));
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
