// The spec's `loss:` terms, evaluated: which remain (`when`), their kinds and weights; and,
// once the layers are expanded, the model's outputs and the losses' bound to the values they
// name. Whether a loss fits its output's shape and dtype is the memory stage's question (it
// knows the shapes).
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_set>

#include "expand.hpp"
#include "name_scope.hpp"

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

void bind_outputs(const RawSpec& raw, const NameScope& top, ModelSpec& spec) {
  for (LossSpec& l : spec.losses)
    if (!l.output.empty()) l.output = top.resolve(Named{l.output, l.output_loc}, nullptr, "loss: output");
  if (raw.outputs) {
    for (const auto& out : *raw.outputs) {
      spec.outputs.push_back(top.resolve(out, nullptr, ""));
      spec.output_locs.push_back(out.loc);
    }
    const std::unordered_set<std::string_view> returned_names(spec.outputs.begin(), spec.outputs.end());
    for (const LossSpec& l : spec.losses)
      if (!l.output.empty() && !returned_names.count(l.output)) {
        std::string returned;
        for (const auto& o : spec.outputs) returned += (returned.empty() ? "'" : ", '") + o + "'";
        throw Error(l.output_loc, "loss: output '" + l.output + "' is not one of the values the model returns (" + returned + ")");
      }
  } else if (!spec.losses.empty() && !spec.losses.front().output.empty()) {
    std::unordered_set<std::string_view> listed;  // (a search of the list per loss: 20,000 losses took 1 s)
    for (const LossSpec& l : spec.losses)  // the values the losses read, each once
      if (listed.insert(l.output).second) {
        spec.outputs.push_back(l.output);
        spec.output_locs.push_back(l.output_loc);
      }
  } else if (top.previous) {
    spec.outputs.push_back(*top.previous);
    spec.output_locs.push_back(raw.layers.back().loc);
  } else {
    throw Error(raw.layers.back().loc, "every layer is skipped by 'when: false', so there is no last layer to be the "
                                       "model's output; name the outputs in 'outputs'");
  }
}

}  // namespace nnmem::raw
