// One YAML node at a time: what it is, for messages, and what its tag (`!!str 3`, `!!int "4"`)
// makes it. With loader.cpp and loader_stream.cpp, the only code that sees YAML.
#pragma once

#include <string>

#include "nnmem/diagnostic.hpp"
#include "yaml_doc.hpp"

namespace nnmem::raw {

/// A scalar's text for messages, cut short when long.
std::string excerpt(const std::string& s);

/// What a node is, for "found …" in messages: "a mapping", "a list", "nothing (null)", "an
/// empty string", "the scalar 'abc'".
std::string kind(const YNode& node);

/// What a node's tag makes it. An untagged node is Plain (a plain scalar's type is read from its
/// text); a quoted scalar, or one tagged `!` or `!!str`, is a String whatever its text.
enum class Tagged { Plain, String, Int, Float, Bool, Null, List, Mapping };

/// The meaning of `node`'s tag, checked against the node. Throws Error at `at`, prefixed with
/// `who`, for a tag nnmem gives no meaning (naming it), and for one the node does not fit:
/// `!!seq` on a mapping, `!!int` on 4.5, `!!null` on 3.
Tagged tag_of(const YNode& node, const SourceLoc& at, const std::string& who);

}  // namespace nnmem::raw
