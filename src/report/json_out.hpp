// JSON written as nlohmann::json's dump(indent) lays it out, without making JSON values: for
// the arrays that grow with the model (a layer, an event; a million of them in a large model),
// appended to a string member by member and written out in large pieces (report_json.cpp).
#pragma once

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

namespace nnmem {

/// A string as dump() writes it: quotes, backslashes and control characters escaped.
void append_string(std::string& out, std::string_view text);

// JSON appended to a string as dump(indent) lays it out `depth` levels in, member by member:
// for what grows with the model (a layer, an event; a million of them in a large model), no
// JSON value is made.
class JsonOut {
 public:
  JsonOut(std::string& out, int indent, int depth) : out_(out), indent_(indent), depth_(depth) {}

  void begin(char bracket) {
    out_ += bracket;
    ++depth_;
    first_ = true;
  }
  void end(char bracket) {
    --depth_;
    if (!first_) newline();
    out_ += bracket;
    first_ = false;
  }
  JsonOut& key(std::string_view name) {
    next();
    append_string(out_, name);
    out_ += indent_ >= 0 ? ": " : ":";
    return *this;
  }
  void item() { next(); }  // an array's next element follows
  void value(std::string_view text) { append_string(out_, text); }
  void value(std::int64_t n) {
    char buf[24];
    out_.append(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, n).ptr - buf));
  }
  void value(bool b) { out_ += b ? "true" : "false"; }

 private:
  void next() {
    if (!first_) out_ += ',';
    newline();
    first_ = false;
  }
  void newline() {
    if (indent_ < 0) return;
    out_ += '\n';
    out_.append(static_cast<std::size_t>(indent_ * depth_), ' ');
  }
  std::string& out_;
  const int indent_;
  int depth_;
  bool first_ = true;
};

// An array at `depth` whose elements are appended one at a time by append(JsonOut&, item) and
// written out in large pieces, as dump(indent) would lay it out.
template <class Items, class Append>
void stream_array(std::ostream& os, const Items& items, Append append, int indent, int depth) {
  std::string buf;
  JsonOut j(buf, indent, depth);
  j.begin('[');
  for (const auto& item : items) {
    j.item();
    append(j, item);
    if (buf.size() >= (std::size_t{1} << 16)) os.write(buf.data(), static_cast<std::streamsize>(buf.size())), buf.clear();
  }
  j.end(']');
  os.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

/// Writes `v` as dump(indent) would at nesting `depth`: every line after the first indented by
/// depth × indent more.
void write_nested(std::ostream& os, const nlohmann::ordered_json& v, int indent, int depth);

}  // namespace nnmem
