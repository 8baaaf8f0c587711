// The names one list of layers sees while it is expanded (the spec's, or a block instance's):
// what each local name stands for, the names declared below (forward references are "defined
// later", not unknown), and the Python references its forward() holds (`var:`, `held_until:`;
// docs/memory-model.md, "Python references"). expand.cpp builds one per list.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/spec.hpp"
#include "expand.hpp"
#include "raw_spec.hpp"

namespace nnmem::raw {

/// `held_until: model` and `held_until: caller`: the result lives until the model returns, or
/// until the function that called this block returns (`attn_output, _ = self.attn(x)`: `_`).
inline constexpr const char* kUntilModel = "model";
inline constexpr const char* kUntilCaller = "caller";

/// A local name of a layer list, for duplicate checks.
struct Declared {
  SourceLoc loc;
  bool unnamed = false;  // named by its position
};

/// Names visible to `input:` references: one list of layers (the spec's, or a block's).
struct NameScope {
  std::string prefix;                          // "layer1.0."
  const ModuleScope* modules = nullptr;        // the spec's list: its `scope`
  std::string owner;                           // for messages: "the spec", "block 'Bottleneck'"
  const NameScope* outer = nullptr;            // where the block is used (for a hint only)
  std::map<std::string, std::string> bound;    // local name -> qualified value name
  std::map<std::string, Declared> declared;    // every local name of this list (forward refs)
  std::map<std::string, SourceLoc> removed;    // skipped (when: false, repeat: 0) and reading nothing: no value
  std::optional<std::string> previous;         // what an entry without `input` reads
  std::map<std::string, std::string> vars;     // forward()'s variables (`var: x`) -> the value each holds
  std::multimap<std::string, std::string> held;  // `held_until`: a later entry's local name -> the values it lets go
  std::vector<std::string>* until_return = nullptr;  // held until this list's function returns (its caller's `_`)
  std::vector<std::string>* by_caller = nullptr;     // the caller's until_return (none for the spec's list)
  std::vector<std::string>* by_model = nullptr;      // held until the model returns

  /// The qualified name of the local name `local`: "layer1.0.conv1", "bert.embeddings.LayerNorm".
  std::string qualify(const std::string& local) const { return modules ? modules->qualify(local) : prefix + local; }

  bool knows(const std::string& name) const { return bound.count(name) || declared.count(name); }

  /// Every local name of the list, before any entry is expanded; a duplicate is an Error.
  void declare(const std::vector<RawEntry>& entries);

  /// The qualified value a reference names (`NAME`, or `NAME:K`, output K); `self` is the
  /// referring entry's own name. Errors (prefixed "WHO: ") say whether the name is the entry's
  /// own, defined later, outside a block, or unknown (with a suggestion).
  std::string resolve(const Named& ref, const std::string* self, const std::string& who) const;

  /// Once the entry `local` has run and made `value` (`made` false: it was skipped, and `value`
  /// is the input its name stands for): `var: x` — x now holds it; `held_until: NAME` — it is held
  /// until the later entry NAME has run (a function's argument); `held_until: model` or `caller`
  /// — until the model, or the caller of this block, returns (added to by_model or by_caller;
  /// nothing for a skipped entry, whose result does not exist). Returns the values let go now
  /// (what x held before, what waited for `local`): each is referred to until the layer made last.
  std::vector<std::string> python_references(const RawEntry& e, const std::string& local, const std::string& who,
                                             const std::string& value, bool made);
};

/// `share: NAME` and `tie: {PARAM: LAYER.PARAM}` of a layer entry, resolved in `scope` onto
/// `layer` (name_scope.cpp).
void resolve_sharing(const RawEntry& e, const NameScope& scope, const VarScope& vars, const std::string& who,
                     LayerSpec& layer);

/// The model's outputs, bound in the spec's own scope `top` once its layers are expanded:
/// `outputs:` as listed (each loss's output one of them), else the values the losses read, each
/// once, else the last layer; each loss's output resolved (expand_loss.cpp).
void bind_outputs(const RawSpec& raw, const NameScope& top, ModelSpec& spec);

}  // namespace nnmem::raw
