// Text -> the one YAML document of a spec, with yaml-cpp's failures turned into located errors.
#pragma once

#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/node.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "source_text.hpp"

namespace nnmem::raw {

/// What yaml-cpp cannot say: where each alias that is a list item (`- *layer`) stands. It gives
/// an alias its anchor's node, and so the anchor's position.
class AliasItems {
 public:
  /// The position of item `index` of `list` when that item is an alias.
  std::optional<SourceLoc> at(const SourceText& source, const YAML::Node& list, std::size_t index) const;
  void add(const YAML::Mark& list, std::size_t index, const YAML::Mark& alias) { marks_[{list.pos, index}] = alias; }

 private:
  std::map<std::pair<int, std::size_t>, YAML::Mark> marks_;  // (the list's offset, index) -> the alias
};

struct Document {
  YAML::Node root;
  AliasItems alias_items;
};

/// Parses `text` (already checked by `source`) and returns its only document. Syntax errors,
/// nesting beyond yaml-cpp's limit, an empty file and a file of several documents are Errors
/// placed where the user can see them; yaml-cpp's endless empty documents never start.
Document load_single_document(const SourceText& source, const std::string& text);

}  // namespace nnmem::raw
