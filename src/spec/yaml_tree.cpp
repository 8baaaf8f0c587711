// YAML text -> YamlNode (include/nnmem/yaml_tree.hpp): the other formats' door to the parser,
// through the same guards as a spec (size, encoding, endless documents, nesting, several
// documents). An aliased node is shared (yaml_doc.hpp) where the tree copies it, so the copies are
// bounded: without aliases every node is at least one character of the text.
#include "nnmem/yaml_tree.hpp"

#include <string_view>
#include <unordered_set>

#include "loader_nodes.hpp"
#include "loader_stream.hpp"
#include "nnmem/spec.hpp"
#include "source_text.hpp"

namespace nnmem {
namespace {

struct Budget {
  std::size_t nodes_left;
};

YamlNode convert(const raw::YNode& node, const raw::SourceText& source, const SourceLoc& fallback, int depth, Budget& budget) {
  YamlNode out;
  out.loc = node.mark().is_null() ? fallback : source.loc(node.mark().line, node.mark().column);
  if (budget.nodes_left-- == 0) throw Error(out.loc, "aliases here copy more nodes than the file holds characters");
  if (node.tag() != "" && node.tag() != "?" && node.tag() != "!") throw Error(out.loc, "tags are not read here ('" + node.tag() + "')");
  if (node.is_null()) return out;
  if (node.is_scalar()) {
    out.kind = YamlNode::Kind::Scalar;
    out.scalar = node.scalar();
    return out;
  }
  if (depth > 64) throw Error(out.loc, "the file nests more than 64 levels deep");
  if (node.is_list()) {
    out.kind = YamlNode::Kind::List;
    for (const raw::YNode item : node.items()) out.items.push_back(convert(item, source, out.loc, depth + 1, budget));
    return out;
  }
  out.kind = YamlNode::Kind::Map;
  std::unordered_set<std::string_view> seen;  // the document's own strings (a quadratic scan took 3 s for 60,000 keys)
  for (const raw::YNode::Pair kv : node.pairs()) {
    const SourceLoc at = kv.first.mark().is_null() ? out.loc : source.loc(kv.first.mark().line, kv.first.mark().column);
    if (!kv.first.is_scalar()) throw Error(at, "a key must be a plain word, found " + raw::kind(kv.first));
    if (!seen.insert(kv.first.scalar()).second) throw Error(at, "the key '" + kv.first.scalar() + "' is given twice");
    out.keys.emplace_back(kv.first.scalar(), convert(kv.second, source, at, depth + 1, budget));
  }
  return out;
}

}  // namespace

YamlNode::YamlNode() = default;
YamlNode::YamlNode(const YamlNode&) = default;
YamlNode::YamlNode(YamlNode&&) noexcept = default;
YamlNode& YamlNode::operator=(const YamlNode&) = default;
YamlNode& YamlNode::operator=(YamlNode&&) noexcept = default;
YamlNode::~YamlNode() = default;

const YamlNode* YamlNode::find(const std::string& key) const {
  for (const auto& [k, v] : keys)
    if (k == key) return &v;
  return nullptr;
}

YamlNode parse_yaml_tree(const std::string& text, const std::string& file) {
  const raw::SourceText source(text, file, LoadOptions{}.max_file_bytes);
  const raw::Document doc = raw::load_single_document(source, text);
  Budget budget{text.size() + 16};
  return convert(doc.root, source, {source.file(), 1, 1}, 0, budget);
}

}  // namespace nnmem
