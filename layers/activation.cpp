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
#include "elementwise.hpp"

namespace nnmem::layers {
namespace {

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
