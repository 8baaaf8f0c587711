// Reading one YAML node of a spec: its position, its tag, a mapping's keys (duplicates, merge
// keys), a scalar or `$expression`, a value (bounded against alias bombs and cycles), a name. The
// base of loader.cpp's Reader, which reads the spec's structure; with loader_nodes.cpp and
// loader_stream.cpp, the only code that sees YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader_nodes.hpp"
#include "loader_stream.hpp"
#include "raw_spec.hpp"
#include "source_text.hpp"

namespace nnmem::raw {

class NodeReader {
 public:
  // Without aliases each value node is at least one character of the file; the slack lets a
  // small file reuse anchored values freely.
  NodeReader(const SourceText& source, std::size_t text_bytes, const AliasItems& alias_items)
      : src_(source), alias_items_(alias_items), values_left_(static_cast<std::int64_t>(text_bytes) + kAliasSlack) {}

  SourceLoc loc(const YNode& node, const SourceLoc& fallback) const;

  [[noreturn]] void fail(const SourceLoc& at, const std::string& message) const { throw Error(at, message); }

  // Every node read passes here: its tag must be one nnmem gives a meaning, and fit the node
  // (errors prefixed with `who`). And yaml-cpp 0.7 runs a quoted string whose closing quote is
  // missing to the end of the file, swallowing the rest of the spec; say so where it opens.
  Tagged check_node(const YNode& n, const SourceLoc& at, const std::string& who) const;

  // Iterates a mapping, rejecting duplicate keys, keys that are not plain strings, and YAML
  // merge keys. `who` prefixes errors about a layer ("Conv2d 'conv1': ").
  template <typename F>
  void each_key(const YNode& map, const SourceLoc& where, const std::string& what, F&& f,
                const std::string& who = {}) const {
    if (!map.is_map()) fail(loc(map, where), what + " must be a mapping (key: value), found " + kind(map));
    std::map<std::string, SourceLoc> seen;
    for (const YNode::Pair it : map.pairs()) {
      const YNode key = it.first;
      const SourceLoc key_loc = loc(key, where);
      check_node(key, key_loc, who);
      if (!key.is_scalar()) fail(key_loc, who + "keys in " + what + " must be names, found " + kind(key));
      const std::string name = key.scalar();
      check_node(it.second, loc(it.second, key_loc), who + name + ": ");
      // yaml-cpp 0.7 does not merge: `<<` would arrive as an ordinary key holding a mapping.
      if (name == "<<" && key.tag() == "?")
        fail(key_loc, std::string("YAML merge keys ('<<') are not supported; write ") +
                          (who.empty() ? "the mapping" : "the layer's attributes") + " out in full");
      if (auto [pos, fresh] = seen.emplace(name, key_loc); !fresh)
        fail(key_loc, who + "duplicate key '" + name + "'" + (who.empty() ? " in " + what : "") +
                          " (first given at line " + std::to_string(pos->second.line) + ")");
      f(name, it.second, key_loc);
    }
  }

  void check_known(const std::string& key, const SourceLoc& at, const std::vector<std::string>& known,
                   const std::string& where) const;

  // A scalar beginning with `$` is an expression, quoted or not (quotes let an expression hold
  // YAML's own characters, as in "$index == 0 ? 2 : 1"); `$$` stands for a literal `$`.
  // `who` prefixes errors ("Linear 'fc1': out_features: ").
  // A tag says what the scalar is: `!!str 3` is the string "3", `!!float 3` the number 3.0.
  RawValue scalar_or_expr(const YNode& node, const SourceLoc& at, const std::string& who) const;

  // A scalar, a list (of values or lists), or a mapping (its contents dropped).
  RawValue value(const YNode& node, const SourceLoc& fallback, const std::string& who = {});

  Named name(const YNode& node, const SourceLoc& fallback, const std::string& what) const;

  // `allow_empty`: a layer's `inputs: []` (a Parameter, a constant) reads nothing.
  std::vector<Named> names(const YNode& node, const SourceLoc& fallback, const std::string& what,
                           bool allow_empty = false) const;

 protected:
  // An aliased node is shared (yaml_doc.hpp), but a RawValue copies it at every use, so aliases are
  // bounded twice over here. Nine levels of nine aliases (the "billion laughs") under an
  // attribute, a block parameter or an input shape were copied into 9^9 values, gigabytes
  // before any check could see them (tests/fuzz/regressions/alias_bomb_attribute.yaml): the
  // copies are counted. And an anchored list that holds its own alias (&a [*a]) is a cycle,
  // which recursed until the stack ran out (alias_cycle.yaml): the depth is bounded as yaml-cpp
  // bounds the text's. Errors are placed at the key, where the value is used: an aliased node's
  // own position is its anchor's.
  RawValue copy_value(const YNode& node, const SourceLoc& fallback, const std::string& who,
                      const SourceLoc& used_at, int depth);

  static constexpr std::int64_t kAliasSlack = 4096;
  static constexpr int kMaxValueDepth = 499;  // yaml-cpp's own limit for a document's text

  const SourceText& src_;
  const AliasItems& alias_items_;
  std::int64_t values_left_;  // value nodes value() may still copy
};

}  // namespace nnmem::raw
