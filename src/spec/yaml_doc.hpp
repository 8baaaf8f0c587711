// A YAML document's nodes as yaml-cpp's parser reports them, built by loader_stream.cpp in the
// same pass that guards the text (endless documents, nesting): one array of nodes, children by
// index, an aliased node shared as yaml-cpp's NodeBuilder shares it. It replaces YAML::Node,
// whose tree costs a second parse (YAML::LoadAll) and a few shared pointers a node.
#pragma once

#include <yaml-cpp/mark.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace nnmem::raw {

class YamlDoc;

/// One node of a YamlDoc: a null, a scalar, a list or a mapping. Cheap to copy (a pointer and
/// an index); valid while its YamlDoc lives.
class YNode {
 public:
  struct Pair;
  template <typename T>
  class Range;

  bool is_null() const;
  bool is_scalar() const;
  bool is_list() const;
  bool is_map() const;
  /// A scalar's text; empty for any other node.
  const std::string& scalar() const;
  /// yaml-cpp 0.7's tag: "?" for a plain scalar or an untagged collection, "" for a null, "!"
  /// for a quoted scalar and for the non-specific tag `!`, and the resolved tag otherwise.
  const std::string& tag() const;
  /// Where the node starts (an aliased node: its anchor's position).
  YAML::Mark mark() const;
  /// A list's items, or a mapping's (key, value) pairs; 0 for a scalar or a null.
  std::size_t size() const;
  Range<YNode> items() const;  // a list's items; empty for any other node
  Range<Pair> pairs() const;   // a mapping's keys and values, in the file's order
  /// Whether a mapping has a scalar key `key` (as yaml-cpp's `node[key]` finds one).
  bool has_key(const std::string& key) const;
  /// The node's index in its document: the same for every alias of it.
  std::uint32_t id() const { return id_; }

 private:
  friend class YamlDoc;
  YNode(const YamlDoc* doc, std::uint32_t id) : doc_(doc), id_(id) {}
  const YamlDoc* doc_;
  std::uint32_t id_;
};

struct YNode::Pair {
  YNode first, second;
};

/// The children of a node, as nodes (a list) or as pairs (a mapping).
template <typename T>
class YNode::Range {
 public:
  class iterator {
   public:
    iterator(const YamlDoc* doc, const std::uint32_t* at) : doc_(doc), at_(at) {}
    T operator*() const;
    iterator& operator++() {
      at_ += std::is_same_v<T, Pair> ? 2 : 1;
      return *this;
    }
    bool operator!=(const iterator& o) const { return at_ != o.at_; }

   private:
    const YamlDoc* doc_;
    const std::uint32_t* at_;
  };
  Range(const YamlDoc* doc, const std::uint32_t* begin, const std::uint32_t* end) : doc_(doc), begin_(begin), end_(end) {}
  iterator begin() const { return {doc_, begin_}; }
  iterator end() const { return {doc_, end_}; }

 private:
  const YamlDoc* doc_;
  const std::uint32_t *begin_, *end_;
};

class YamlDoc {
 public:
  enum class Kind : std::uint8_t { Null, Scalar, List, Map };

  /// A node made by the parser's events; `tag` is interned.
  std::uint32_t add(Kind kind, const YAML::Mark& mark, const std::string& tag, std::string scalar = {});
  /// Gives collection `id` its children (a mapping's as key, value, key, value, …).
  void set_children(std::uint32_t id, const std::uint32_t* first, std::size_t count);
  YNode node(std::uint32_t id) const { return {this, id}; }
  std::size_t node_count() const { return nodes_.size(); }

 private:
  friend class YNode;
  template <typename T>
  friend class YNode::Range;
  struct Data {
    YAML::Mark mark;
    std::string scalar;
    std::uint32_t tag = 0;
    std::uint32_t first = 0, count = 0;  // children_[first, first + count)
    Kind kind = Kind::Null;
  };
  const Data& data(std::uint32_t id) const { return nodes_[id]; }

  std::vector<Data> nodes_;
  std::vector<std::uint32_t> children_;
  std::vector<std::string> tags_;
  std::unordered_map<std::string, std::uint32_t> tag_ids_;
};

inline bool YNode::is_null() const { return doc_->data(id_).kind == YamlDoc::Kind::Null; }
inline bool YNode::is_scalar() const { return doc_->data(id_).kind == YamlDoc::Kind::Scalar; }
inline bool YNode::is_list() const { return doc_->data(id_).kind == YamlDoc::Kind::List; }
inline bool YNode::is_map() const { return doc_->data(id_).kind == YamlDoc::Kind::Map; }
inline const std::string& YNode::scalar() const { return doc_->data(id_).scalar; }
inline const std::string& YNode::tag() const { return doc_->tags_[doc_->data(id_).tag]; }
inline YAML::Mark YNode::mark() const { return doc_->data(id_).mark; }
inline std::size_t YNode::size() const { return is_map() ? doc_->data(id_).count / 2 : doc_->data(id_).count; }

inline YNode::Range<YNode> YNode::items() const {
  const auto& d = doc_->data(id_);
  const std::uint32_t* first = doc_->children_.data() + d.first;
  return {doc_, first, first + (d.kind == YamlDoc::Kind::List ? d.count : 0)};
}
inline YNode::Range<YNode::Pair> YNode::pairs() const {
  const auto& d = doc_->data(id_);
  const std::uint32_t* first = doc_->children_.data() + d.first;
  return {doc_, first, first + (d.kind == YamlDoc::Kind::Map ? d.count : 0)};
}

template <>
inline YNode YNode::Range<YNode>::iterator::operator*() const {
  return doc_->node(*at_);
}
template <>
inline YNode::Pair YNode::Range<YNode::Pair>::iterator::operator*() const {
  return {doc_->node(at_[0]), doc_->node(at_[1])};
}

inline bool YNode::has_key(const std::string& key) const {
  for (const Pair kv : pairs())
    if (kv.first.is_scalar() && kv.first.scalar() == key) return true;
  return false;
}

}  // namespace nnmem::raw
