// A table of text cells rendered three ways: aligned columns for a terminal, a GitHub markdown
// table, or CSV (RFC 4180 quoting). Every report with rows (layers, memory components,
// comparisons, sweeps, checkpoints) builds one and picks the rendering.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nnmem::report {

class TextTable {
 public:
  enum class Align { Left, Right };

  void column(std::string header, Align align = Align::Right);
  /// One row, a cell per column (missing cells are empty; cells past the last column are dropped).
  void row(const std::vector<std::string>& cells);
  /// A horizontal rule before the next row (terminal rendering only).
  void rule();
  bool empty() const { return rules_.empty(); }

  /// Columns padded to their widest cell, two spaces apart, a rule under the headers. A cell
  /// longer than kWidest overflows its column (the rest of its row moves right) instead of
  /// widening it: padding every row to one long cell (a Chunk's 10,000 output shapes) made the
  /// table grow as rows x that cell, 700 MB for 10,000 rows.
  std::string text() const;
  /// The same, appended to `out` (a 100,000-row table is not copied again into its report).
  void append_text(std::string& out) const;
  static constexpr std::size_t kWidest = 160;
  std::string markdown() const;
  std::string csv() const;

 private:
  std::size_t rows() const { return rules_.size(); }
  // Row r's cell c.
  std::string_view cell(std::size_t r, std::size_t c) const {
    const std::size_t k = r * headers_.size() + c;
    return std::string_view(text_).substr(ends_[k] - length(k), length(k));
  }
  std::size_t length(std::size_t k) const { return ends_[k] - (k == 0 ? 0 : ends_[k - 1]); }

  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  // The rows' cells, row by row, end to end in one string (a table of a 100,000-layer model has
  // half a million cells: a string and a vector each were most of the report's memory), and
  // where each ends.
  std::string text_;
  std::vector<std::size_t> ends_;
  std::vector<bool> rules_;  // per row: a rule before it
  bool pending_rule_ = false;
};

/// `s` padded with spaces to `width` characters (on the left when `right`).
std::string pad(const std::string& s, std::size_t width, bool right = false);

}  // namespace nnmem::report
