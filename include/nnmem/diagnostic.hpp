// Located errors. The library never prints or exits: it throws nnmem::Error, and the caller
// decides how to show it (the CLI prints format() and exits with code 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace nnmem {

/// A position in a spec file; line and column are 1-based, 0 when unknown.
struct SourceLoc {
  std::string file;
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
