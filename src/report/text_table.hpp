// A table of text cells rendered three ways: aligned columns for a terminal, a GitHub markdown
// table, or CSV (RFC 4180 quoting). Every report with rows (layers, memory components,
// comparisons, sweeps, checkpoints) builds one and picks the rendering.
#pragma once

#include <string>
#include <vector>

namespace nnmem::report {

class TextTable {
 public:
  enum class Align { Left, Right };

  void column(std::string header, Align align = Align::Right);
  /// One row, a cell per column (missing cells are empty).
  void row(std::vector<std::string> cells);
  /// A horizontal rule before the next row (terminal rendering only).
  void rule();
  bool empty() const { return rows_.empty(); }

  /// Columns padded to their widest cell, two spaces apart, a rule under the headers.
  std::string text() const;
  std::string markdown() const;
  std::string csv() const;

 private:
  struct Row {
    std::vector<std::string> cells;
    bool rule_before = false;
  };
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<Row> rows_;
  bool pending_rule_ = false;
};

/// `s` padded with spaces to `width` characters (on the left when `right`).
std::string pad(const std::string& s, std::size_t width, bool right = false);

}  // namespace nnmem::report
