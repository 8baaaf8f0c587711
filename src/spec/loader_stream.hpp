// Text -> the one YAML document of a spec, with yaml-cpp's failures turned into located errors.
#pragma once

#include <yaml-cpp/mark.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "source_text.hpp"
#include "yaml_doc.hpp"

namespace nnmem::raw {

/// What a shared node cannot say: where each alias that is a list item (`- *layer`) stands. An
/// alias is its anchor's node, and so has the anchor's position.
class AliasItems {
 public:
  /// The position of item `index` of `list` when that item is an alias.
  std::optional<SourceLoc> at(const SourceText& source, const YNode& list, std::size_t index) const;
  void add(std::uint32_t list, std::size_t index, const YAML::Mark& alias) { marks_[{list, index}] = alias; }

 private:
  std::map<std::pair<std::uint32_t, std::size_t>, YAML::Mark> marks_;  // (the list's node, index) -> the alias
};

struct Document {
  std::unique_ptr<YamlDoc> tree;  // where `root` lives
  YNode root;
  AliasItems alias_items;
};

/// Parses `text` (already checked by `source`), in one pass of yaml-cpp's event parser, and
/// returns its only document. Syntax errors, nesting beyond yaml-cpp's limit, an empty file and
/// a file of several documents are Errors placed where the user can see them; yaml-cpp's
/// endless empty documents are stopped at the second.
Document load_single_document(const SourceText& source, const std::string& text);

}  // namespace nnmem::raw
