#include "name_scope.hpp"

#include <utility>

#include "expand.hpp"

namespace nnmem::raw {

// Every local name of a list, before any entry is expanded: a reference to a name below is
// then "defined later", not "unknown".
void NameScope::declare(const std::vector<RawEntry>& entries) {
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const bool unnamed = !entries[k].name;
    const std::string local = unnamed ? std::to_string(k) : entries[k].name->name;
    const SourceLoc at = unnamed ? entries[k].loc : entries[k].name->loc;
    const auto [it, fresh] = declared.emplace(local, Declared{at, unnamed});
    if (fresh) continue;
    const std::string line = std::to_string(it->second.loc.line);
    if (it->second.unnamed)
      throw Error(at, "duplicate layer name '" + local + "': the unnamed layer at line " + line + " is already called '" +
                          local + "' (an unnamed layer is named by its position)");
    if (unnamed)
      throw Error(at, "duplicate layer name '" + local + "': this unnamed layer is called '" + local +
                          "' by its position, but the layer at line " + line + " is already named so");
    throw Error(at, "duplicate layer name '" + local + "' (first used at line " + line + ")");
  }
}

std::string NameScope::resolve(const Named& ref, const std::string* self, const std::string& who) const {
  if (auto it = bound.find(ref.name); it != bound.end()) return it->second;
  // `NAME:K`: output K of a layer with several (an LSTM's h_n is `lstm:1`); the graph checks K.
  if (const auto colon = ref.name.rfind(':'); colon != std::string::npos && colon > 0 && colon + 1 < ref.name.size() &&
                                              ref.name.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    return resolve(Named{ref.name.substr(0, colon), ref.loc}, self, who) + ref.name.substr(colon);
  const std::string about = who.empty() ? "" : who + ": ";
  if (const auto it = removed.find(ref.name); it != removed.end())
    throw Error(ref.loc, about + "'" + ref.name + "' is removed (its when or repeat, line " + std::to_string(it->second.line) +
                             ") and reads nothing, so it stands for no value");
  if (self && ref.name == *self)
    throw Error(ref.loc, about + "'" + ref.name + "' reads its own output; a layer can only read layers above it");
  if (auto it = declared.find(ref.name); it != declared.end())
    throw Error(ref.loc, about + "'" + ref.name + "' is defined later (line " + std::to_string(it->second.loc.line) +
                             "); a layer can only read layers above it, so the graph has no cycles");
  std::string msg = about + "no layer or input named '" + ref.name + "' in " + owner;
  bool outside = false;
  for (const NameScope* s = outer; s && !outside; s = s->outer) outside = s->knows(ref.name);
  if (outside) throw Error(ref.loc, msg + " (a block sees only its inputs and its own layers)");
  std::vector<std::string> names;
  for (const auto& [n, q] : bound) names.push_back(n);
  throw Error(ref.loc, msg + suggestion(ref.name, names));
}

// The references forward()'s code holds once the entry `local` has run and made `value`:
// `var: x` — x now holds it, and what x held before is let go; `held_until: NAME` — it is held
// until the later entry NAME has run (a function's argument); `held_until: model` — until the
// model returns (an object the model makes and returns holds it: Hugging Face's DynamicCache);
// `held_until: caller` — until the function that called this block returns (a variable there
// holds it: `attn_output, _ = self.attn(x)`); what waited for `local` is let go.
std::vector<std::string> NameScope::python_references(const RawEntry& e, const std::string& local,
                                                     const std::string& who, const std::string& value, bool made) {
  std::vector<std::string> let_go;
  const auto [first, last] = held.equal_range(local);
  for (auto it = first; it != last; ++it) let_go.push_back(it->second);
  held.erase(first, last);
  if (e.var) {
    auto [it, fresh] = vars.emplace(e.var->name, value);
    if (!fresh) let_go.push_back(std::exchange(it->second, value));
  }
  if (!e.held_until) return let_go;
  const Named& until = *e.held_until;
  if (until.name == kUntilModel || until.name == kUntilCaller) {
    if (const auto it = declared.find(until.name); it != declared.end())
      throw Error(until.loc, who + ": held_until: " + until.name + " means until the " + until.name + " returns, but " +
                                 owner + " also has an entry named '" + until.name + "' (line " +
                                 std::to_string(it->second.loc.line) + "); rename that entry");
    std::vector<std::string>* holder = until.name == kUntilModel ? by_model : by_caller;
    if (!holder)
      throw Error(until.loc, who + ": held_until: caller holds the result until the function that called this block "
                                 "returns, but " + owner + " is no block; write held_until: model");
    if (made) holder->push_back(value);
    return let_go;
  }
  if (bound.count(until.name) && until.name != local)
    throw Error(until.loc, who + ": held_until names '" + until.name + "', which runs before it; name a later entry of " + owner);
  if (!declared.count(until.name) || until.name == local) {
    std::vector<std::string> names;
    for (const auto& [n, d] : declared)
      if (!bound.count(n)) names.push_back(n);
    throw Error(until.loc, who + ": held_until names '" + until.name + "', which is no later entry of " + owner +
                               suggestion(until.name, names));
  }
  held.emplace(until.name, value);
  return let_go;
}

// `share: NAME` and `tie: {PARAM: LAYER.PARAM}` name layers as `input:` does; the graph
// checks that they are layers with such parameters.
// A tie's value may be an expression; null or '' unties (tie_word_embeddings: false).
void resolve_sharing(const RawEntry& e, const NameScope& scope, const VarScope& vars, const std::string& who,
                     LayerSpec& layer) {
  if (e.share) {
    LayerLinks& links = layer.edit_links();
    links.shares = scope.resolve(*e.share, nullptr, who);
    links.shares_loc = e.share->loc;
  }
  for (const auto& [param, raw] : e.ties) {
    const Value v = evaluate(raw, vars, who, "tie: " + param.name);
    if (v.kind == Value::Kind::Null || (v.kind == Value::Kind::String && v.text.empty())) continue;
    if (v.kind != Value::Kind::String)
      throw Error(raw.loc, who + ": tie: " + param.name + " must name a parameter as LAYER.PARAM (wte.weight), or be null, found " +
                        v.describe());
    const Named target{v.text, raw.loc};
    const std::size_t dot = target.name.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == target.name.size())
      throw Error(target.loc, who + ": tie: " + param.name + " names a parameter as LAYER.PARAM (wte.weight), found '" +
                           target.name + "'");
    const Named owner{target.name.substr(0, dot), target.loc};
    layer.edit_links().ties.push_back({param.name, scope.resolve(owner, nullptr, who), target.name.substr(dot + 1), target.loc});
  }
}

}  // namespace nnmem::raw
