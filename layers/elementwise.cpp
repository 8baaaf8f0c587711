#include "elementwise.hpp"

#include <sstream>

namespace nnmem::layers {

namespace {

// The backward of leaky_relu_ and elu_ (also celu_) reads x's sign from the result; a negative
// scale of x < 0 flips it, and PyTorch refuses ("In-place leakyReLu backward calculation is
// triggered with a negative slope which is not supported"; 0 and -0.0 pass, torch 1.13 and 2.13).
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

// PyTorch's legacy choice when Softmax is built without dim: 0 for 0-, 1- and 3-D inputs, else 1.
// Softmin is softmax(-x): the negated input lives while the softmax runs, and in backward the
// negation's gradient is computed from the softmax's (validation/ops_saved_zoo.md).
LayerResult infer_softmax(const LayerCall& call, bool negated) {
  require_float(call);
  const std::size_t rank = call.shape().size();
  if (call.attrs.given("dim")) normalize_dim(call.attrs.integer("dim"), rank, "dim");
  LayerResult res;
  res.outputs.push_back(call.input());
  if (negated) res.forward_scratch.push_back({call.input(), "negated input"});
  if (call.training() && call.input_requires_grad()) {
    res.save_output(0);
    if (negated) res.backward_scratch.push_back({call.input(), "softmax's gradient"});
  }
  return res;
}

}  // namespace

LayerDef softmax_def(const char* type, const char* summary, bool negated) {
  return LayerDef{
      .type = type,
      .summary = summary,
      .attrs = {AttrDef::integer("dim", "the dimension normalised (batch is dimension 0); default: PyTorch's "
                                        "legacy choice, 0 for 1-D and 3-D inputs, else 1").optional(),
                AttrDef::word("dtype", {"none", "float32", "float16", "bfloat16", "float64", "float"},
                              "F.softmax's dtype: the input is cast to it first (a copy while the op runs), the result "
                              "is in it, under autocast too (float: the model's; none, PyTorch's None: the input's)")
                    .or_else_word("none")},
      .autocast = Autocast::Float32,        // CUDA autocast's fp32 list
      .infer = [negated](const LayerCall& call) { return infer_softmax(call, negated); },
      .autocast_cpu = Autocast::Inherit,    // CPU autocast (1.13 and 2.13) runs softmax in bfloat16
      // F.softmax(x, dim, dtype=D): x.to(D) first, the result in D (autocast does not cast it)
      .own_dtype = [](const Attrs& a, const Context& ctx) -> std::optional<DType> {
        const std::string& word = a.text("dtype");
        if (word == "none") return std::nullopt;
        return word == "float" ? ctx.float_dtype : *parse_dtype(word);
      },
  };
}

TensorType activation_output(const LayerCall& call, Dtypes dtypes) {
  TensorType out = call.input();
  if (dtypes == Dtypes::Float) require_float(call);
  if (dtypes == Dtypes::FloatOrInt && out.dtype == DType::Bool)
    throw LayerError("expected a floating-point or integer input, found bool");
  // torch.get_default_dtype(), whatever the model's dtype: .half() does not change it.
  if (dtypes == Dtypes::AnyToFloat && !is_floating(out.dtype)) out.dtype = DType::Float32;
  return out;
}

LayerDef activation_def(Activation a) {
  std::vector<AttrDef> attrs = std::move(a.extra_attrs);
  if (a.inplace != InPlace::No) attrs.push_back(AttrDef::flag("inplace", false, "overwrite the input instead of allocating"));
  return LayerDef{
      .type = a.type,
      .summary = a.summary,
      .attrs = std::move(attrs),
      .infer = [keeps = a.keeps, kind = a.inplace, dtypes = a.dtypes, scale = a.negative_scale,
                check = std::move(a.check)](const LayerCall& call) {
        if (check) check(call.attrs);
        return infer_activation(call, keeps, kind, dtypes, scale);
      },
  };
}

}  // namespace nnmem::layers
