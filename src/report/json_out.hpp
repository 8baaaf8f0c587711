// JSON written as nlohmann::json's dump(indent) lays it out, without making JSON values: for
// the arrays that grow with the model (a layer, an event; a million of them in a large model),
// appended to a string member by member and written out in large pieces (report_json.cpp).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace nnmem {

/// A string as dump() writes it: quotes, backslashes and control characters escaped.
void append_string(std::string& out, std::string_view text);

/// `text` as dump() writes it, quotes included.
std::string json_quoted(std::string_view text);

/// Whether dump() writes `text` as it is between its quotes (nothing to escape).
bool plain_string(std::string_view text);

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
  std::string& text() { return out_; }  // for what is appended whole (Members, Pointer)
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

// The members of an object whose keys are always the same, in the same order (a layer, an
// event; a million of them in a large model): each key with its separator, newline,
// indentation and colon made once, as JsonOut lays it out with the members `depth` levels in,
// not escaped and indented again per object. An object is written as
// key(0) value key(1) value … close(): JsonOut's begin('{') … end('}') for a member or more.
class Members {
 public:
  Members(std::initializer_list<std::string_view> keys, int indent, int depth);
  std::string_view key(std::size_t i) const { return keys_[i]; }  // key(0) opens the object
  std::string_view close() const { return close_; }
  std::size_t size() const { return size_; }  // every key's and close()'s bytes together

 private:
  std::vector<std::string> keys_;
  std::string close_;
  std::size_t size_ = 0;
};

// Appends to a string through a pointer: room for at most `bound` bytes made at once (one
// resize), the pieces copied in, the string cut back to what was written when it goes. For an
// object written a million times, in place of a string append (a call and a capacity check)
// per piece.
class Pointer {
 public:
  Pointer(std::string& out, std::size_t bound) : out_(out) {
    const std::size_t at = out.size();
    out.resize(at + bound);
    p_ = out.data() + at;
  }
  Pointer(const Pointer&) = delete;
  Pointer& operator=(const Pointer&) = delete;
  ~Pointer() { out_.resize(static_cast<std::size_t>(p_ - out_.data())); }

  static constexpr std::size_t kIntBytes = 20;  // "-9223372036854775808"
  Pointer& operator<<(std::string_view s) {
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  Pointer& operator<<(char c) {
    *p_++ = c;
    return *this;
  }
  Pointer& operator<<(std::int64_t n) {
    p_ = std::to_chars(p_, p_ + kIntBytes, n).ptr;
    return *this;
  }
  Pointer& operator<<(bool b) { return *this << (b ? std::string_view("true") : std::string_view("false")); }

 private:
  std::string& out_;
  char* p_;
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
