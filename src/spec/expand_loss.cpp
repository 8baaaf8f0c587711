// The spec's `loss:` terms, evaluated: which remain (`when`), their kinds and weights. The
// outputs they name are resolved by expand.cpp, which knows the layers; whether a loss fits
// its output's shape and dtype is the memory stage's question (it knows the shapes).
#include <algorithm>
#include <cmath>

#include "expand.hpp"

namespace nnmem::raw {

std::vector<LossSpec> expand_losses(const std::vector<RawLoss>& raw, const VarScope& vars) {
  static const std::vector<std::string> kinds = {"cross_entropy", "mse", "mean", "bce_with_logits", "nll",
                                                 "l1", "smooth_l1", "huber"};
  std::vector<LossSpec> out;
  for (const RawLoss& r : raw) {
    if (r.when && !evaluate_bool(*r.when, vars, "loss", "'when'")) continue;
    LossSpec l;
    l.loc = r.loc;
    const Value kind = evaluate(*r.kind, vars, "loss", r.output ? "type" : "");
    l.kind_loc = r.kind->loc;
    if (kind.kind != Value::Kind::String)
      throw Error(l.kind_loc, "loss: expected a loss type (cross_entropy, mse, mean, bce_with_logits, nll, l1, smooth_l1 or "
                              "huber), found " + kind.describe());
    if (std::find(kinds.begin(), kinds.end(), kind.text) == kinds.end())
      throw Error(l.kind_loc, "unknown loss '" + kind.text + "'" + suggestion(kind.text, kinds) +
                                  "; expected cross_entropy, mse, mean, bce_with_logits, nll, l1, smooth_l1 or huber");
    l.kind = kind.text;
    if (r.output) {
      const Value output = evaluate(*r.output, vars, "loss", "output");
      l.output_loc = r.output->loc;
      if (output.kind != Value::Kind::String || output.text.empty())
        throw Error(l.output_loc, "loss: output: expected the name of a value the model returns, found " + output.describe());
      l.output = output.text;
    }
    if (r.weight) {
      const Value w = evaluate(*r.weight, vars, "loss", "weight");
      l.weight_loc = r.weight->loc;
      const bool number = w.kind == Value::Kind::Int || w.kind == Value::Kind::Float;
      const double x = w.kind == Value::Kind::Int ? static_cast<double>(w.integer) : w.real;
      if (!number || !std::isfinite(x) || x < 0)
        throw Error(l.weight_loc, "loss: weight: expected a number >= 0 (the loss is multiplied by it), found " + w.describe());
      l.weight = x;
    }
    for (const RawAttr& a : r.attrs) l.attrs.push_back({a.name, evaluate(a.value, vars, "loss", a.name), a.key_loc});
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace nnmem::raw
