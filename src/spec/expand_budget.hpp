// The budgets that bound expansion, so that no spec can make nnmem's time or memory run away:
// the layers it expands to (LoadOptions::max_layers), the entries expanded, the values those
// layers hold and the characters of their names.
// A limit reached is reported at the top-level entry being expanded, with a note where inside
// it the limit was reached.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "raw_spec.hpp"

namespace nnmem::raw {

/// Attribute values (list items included) and input references that the layers may hold, on
/// average per layer of LoadOptions::max_layers. `repeat` and blocks copy an entry's values
/// into every instance: a 4.5 KB spec of one layer holding a 1,500-item list, repeated 100,000
/// times, grew to 150 million values (about 18 GB) before any layer was checked (found in
/// review during fuzzing: tests/fuzz/regressions/repeat_big_values.yaml); many attributes or
/// many inputs did the same. The examples hold 2 to 6 per layer (ResNet-50: 506 for 175).
inline constexpr std::int64_t kValuesPerLayer = 16;
/// Entries expanded (block instances, entries skipped by `when`, layers), on average per layer
/// of LoadOptions::max_layers: a block instance is not a layer, but expanding it is work, and a
/// block of skipped entries repeated without end would make none. Nesting blocks 15 deep
/// around every layer stays within it.
inline constexpr std::int64_t kEntriesPerLayer = 16;

/// Characters of the layers' qualified names, on average per layer of LoadOptions::max_layers.
/// Every stage keeps a layer's name (the spec, the graph, the step's reports): a 1,000-character
/// name repeated 100,000 times held 6 GB before any layer was checked. The examples' names
/// average 35 characters at most (RoBERTa's), the longest 49 (encoder.layer.10.intermediate.
/// intermediate_act_fn); and the budget is per layer of the limit, not of the model.
inline constexpr std::int64_t kNameCharsPerLayer = 128;

class ExpansionBudget {
 public:
  explicit ExpansionBudget(std::int64_t max_layers)
      : max_layers_(max_layers),
        layers_left_(max_layers),
        values_limit_(per_layer(max_layers, kValuesPerLayer)),
        values_left_(values_limit_),
        entries_limit_(per_layer(max_layers, kEntriesPerLayer)),
        entries_left_(entries_limit_),
        name_chars_limit_(per_layer(max_layers, kNameCharsPerLayer)),
        name_chars_left_(name_chars_limit_) {}

  /// The top-level entry now being expanded: where a limit reached inside it is reported.
  void entering(const SourceLoc& top_entry) { top_entry_ = top_entry; }

  /// The layers that may still be made.
  std::int64_t layers_left() const { return layers_left_; }

  /// Every layer made costs one (block instances and skipped entries are not layers).
  void spend_layers(const SourceLoc& at, std::int64_t count) {
    spend(layers_left_, count, at, [&] {
      return "expanding this would create more than " + with_commas(max_layers_) + " layers, the limit (raise it with --max-layers)";
    });
  }

  /// Every expanded entry costs one: a layer, a block instance, an entry skipped by `when`.
  void spend_entries(const SourceLoc& at, std::int64_t count) {
    spend(entries_left_, count, at, [&] {
      return "expanding this would expand more than " + with_commas(entries_limit_) +
             " entries (layers, block instances and entries skipped by 'when'), the limit (" +
             std::to_string(kEntriesPerLayer) + " per layer of --max-layers " + with_commas(max_layers_) + ")";
    });
  }

  /// `count` values held by the entry at `at`: input references, or a value and its items.
  void spend_values(const SourceLoc& at, std::int64_t count) {
    spend(values_left_, count, at, [&] {
      return "expanding this would create more than " + with_commas(values_limit_) +
             " attribute values and input references, the limit (" + std::to_string(kValuesPerLayer) +
             " per layer of --max-layers " + with_commas(max_layers_) + ")";
    });
  }
  void spend_values(const SourceLoc& at, const Value& value) { spend_values(at, count_values(value)); }

  /// A layer's qualified name, made at `at`.
  void spend_name(const SourceLoc& at, const std::string& qualified) {
    spend(name_chars_left_, static_cast<std::int64_t>(qualified.size()), at, [&] {
      return "expanding this would create layer names of more than " + with_commas(name_chars_limit_) +
             " characters in all, the limit (" + std::to_string(kNameCharsPerLayer) + " per layer of --max-layers " +
             with_commas(max_layers_) + "); shorten the names";
    });
  }

  /// Reports a limit (these, or another such as the blocks' depth) reached at `at`.
  [[noreturn]] void limit_reached(const SourceLoc& at, const std::string& message) const {
    if (top_entry_ && top_entry_->line != at.line) throw Error(*top_entry_, message, {{at, "the limit was reached here"}});
    throw Error(at, message);
  }

 private:
  static std::int64_t per_layer(std::int64_t max_layers, std::int64_t each) {
    return max_layers > INT64_MAX / each ? INT64_MAX : max_layers * each;
  }
  template <typename Message>
  void spend(std::int64_t& left, std::int64_t count, const SourceLoc& at, Message message) const {
    if (count <= left) {
      left -= count;
      return;
    }
    limit_reached(at, message());
  }
  static std::int64_t count_values(const Value& v) {
    std::int64_t n = 1;
    for (const auto& item : v.items) n += count_values(item);
    return n;
  }

  const std::int64_t max_layers_;
  std::int64_t layers_left_;
  const std::int64_t values_limit_;
  std::int64_t values_left_;
  const std::int64_t entries_limit_;
  std::int64_t entries_left_;
  const std::int64_t name_chars_limit_;
  std::int64_t name_chars_left_;
  std::optional<SourceLoc> top_entry_;
};

}  // namespace nnmem::raw
