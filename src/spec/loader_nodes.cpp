#include "loader_nodes.hpp"

#include <array>
#include <string_view>

#include "nnmem/spec.hpp"

namespace nnmem::raw {
namespace {

// yaml-cpp 0.7 resolves `!!str` to the full tag; messages spell it as the user wrote it.
constexpr std::string_view kCore = "tag:yaml.org,2002:";

std::string spelled(const std::string& tag) {
  return tag.rfind(kCore, 0) == 0 ? "!!" + tag.substr(kCore.size()) : tag;
}

struct Known {
  std::string_view name;  // after "!!"
  Tagged meaning;
  const char* needs;      // for "the YAML tag '!!int' needs an integer, found …"
};
constexpr std::array<Known, 7> kKnown = {{
    {"str", Tagged::String, "a string"},
    {"int", Tagged::Int, "an integer"},
    {"float", Tagged::Float, "a number"},
    {"bool", Tagged::Bool, "true or false"},
    {"null", Tagged::Null, "nothing (null)"},
    {"seq", Tagged::List, "a list"},
    {"map", Tagged::Mapping, "a mapping"},
}};

// Whether a scalar's text is what its tag promises, read as a plain scalar would be.
bool fits(const std::string& text, Tagged meaning, const SourceLoc& at) {
  const Value v = parse_literal(text, at);
  switch (meaning) {
    case Tagged::Int: return v.kind == Value::Kind::Int;
    case Tagged::Float: return v.kind == Value::Kind::Int || v.kind == Value::Kind::Float;
    case Tagged::Bool: return v.kind == Value::Kind::Bool;
    case Tagged::Null: return v.kind == Value::Kind::Null;
    default: return true;
  }
}

}  // namespace

std::string excerpt(const std::string& s) { return s.size() <= 40 ? s : s.substr(0, 37) + "..."; }

std::string kind(const YNode& n) {
  if (n.is_map()) return "a mapping";
  if (n.is_list()) return "a list";
  if (n.is_null()) return "nothing (null)";
  if (n.scalar().empty()) return "an empty string";
  return "the scalar '" + excerpt(n.scalar()) + "'";
}

Tagged tag_of(const YNode& node, const SourceLoc& at, const std::string& who) {
  // yaml-cpp 0.7's Node::Tag(): "?" for a plain scalar or an untagged collection, "" for a
  // null, "!" for a quoted scalar and for the non-specific tag `!` (a string, or on a
  // collection nothing), and the resolved tag otherwise. A tagged scalar is never a null.
  const std::string& tag = node.tag();
  if (tag == "?" || tag.empty()) return Tagged::Plain;
  if (tag == "!") return node.is_scalar() ? Tagged::String : Tagged::Plain;
  const Known* known = nullptr;
  for (const Known& k : kKnown)
    if (tag.size() == kCore.size() + k.name.size() && tag.rfind(kCore, 0) == 0 && tag.compare(kCore.size(), k.name.size(), k.name) == 0)
      known = &k;
  if (!known)
    throw Error(at, who + "unknown YAML tag '" + spelled(tag) +
                        "'; nnmem understands !!str, !!int, !!float, !!bool, !!null, !!seq and !!map");
  bool ok = false;
  try {
    ok = known->meaning == Tagged::List      ? node.is_list()
         : known->meaning == Tagged::Mapping ? node.is_map()
                                             : node.is_scalar() && fits(node.scalar(), known->meaning, at);
  } catch (const Error& e) {  // `!!int 99999999999999999999`: too large for 64 bits
    throw Error(e.loc(), who + e.message());
  }
  if (!ok) throw Error(at, who + "the YAML tag '" + spelled(tag) + "' needs " + known->needs + ", found " + kind(node));
  return known->meaning;
}

}  // namespace nnmem::raw
