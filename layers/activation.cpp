// Element-wise activations and the softmax family. They add no parameters; what they keep for
// backward is what their derivative formula reads (derivatives.yaml):
//   the output — ReLU, Sigmoid, Tanh, Softmax, LogSoftmax, and every in-place variant;
//   the input  — out-of-place ReLU6 (hardtanh), LeakyReLU, ELU, GELU, SiLU, Mish, Hardswish,
//                Hardsigmoid, Softplus.
// An in-place activation's output is its input's storage, so it costs no new memory.
#include "common.hpp"

namespace nnmem::layers {
namespace {

enum class Keeps { Input, Output };

struct Activation {
  const char* type;
  const char* summary;
  Keeps keeps;
  bool has_inplace;
  std::vector<AttrDef> extra_attrs;
};

LayerResult infer_activation(const LayerCall& call, Keeps keeps, bool has_inplace) {
  require_float(call);
  const bool inplace = has_inplace && call.attrs.flag("inplace");
  LayerResult res;
  res.outputs.push_back(call.input());
  res.alias = inplace ? Alias::InPlace : Alias::None;
  if (call.training() && call.input_requires_grad()) {
    // An in-place op cannot keep its input's old values; PyTorch's in-place variants keep the result.
    if (keeps == Keeps::Output || inplace) res.save_output(0);
    else res.save_input(0);
  }
  return res;
}

LayerDef activation_def(Activation a) {
  std::vector<AttrDef> attrs = std::move(a.extra_attrs);
  if (a.has_inplace) attrs.push_back(AttrDef::flag("inplace", false, "overwrite the input instead of allocating"));
  const Keeps keeps = a.keeps;
  const bool has_inplace = a.has_inplace;
  return LayerDef{
      .type = a.type,
      .summary = a.summary,
      .attrs = std::move(attrs),
      .infer = [keeps, has_inplace](const LayerCall& call) { return infer_activation(call, keeps, has_inplace); },
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
      .autocast = Autocast::Float32,
      .infer = infer_softmax,
  };
}

const bool registered = [] {
  const std::vector<Activation> table = {
      {"ReLU", "max(0, x)", Keeps::Output, true, {}},
      {"ReLU6", "min(max(0, x), 6)", Keeps::Input, true, {}},
      {"LeakyReLU", "x if x > 0 else negative_slope * x", Keeps::Input, true,
       {AttrDef::real("negative_slope", "slope for x < 0").or_else_real(0.01)}},
      {"ELU", "x if x > 0 else alpha * (exp(x) - 1)", Keeps::Input, true,
       {AttrDef::real("alpha", "scale of the negative part").or_else_real(1.0)}},
      {"GELU", "x * Phi(x)", Keeps::Input, false,
       {AttrDef::word("approximate", {"none", "tanh"}, "exact, or the tanh approximation")}},
      {"SiLU", "x * sigmoid(x) (a.k.a. swish)", Keeps::Input, false, {}},
      {"Mish", "x * tanh(softplus(x))", Keeps::Input, false, {}},
      {"Hardswish", "x * relu6(x + 3) / 6", Keeps::Input, false, {}},
      {"Hardsigmoid", "relu6(x + 3) / 6", Keeps::Input, false, {}},
      {"Softplus", "log(1 + exp(beta * x)) / beta", Keeps::Input, false,
       {AttrDef::real("beta", "sharpness").or_else_real(1.0), AttrDef::real("threshold", "linear above this").or_else_real(20.0)}},
      {"Sigmoid", "1 / (1 + exp(-x))", Keeps::Output, false, {}},
      {"Tanh", "hyperbolic tangent", Keeps::Output, false, {}},
  };
  for (const auto& a : table) register_layer(activation_def(a));
  register_layer(softmax_def("Softmax", "exp(x) / sum(exp(x)) along dim"));
  register_layer(softmax_def("LogSoftmax", "log(softmax(x)) along dim"));
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
