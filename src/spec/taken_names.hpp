// The names the expansion has given (the model's inputs, then every layer's qualified name), to
// find a name given twice: an open-addressing table of each name's hash, who holds it and where
// it was named. The names themselves are read where they live, through a function the caller
// gives: the spec's layers grow while the table fills, so a view into them would not stay valid.
// (A std::unordered_map<std::string, …> allocated a node and a copy of every name: at 100,000
// layers, with its rehashes and frees, a quarter of a CPU estimate's time.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "nnmem/diagnostic.hpp"

namespace nnmem::raw {

class TakenNames {
 public:
  /// Who holds a name: layer `holder` of the spec (an index), or for holder < 0 the model's
  /// input -1 - holder; and where it was named (in the RawSpec, which outlives the expansion).
  struct Holder {
    std::ptrdiff_t holder = 0;
    const SourceLoc* loc = nullptr;  // nullptr: an empty slot
  };

  /// Takes `name` for `holder` and returns nullptr; or, if it is taken already, returns its holder
  /// and takes nothing. name_of(h) is the name holder h took (for h of earlier takes).
  template <class NameOf>
  const Holder* take(std::string_view name, Holder holder, const NameOf& name_of) {
    if (2 * (size_ + 1) > slots_.size()) rehash(2 * (size_ + 1));
    const std::uint64_t hash = std::hash<std::string_view>{}(name);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (!slot.taken.loc) {
        slot = {hash, holder};
        ++size_;
        return nullptr;
      }
      if (slot.hash == hash && name_of(slot.taken.holder) == name) return &slot.taken;
    }
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    Holder taken;
  };

  void rehash(std::size_t at_least) {
    std::size_t capacity = 16;
    while (capacity < at_least) capacity *= 2;
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (!s.taken.loc) continue;
      std::size_t i = s.hash & mask;
      while (slots_[i].taken.loc) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;  // a power of two of them, at most half taken
  std::size_t size_ = 0;
};

}  // namespace nnmem::raw
