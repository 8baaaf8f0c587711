// A YAML file as a plain tree with every node's position: for the formats nnmem reads besides
// its own spec (an Ultralytics model file), which are translated into a spec. Only the spec
// stage parses YAML; this is its door for the others.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nnmem/diagnostic.hpp"

namespace nnmem {

struct YamlNode {
  enum class Kind { Null, Scalar, List, Map };
  Kind kind = Kind::Null;
  std::string scalar;                                  // Scalar: the text as written (unquoted)
  std::vector<YamlNode> items;                         // List
  std::vector<std::pair<std::string, YamlNode>> keys;  // Map, in the file's order
  SourceLoc loc;

  // Defined out of line, where YamlNode is complete: clang instantiates the implicit (constexpr
  // in C++20) destructor of vector<pair<string, YamlNode>> inside the class and refuses the
  // incomplete type.
  YamlNode();
  YamlNode(const YamlNode&);
  YamlNode(YamlNode&&) noexcept;
  YamlNode& operator=(const YamlNode&);
  YamlNode& operator=(YamlNode&&) noexcept;
  ~YamlNode();

  /// The value of `key` in a mapping, or nullptr.
  const YamlNode* find(const std::string& key) const;
};

/// Parses `text` (one document, at most LoadOptions' default size) into a tree. Syntax errors,
/// anchors and aliases, tags and several documents are Errors located in `file`.
YamlNode parse_yaml_tree(const std::string& text, const std::string& file);

}  // namespace nnmem
