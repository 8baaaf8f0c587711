#include "loader_reader.hpp"

namespace nnmem::raw {

SourceLoc NodeReader::loc(const YNode& node, const SourceLoc& fallback) const {
  const YAML::Mark m = node.mark();
  if (m.is_null() || node.is_null()) return fallback;
  return src_.loc(m.line, m.column);
}

Tagged NodeReader::check_node(const YNode& n, const SourceLoc& at, const std::string& who) const {
  if (n.is_scalar() && n.tag() == "!") {
    const YAML::Mark m = n.mark();
    if (const char quote = src_.unclosed_quote(m.line, m.column))
      fail(src_.loc(m.line, m.column), "invalid YAML: the string opened by this '" + std::string(1, quote) +
                                           "' is never closed");
  }
  return tag_of(n, at, who);
}

void NodeReader::check_known(const std::string& key, const SourceLoc& at, const std::vector<std::string>& known,
                             const std::string& where) const {
  for (const auto& k : known)
    if (k == key) return;
  std::string msg = "unknown key '" + key + "' in " + where;
  if (auto near = nearest_name(key, known); !near.empty()) msg += "; did you mean '" + near + "'?";
  else {
    msg += "; expected one of:";
    for (const auto& k : known) msg += " " + k;
  }
  fail(at, msg);
}

RawValue NodeReader::scalar_or_expr(const YNode& node, const SourceLoc& at, const std::string& who) const {
  const Tagged tag = check_node(node, at, who);
  RawValue r;
  r.loc = at;
  r.literal.loc = at;
  if (node.is_null() || tag == Tagged::Null) return r;
  const std::string& s = node.scalar();
  const bool textual = tag == Tagged::Plain || tag == Tagged::String;
  if (textual && !s.empty() && s[0] == '$' && s.rfind("$$", 0) != 0) {
    set_expression(r, s.substr(1), who);
  } else if (tag == Tagged::String) {  // quoted or !!str: always a string
    r.literal.kind = Value::Kind::String;
    r.literal.text = s[0] == '$' ? s.substr(1) : s;
  } else {
    try {
      r.literal = parse_literal(s[0] == '$' && textual ? s.substr(1) : s, at);
    } catch (const Error& e) {
      fail(e.loc(), who + e.message());
    }
    if (tag == Tagged::Float && r.literal.kind == Value::Kind::Int) {
      r.literal.kind = Value::Kind::Float;
      r.literal.real = static_cast<double>(r.literal.integer);
    }
  }
  return r;
}

RawValue NodeReader::value(const YNode& node, const SourceLoc& fallback, const std::string& who) {
  return copy_value(node, fallback, who, fallback, 1);
}

RawValue NodeReader::copy_value(const YNode& node, const SourceLoc& fallback, const std::string& who,
                                const SourceLoc& used_at, int depth) {
  if (--values_left_ < 0)
    fail(used_at, who + "YAML aliases (*name) expand this value into more values than the file has characters; "
                        "write it out instead");
  if (depth > kMaxValueDepth)
    fail(used_at, who + "YAML aliases (*name) nest this value more than " + std::to_string(kMaxValueDepth) +
                      " levels deep; does an anchored list hold its own alias?");
  const SourceLoc at = loc(node, fallback);
  if (!node.is_list() && !node.is_map()) return scalar_or_expr(node, at, who);
  check_node(node, at, who);
  RawValue r;
  r.loc = at;
  r.is_map = node.is_map();
  r.is_list = node.is_list();
  if (r.is_list)
    for (const YNode item : node.items()) r.items.push_back(copy_value(item, at, who, used_at, depth + 1));
  return r;
}

Named NodeReader::name(const YNode& node, const SourceLoc& fallback, const std::string& what) const {
  const SourceLoc at = loc(node, fallback);
  check_node(node, at, what + ": ");
  if (!node.is_scalar() || node.scalar().empty())
    fail(at, what + " must be a non-empty name, found " + kind(node));
  return {node.scalar(), at};
}

std::vector<Named> NodeReader::names(const YNode& node, const SourceLoc& fallback, const std::string& what,
                                     bool allow_empty) const {
  std::vector<Named> out;
  if (node.is_list()) {
    for (const YNode item : node.items()) out.push_back(name(item, loc(node, fallback), what));
    if (out.empty() && !allow_empty) fail(loc(node, fallback), what + " must name at least one value");
  } else {
    out.push_back(name(node, fallback, what));
  }
  return out;
}

}  // namespace nnmem::raw
