// The streaming JSON writer's out-of-line parts (json_out.hpp).
#include "json_out.hpp"

#include <cstdio>

namespace nnmem {

// A string as dump() writes it: quotes, backslashes and control characters escaped.
void append_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t from = 0;  // text[from, i) needs no escape: appended in one piece
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + from, i - from);
    from = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
    }
  }
  out.append(text.data() + from, text.size() - from);
  out += '"';
}

// Writes `v` as dump(indent) would at nesting `depth`: every line after the first indented by
// depth × indent more (JSON strings hold no raw newline, so each newline is a line's end).
void write_nested(std::ostream& os, const nlohmann::ordered_json& v, int indent, int depth) {
  const std::string text = v.dump(indent);
  if (indent < 0) {
    os << text;
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent * depth), ' ');
  std::size_t from = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
    os.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from));
    os << pad;
    from = nl + 1;
  }
  os.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

}  // namespace nnmem
