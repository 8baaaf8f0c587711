// The names one list of layers sees while it is expanded (the spec's, or a block instance's):
// what each local name stands for, the names declared below (forward references are "defined
// later", not unknown), and the Python references its forward() holds (`var:`, `held_until:`;
// docs/memory-model.md, "Python references"). expand.cpp builds one per list.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "raw_spec.hpp"

namespace nnmem::raw {

/// A local name of a layer list, for duplicate checks.
struct Declared {
  SourceLoc loc;
  bool unnamed = false;  // named by its position
};

/// Names visible to `input:` references: one list of layers (the spec's, or a block's).
struct NameScope {
  std::string prefix;                          // "layer1.0."
  std::string owner;                           // for messages: "the spec", "block 'Bottleneck'"
  const NameScope* outer = nullptr;            // where the block is used (for a hint only)
  std::map<std::string, std::string> bound;    // local name -> qualified value name
  std::map<std::string, Declared> declared;    // every local name of this list (forward refs)
  std::optional<std::string> previous;         // what an entry without `input` reads
  std::map<std::string, std::string> vars;     // forward()'s variables (`var: x`) -> the value each holds
  std::multimap<std::string, std::string> held;  // `held_until`: a later entry's local name -> the values it lets go

  bool knows(const std::string& name) const { return bound.count(name) || declared.count(name); }

  /// Every local name of the list, before any entry is expanded; a duplicate is an Error.
  void declare(const std::vector<RawEntry>& entries);

  /// The qualified value a reference names (`NAME`, or `NAME:K`, output K); `self` is the
  /// referring entry's own name. Errors (prefixed "WHO: ") say whether the name is the entry's
  /// own, defined later, outside a block, or unknown (with a suggestion).
  std::string resolve(const Named& ref, const std::string* self, const std::string& who) const;

  /// Once the entry `local` has run and made `value`: `var: x` — x now holds it; `held_until:
  /// NAME` — it is held until the later entry NAME has run (a function's argument). Returns the
  /// values let go now (what x held before, what waited for `local`): each is referred to until
  /// the layer made last.
  std::vector<std::string> python_references(const RawEntry& e, const std::string& local, const std::string& who,
                                             const std::string& value);
};

}  // namespace nnmem::raw
