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

void TextTable::row(const std::vector<std::string>& cells) {
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    if (c < cells.size()) text_ += cells[c];
    ends_.push_back(text_.size());
  }
  rules_.push_back(pending_rule_);
  pending_rule_ = false;
}

void TextTable::rule() { pending_rule_ = true; }

std::string TextTable::text() const {
  std::string out;
  append_text(out);
  return out;
}

void TextTable::append_text(std::string& out) const {
  const std::size_t columns = headers_.size();
  std::vector<std::size_t> width(columns);
  for (std::size_t c = 0; c < columns; ++c) {
    width[c] = headers_[c].size();
    for (std::size_t r = 0; r < rows(); ++r)
      if (const std::size_t n = length(r * columns + c); n <= kWidest) width[c] = std::max(width[c], n);
  }
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  const std::string line(total > 2 ? total - 2 : 0, '-');
  out.reserve(out.size() + (rows() + 2) * total);
  // Appends a row in place, each cell padded to its column's width.
  const auto render = [&](const auto& cell) {
    for (std::size_t c = 0; c < columns; ++c) {
      const std::string_view text = cell(c);
      const bool last = c + 1 == columns;
      const std::size_t fill = last && aligns_[c] == Align::Left ? 0 : width[c] - std::min(width[c], text.size());
      if (aligns_[c] == Align::Right) out.append(fill, ' ');
      out += text;
      if (aligns_[c] == Align::Left) out.append(fill, ' ');
      if (!last) out += "  ";
    }
    out.erase(out.find_last_not_of(' ') + 1);  // an empty last column leaves no trailing spaces
    out += '\n';
  };
  render([&](std::size_t c) { return std::string_view(headers_[c]); });
  (out += line) += '\n';
  for (std::size_t r = 0; r < rows(); ++r) {
    if (rules_[r]) (out += line) += '\n';
    render([&](std::size_t c) { return cell(r, c); });
  }
}

std::string TextTable::markdown() const {
  const auto escape = [](std::string_view s) {
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
  for (std::size_t r = 0; r < rows(); ++r) {
    out += "|";
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      out += ' ';
      out += escape(cell(r, c));
      out += " |";
    }
    out += "\n";
  }
  return out;
}

std::string TextTable::csv() const {
  std::string out;
  const auto quote = [&](std::string_view s) {
    if (s.find_first_of(",\"\n") == std::string_view::npos) return void(out += s);
    out += '"';
    for (char ch : s) out += ch == '"' ? "\"\"" : std::string(1, ch);
    out += '"';
  };
  const auto line = [&](const auto& cell) {
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      if (c) out += ',';
      quote(cell(c));
    }
    out += '\n';
  };
  line([&](std::size_t c) { return std::string_view(headers_[c]); });
  for (std::size_t r = 0; r < rows(); ++r) line([&](std::size_t c) { return cell(r, c); });
  return out;
}

}  // namespace nnmem::report
