// A spec's bytes before YAML sees them: reading the file, checking its encoding, and turning
// yaml-cpp's positions (0-based line, byte column) into the 1-based line and character column
// that an editor shows. Also the text-level explanations of YAML mistakes that yaml-cpp
// reports obscurely or not at all (tabs, misaligned keys, unclosed quotes). No yaml-cpp here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nnmem/diagnostic.hpp"

namespace nnmem::raw {

/// Reads a whole file in chunks, so pipes, FIFOs and /dev/stdin work as well as regular files.
/// Never waits for a FIFO's writer: a FIFO that none has open reads as empty, an error. Throws
/// Error (naming the file) when it cannot be opened or read, or holds more than `max_bytes`.
std::string read_spec_file(const std::string& path, std::int64_t max_bytes);

class SourceText {
 public:
  /// Throws Error unless `text` holds at most `max_bytes`, in UTF-8 without NUL bytes (UTF-16
  /// and UTF-32 files, told by their byte order marks, get a message of their own). `text`
  /// must outlive the SourceText.
  SourceText(std::string_view text, SourcePath file, std::int64_t max_bytes);

  /// The handle every location in this file shares (made once, by the caller).
  const SourcePath& file() const { return file_; }

  /// The location of yaml-cpp's (0-based) line and byte column, its column counted in
  /// characters; a UTF-8 byte order mark, which yaml-cpp skips, is not counted either.
  SourceLoc loc(int line, int byte_column) const;

  /// The quote (' or ") that opens a string at yaml-cpp's (line, byte column) and is never
  /// closed, or 0. yaml-cpp 0.7 silently runs such a string to the end of the file.
  char unclosed_quote(int line, int byte_column) const;

  /// Whether the character at (line, byte column) opens a collection: '[', '{' or a block
  /// sequence's '-'.
  bool opens_collection(int line, int byte_column) const;

  /// The byte at yaml-cpp's (line, byte column), or 0 past the end of the text.
  char char_at(int line, int byte_column) const;

  /// Whether the line (0-based) starts with a document marker: "---" or "...".
  bool starts_document(int line) const;

  /// A clearer explanation of a YAML syntax error yaml-cpp reported at (line, byte column),
  /// when the text shows a common cause: a tab in the indentation, or a key indented unlike
  /// the other keys of its mapping. std::nullopt when nothing is recognised.
  std::optional<Error> explain_syntax_error(int line, int byte_column) const;

  /// The first token after (line, byte column), skipping the character there, blanks,
  /// line breaks and comments; the same place when nothing follows.
  SourceLoc next_token(int line, int byte_column) const;

 private:
  std::string_view line_text(int line) const;
  std::size_t offset(int line, int byte_column) const;
  /// Characters (UTF-8 sequences) before a byte offset, from checkpoints: locating a node
  /// costs at most kCheckpoint bytes of counting, even on a megabyte-long line.
  std::size_t chars_before(std::size_t offset) const;

  static constexpr std::size_t kCheckpoint = 1024;

  std::string_view text_;
  SourcePath file_;
  std::vector<std::size_t> line_starts_;  // byte offset of each line's first byte
  std::vector<std::size_t> chars_at_;     // characters before byte k * kCheckpoint
};

}  // namespace nnmem::raw
