#include "source_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include "../descriptor.hpp"

namespace nnmem::raw {

namespace {

[[noreturn]] void too_large(const SourcePath& path, const std::string& size, std::int64_t max_bytes) {
  throw Error({path, 0, 0}, "the file is " + size + " bytes; specs larger than " + with_commas(max_bytes) +
                                " bytes are refused");
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the UTF-8 sequence starting at s[i], or 0 if it is not a valid one: no
// overlong forms, no UTF-16 surrogates (U+D800..U+DFFF), nothing above U+10FFFF (the Unicode
// Standard's table 3-7 of well-formed byte sequences).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) len = 3, lo = 0xA0;
  else if (c == 0xED) len = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF) len = 3;
  else if (c == 0xF0) len = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) len = 4, hi = 0x8F;
  else return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (!is_continuation(byte(k))) return 0;
  return len;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A plain mapping key at the start of `s` ("inplace: true" -> "inplace"), or "".
std::string_view leading_key(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '-' || s[i] == '.'))
    ++i;
  if (i == 0 || i >= s.size() || s[i] != ':') return {};
  if (i + 1 < s.size() && s[i + 1] != ' ' && s[i + 1] != '\t' && s[i + 1] != '\r') return {};
  return s.substr(0, i);
}

std::size_t indent_of(std::string_view line) {
  const std::size_t n = line.find_first_not_of(' ');
  return n == std::string_view::npos ? line.size() : n;
}

bool is_blank_or_comment(std::string_view line) {
  const std::size_t n = line.find_first_not_of(" \t\r");
  return n == std::string_view::npos || line[n] == '#';
}

}  // namespace

std::string read_spec_file(const std::string& path, std::int64_t max_bytes) {
  const auto fail = [&](const std::string& what) { throw Error({path, 0, 0}, what + ": " + std::strerror(errno)); };
  // Opening a FIFO for reading waits until a program opens it for writing — forever, if none
  // does. O_NONBLOCK opens it at once (a named FIFO, an anonymous pipe such as /dev/stdin or a
  // regular file alike); reads then block as usual, until a connected writer closes.
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  const int fd = file.fd;
  if (fd < 0) fail("cannot open the file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot read the file");
  if (S_ISDIR(st.st_mode)) throw Error({path, 0, 0}, "is a directory, not a spec file");
  // A regular file's size is known before reading it: refuse an enormous one at once.
  if (S_ISREG(st.st_mode) && st.st_size > max_bytes) too_large(path, with_commas(st.st_size), max_bytes);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) fail("cannot read the file");
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read the file");
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    // Stop as soon as the limit is passed: a pipe may never end.
    if (static_cast<std::int64_t>(text.size()) > max_bytes) too_large(path, "more than " + with_commas(max_bytes), max_bytes);
  }
  // A FIFO that no program had open for writing reads as empty, at once.
  if (text.empty() && S_ISFIFO(st.st_mode))
    throw Error({path, 0, 0}, "the pipe or FIFO gave no data: no program had it open for writing, or none wrote to it "
                              "(nnmem does not wait for a writer to open it)");
  return text;
}

SourceText::SourceText(std::string_view text, SourcePath file, std::int64_t max_bytes)
    : text_(text), file_(std::move(file)) {
  if (static_cast<std::int64_t>(text.size()) > max_bytes)
    too_large(file_, with_commas(static_cast<long long>(text.size())), max_bytes);
  using std::literals::string_view_literals::operator""sv;  // the BOMs hold NUL bytes
  if (starts_with(text, "\xFF\xFE\x00\x00"sv) || starts_with(text, "\x00\x00\xFE\xFF"sv))
    throw Error({file_, 1, 1}, "the file is UTF-32 (it starts with a UTF-32 byte order mark); a spec must be UTF-8");
  if (starts_with(text, "\xFF\xFE") || starts_with(text, "\xFE\xFF"))
    throw Error({file_, 1, 1}, "the file is UTF-16 (it starts with a UTF-16 byte order mark); a spec must be UTF-8");
  // yaml-cpp skips a UTF-8 byte order mark without counting it, and so does an editor.
  const std::size_t start = starts_with(text, "\xEF\xBB\xBF") ? 3 : 0;
  line_starts_.push_back(start);
  int line = 1, column = 1;
  for (std::size_t i = start; i < text.size();) {
    const std::size_t len = utf8_length(text, i);
    if (len == 0) {
      std::ostringstream msg;
      msg << "the file is not valid UTF-8: byte 0x" << std::hex << static_cast<int>(static_cast<unsigned char>(text[i]))
          << " cannot appear here";
      throw Error({file_, line, column}, msg.str());
    }
    if (text[i] == '\0') throw Error({file_, line, column}, "the file contains a NUL byte; a spec is a text file");
    if (text[i] == '\n') {
      ++line;
      column = 1;
      line_starts_.push_back(i + 1);
    } else {
      ++column;
    }
    i += len;
  }
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i % kCheckpoint == 0) chars_at_.push_back(chars);
    if (!is_continuation(static_cast<unsigned char>(text[i]))) ++chars;
  }
}

std::size_t SourceText::chars_before(std::size_t offset) const {
  if (chars_at_.empty()) return 0;
  const std::size_t k = std::min(offset / kCheckpoint, chars_at_.size() - 1);
  std::size_t chars = chars_at_[k];
  for (std::size_t i = k * kCheckpoint; i < offset; ++i)
    if (!is_continuation(static_cast<unsigned char>(text_[i]))) ++chars;
  return chars;
}

std::string_view SourceText::line_text(int line) const {
  if (line < 0 || static_cast<std::size_t>(line) >= line_starts_.size()) return {};
  const auto l = static_cast<std::size_t>(line);
  const std::size_t begin = line_starts_[l];
  const std::size_t end = l + 1 < line_starts_.size() ? line_starts_[l + 1] - 1 : text_.size();
  return text_.substr(begin, end - begin);
}

std::size_t SourceText::offset(int line, int byte_column) const {
  if (line < 0 || line_starts_.empty()) return 0;
  const std::size_t l = std::min(static_cast<std::size_t>(line), line_starts_.size() - 1);
  return std::min(line_starts_[l] + static_cast<std::size_t>(std::max(byte_column, 0)), text_.size());
}

SourceLoc SourceText::loc(int line, int byte_column) const {
  const std::string_view text = line_text(line);
  const std::size_t bytes = std::min(static_cast<std::size_t>(std::max(byte_column, 0)), text.size());
  std::size_t chars = 0;
  if (bytes <= kCheckpoint) {  // the usual short line: count directly
    for (std::size_t i = 0; i < bytes; ++i)
      if (!is_continuation(static_cast<unsigned char>(text[i]))) ++chars;
  } else {
    const auto begin = static_cast<std::size_t>(text.data() - text_.data());
    chars = chars_before(begin + bytes) - chars_before(begin);
  }
  // Past the line's end (if yaml-cpp ever points there), each byte counts as a column.
  return {file_, line + 1, 1 + std::max(byte_column, 0) - static_cast<int>(bytes) + static_cast<int>(chars)};
}

char SourceText::unclosed_quote(int line, int byte_column) const {
  const std::size_t open = offset(line, byte_column);
  if (open >= text_.size()) return 0;
  const char quote = text_[open];
  if (quote != '"' && quote != '\'') return 0;
  for (std::size_t i = open + 1; i < text_.size(); ++i) {
    if (quote == '"' && text_[i] == '\\') {
      ++i;  // an escape: the next character is not the closing quote
    } else if (text_[i] == quote) {
      if (quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') ++i;  // '' is an escaped '
      else return 0;
    }
  }
  return quote;
}

bool SourceText::opens_collection(int line, int byte_column) const {
  const std::size_t at = offset(line, byte_column);
  return at < text_.size() && (text_[at] == '[' || text_[at] == '{' || text_[at] == '-');
}

char SourceText::char_at(int line, int byte_column) const {
  const std::size_t at = offset(line, byte_column);
  return at < text_.size() ? text_[at] : '\0';
}

bool SourceText::starts_document(int line) const {
  const std::string_view text = line_text(line);
  return starts_with(text, "---") || starts_with(text, "...");
}

std::optional<Error> SourceText::explain_syntax_error(int line, int byte_column) const {
  // A tab in the indentation of the line at fault or of the line before it.
  for (int l = line; l >= 0 && l >= line - 1; --l) {
    const std::string_view text = line_text(l);
    const std::size_t content = text.find_first_not_of(" \t");
    const std::size_t tab = text.substr(0, content).find('\t');
    if (tab != std::string_view::npos && content != std::string_view::npos)
      return Error(loc(l, static_cast<int>(tab)), "invalid YAML: a tab character indents this line; YAML indents with spaces only");
  }
  // A key indented unlike the keys above it: yaml-cpp reports it at the key, as the end of a
  // sequence or mapping it did not find.
  const std::string_view text = line_text(line);
  const std::size_t indent = indent_of(text);
  const std::string_view key = leading_key(text.substr(std::min(indent, text.size())));
  if (key.empty() || static_cast<std::size_t>(byte_column) != indent) return std::nullopt;
  int above = line - 1;
  while (above >= 0 && is_blank_or_comment(line_text(above))) --above;
  if (above < 0) return std::nullopt;
  const std::string_view previous = line_text(above);
  std::size_t key_column = indent_of(previous);
  // A line that is only "- " (an item left empty) has no key after its dash: the search finds
  // nothing (npos), which substr() would throw std::out_of_range for (found by fuzzing:
  // tests/fuzz/regressions/empty_item_before_key.yaml). Stop there; npos means "no key above".
  while (key_column != std::string_view::npos && starts_with(previous.substr(key_column), "- "))
    key_column = previous.find_first_not_of(' ', key_column + 1);
  if (key_column == std::string_view::npos || key_column == indent || leading_key(previous.substr(key_column)).empty())
    return std::nullopt;
  const auto spaces = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " space" : " spaces"); };
  return Error(loc(line, static_cast<int>(indent)),
               "invalid YAML: '" + std::string(key) + "' is indented by " + spaces(indent) +
                   ", but the other keys of this mapping (line " + std::to_string(above + 1) + ") are indented by " +
                   std::to_string(key_column));
}

SourceLoc SourceText::next_token(int line, int byte_column) const {
  std::size_t i = offset(line, byte_column) + 1;
  while (i < text_.size()) {
    if (text_[i] == '#') {
      while (i < text_.size() && text_[i] != '\n') ++i;
    } else if (text_[i] == ' ' || text_[i] == '\t' || text_[i] == '\r' || text_[i] == '\n') {
      ++i;
    } else {
      break;
    }
  }
  if (i >= text_.size()) return loc(line, byte_column);
  // Back to (line, byte column): the line is the last whose start is at or before i.
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), i);
  const auto l = static_cast<int>(it - line_starts_.begin()) - 1;
  return loc(l, static_cast<int>(i - line_starts_[static_cast<std::size_t>(l)]));
}

}  // namespace nnmem::raw
