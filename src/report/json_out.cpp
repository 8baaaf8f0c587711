// The streaming JSON writer's out-of-line parts (json_out.hpp).
#include "json_out.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

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

std::string json_quoted(std::string_view text) {
  std::string out;
  append_string(out, text);
  return out;
}

// Eight bytes at a time (every block's description is read, a million of them in a large
// model): whether any byte of a word is below 0x20, or is '"' or '\\' (a zero after an xor), by
// the borrow tests that are exact for "any byte" (bytes of 0x80 and above never match).
bool plain_string(std::string_view text) {
  constexpr std::uint64_t ones = 0x0101010101010101, highs = 0x8080808080808080;
  const auto any_below = [](std::uint64_t w, std::uint64_t n) { return (w - n * ones) & ~w & highs; };
  const char* p = text.data();
  std::size_t n = text.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    if (any_below(w, 0x20) | any_below(w ^ ('"' * ones), 1) | any_below(w ^ ('\\' * ones), 1)) return false;
  }
  for (; n > 0; ++p, --n) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

// As JsonOut writes them: a comma before every member but the first, each on its own line
// `depth` × indent in (compact: none of that), the closing brace a level out.
Members::Members(std::initializer_list<std::string_view> keys, int indent, int depth) {
  const auto newline = [&](std::string& out, int level) {
    if (indent >= 0) out += '\n', out.append(static_cast<std::size_t>(indent * level), ' ');
  };
  for (const std::string_view key : keys) {
    std::string k(1, keys_.empty() ? '{' : ',');
    newline(k, depth);
    append_string(k, key);
    k += indent >= 0 ? ": " : ":";
    size_ += k.size();
    keys_.push_back(std::move(k));
  }
  newline(close_, depth - 1);
  close_ += '}';
  size_ += close_.size();
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
