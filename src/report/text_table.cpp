#include "text_table.hpp"

#include <algorithm>

namespace nnmem::report {

std::string pad(const std::string& s, std::size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

void TextTable::column(std::string header, Align align) {
  headers_.push_back(std::move(header));
  aligns_.push_back(align);
}

void TextTable::row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back({std::move(cells), pending_rule_});
  pending_rule_ = false;
}

void TextTable::rule() { pending_rule_ = true; }

std::string TextTable::text() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const Row& r : rows_) width[c] = std::max(width[c], r.cells[c].size());
  }
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  const std::string line(total > 2 ? total - 2 : 0, '-');
  std::string out;
  out.reserve((rows_.size() + 2) * total);
  // Appends a row in place, each cell padded to its column's width.
  const auto render = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::size_t fill = last && aligns_[c] == Align::Left ? 0 : width[c] - std::min(width[c], cells[c].size());
      if (aligns_[c] == Align::Right) out.append(fill, ' ');
      out += cells[c];
      if (aligns_[c] == Align::Left) out.append(fill, ' ');
      if (!last) out += "  ";
    }
    out.erase(out.find_last_not_of(' ') + 1);  // an empty last column leaves no trailing spaces
    out += '\n';
  };
  render(headers_);
  (out += line) += '\n';
  for (const Row& r : rows_) {
    if (r.rule_before) (out += line) += '\n';
    render(r.cells);
  }
  return out;
}

std::string TextTable::markdown() const {
  const auto escape = [](const std::string& s) {
    std::string out;
    for (char ch : s) out += ch == '|' ? "\\|" : std::string(1, ch);
    return out;
  };
  std::string out = "|", under = "|";
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    out += ' ';  // piece by piece: a joined temporary trips GCC 12's bogus -Wrestrict
    out += escape(headers_[c]);
    out += " |";
    under += aligns_[c] == Align::Right ? "---:|" : "---|";
  }
  out += '\n';
  out += under;
  out += '\n';
  for (const Row& r : rows_) {
    out += "|";
    for (const auto& cell : r.cells) {
      out += ' ';
      out += escape(cell);
      out += " |";
    }
    out += "\n";
  }
  return out;
}

std::string TextTable::csv() const {
  const auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) out += ch == '"' ? "\"\"" : std::string(1, ch);
    return out + "\"";
  };
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c) out += ',';
      out += quote(cells[c]);
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  for (const Row& r : rows_) out += line(r.cells);
  return out;
}

}  // namespace nnmem::report
