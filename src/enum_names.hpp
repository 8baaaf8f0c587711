// An enum's names for the command line and the JSON: one table of (value, name) pairs that
// names a value and parses a name, so each enum's words are written once. Private to src/ (the
// shared stage: any stage may include it).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace nnmem {

template <typename Enum, std::size_t N>
struct EnumNames {
  std::array<std::pair<Enum, std::string_view>, N> table;
  std::string_view name(Enum e) const {
    for (const auto& [k, n] : table)
      if (k == e) return n;
    return "?";
  }
  std::optional<Enum> parse(std::string_view s) const {
    for (const auto& [k, n] : table)
      if (n == s) return k;
    return std::nullopt;
  }
};

}  // namespace nnmem
