// Located errors. The library never prints or exits: it throws nnmem::Error, and the caller
// decides how to show it (the CLI prints format() and exits with code 1).
#pragma once

#include <memory>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nnmem {

/// A file's path as locations name it: one immutable string shared by every copy, so that the
/// hundreds of thousands of SourceLocs a large spec expands to cost no allocation each (a path
/// longer than std::string's inline buffer, 15 characters, did). Made once per file by whoever
/// reads it (raw::SourceText for a spec): each construction from a string allocates, so a loop
/// copies the reader's handle rather than converting its string again. Copies are safe from
/// several threads (the count is a shared_ptr's), and the string is freed with its last
/// location. Compares, converts and prints as the string it holds.
class SourcePath {
 public:
  SourcePath() = default;  // "": no allocation
  SourcePath(std::string path) : path_(std::make_shared<const std::string>(std::move(path))) {}
  SourcePath(const char* path) : SourcePath(std::string(path)) {}

  const std::string& string() const { return path_ ? *path_ : empty_string(); }
  std::string_view view() const { return string(); }
  operator const std::string&() const { return string(); }
  bool empty() const { return string().empty(); }

  friend bool operator==(const SourcePath& a, const SourcePath& b) { return a.path_ == b.path_ || a.view() == b.view(); }
  friend bool operator==(const SourcePath& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const SourcePath& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const SourcePath& a, const char* b) { return a.view() == b; }
  friend std::ostream& operator<<(std::ostream& os, const SourcePath& p);

 private:
  static const std::string& empty_string() { return kEmpty; }
  static inline const std::string kEmpty;  // constant-initialised: no guard, no order problem

  std::shared_ptr<const std::string> path_;
};

/// A position in a spec file; line and column are 1-based, 0 when unknown.
struct SourceLoc {
  SourcePath file;
  int line = 0;
  int column = 0;

  bool known() const { return line > 0; }
  /// "file:line:column" (or just "file" when the position is unknown).
  std::string str() const;
};

struct Note {
  SourceLoc loc;
  std::string message;
};

class Error : public std::runtime_error {
 public:
  Error(SourceLoc loc, std::string message, std::vector<Note> notes = {});

  const SourceLoc& loc() const { return loc_; }
  const std::string& message() const { return message_; }
  const std::vector<Note>& notes() const { return notes_; }

  /// "file:line:column: error: message", then one "…: note: …" line per note.
  std::string format() const;

 private:
  SourceLoc loc_;
  std::string message_;
  std::vector<Note> notes_;
};

/// An Error caused by a size that does not fit in 64 bits (a tensor, a total): for a search
/// over batch sizes, a batch too large to count rather than a mistake in the spec.
class SizeError : public Error {
 public:
  using Error::Error;
};

/// Thousands separators: 138357544 -> "138,357,544".
std::string with_commas(long long value);

/// The candidate closest to `word` by edit distance, or "" when none is close enough to suggest.
std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace nnmem
