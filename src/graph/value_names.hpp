// The values a layer can read by name (model inputs, layer outputs), found by name while the
// graph is built: an open-addressing table of views into names that outlive it (the spec's, or
// the builder's own), so that a 100,000-layer graph allocates nothing per name.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace nnmem::detail {

class ValueNames {
 public:
  /// Room for `n` names without growing.
  void reserve(std::size_t n) {
    if (2 * n > slots_.size()) rehash(2 * n);
  }
  /// Names `value` by `name` (the view must outlive the table); a name given again is moved.
  void add(std::string_view name, int value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(2 * (size_ + 1));
    auto& slot = slots_[probe(name)];
    if (slot.second < 0) ++size_;
    slot = {name, value};
  }
  /// The value named `name`, or -1.
  int find(std::string_view name) const { return slots_.empty() ? -1 : slots_[probe(name)].second; }

 private:
  // The slot holding `name`, else the empty slot where it would go (the table is never full).
  std::size_t probe(std::string_view name) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = std::hash<std::string_view>{}(name) & mask;
    while (slots_[i].second >= 0 && slots_[i].first != name) i = (i + 1) & mask;
    return i;
  }

  void rehash(std::size_t at_least) {
    std::size_t capacity = 16;
    while (capacity < at_least) capacity *= 2;
    std::vector<std::pair<std::string_view, int>> old(capacity, {std::string_view(), -1});
    old.swap(slots_);
    for (const auto& [name, value] : old)
      if (value >= 0) slots_[probe(name)] = {name, value};
  }

  std::vector<std::pair<std::string_view, int>> slots_;  // value -1: empty
  std::size_t size_ = 0;
};

}  // namespace nnmem::detail
