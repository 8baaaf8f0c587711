#include "nnmem/diagnostic.hpp"

#include <algorithm>
#include <ostream>

#include "nnmem/checked.hpp"

namespace nnmem {

void throw_overflow(const char* op, std::int64_t a, std::int64_t b) {
  throw OverflowError(std::to_string(a) + " " + op + " " + std::to_string(b));
}

std::ostream& operator<<(std::ostream& os, const SourcePath& p) { return os << p.string(); }

std::string SourceLoc::str() const {
  if (!known()) return file.string();
  return file.string() + ":" + std::to_string(line) + ":" + std::to_string(column);
}

Error::Error(SourceLoc loc, std::string message, std::vector<Note> notes)
    : std::runtime_error(loc.str() + ": error: " + message),
      loc_(std::move(loc)),
      message_(std::move(message)),
      notes_(std::move(notes)) {}

std::string Error::format() const {
  std::string out = what();
  for (const auto& n : notes_) {
    // Appended piece by piece: "\n" + a temporary trips GCC 12's bogus -Wrestrict at -O2.
    out += '\n';
    out += n.loc.str();
    out += ": note: ";
    out += n.message;
  }
  return out;
}

std::string with_commas(long long value) {
  std::string digits = std::to_string(value < 0 ? -static_cast<unsigned long long>(value) : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

namespace {
// The edit distance (case-insensitive) if it is at most `limit`, else limit + 1: only the band
// of cells within `limit` of the diagonal can hold a distance that small, and a row whose every
// cell is over it ends the search. O(|a| × limit).
std::size_t edit_distance_within(const std::string& a, const std::string& b, std::size_t limit) {
  const std::size_t over = limit + 1;
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return over;
  std::vector<std::size_t> row(b.size() + 1, over);
  for (std::size_t j = 0; j <= std::min(b.size(), limit); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    const std::size_t from = i > limit ? i - limit : 1, to = std::min(b.size(), i + limit);
    std::size_t diag = row[from - 1];
    row[from - 1] = from == 1 && i <= limit ? i : over;
    std::size_t best = row[from - 1];
    for (std::size_t j = from; j <= to; ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({std::min(row[j], over) + 1, row[j - 1] + 1, diag + (same ? 0 : 1), over});
      best = std::min(best, row[j]);
      diag = up;
    }
    if (to < b.size()) row[to + 1] = over;
    if (best >= over) return over;
  }
  return std::min(row[b.size()], over);
}
}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  // Suggest only what a typo could explain: at most a third of the word's letters changed
  // (and fewer than all of them). Each candidate costs at most |word| × that many steps, and
  // less as closer ones are found; one whose length differs by more costs nothing.
  const std::size_t allowed = std::min(std::max<std::size_t>(2, word.size() / 3), word.size() - (word.empty() ? 0 : 1));
  if (word.empty()) return {};
  std::string best;
  std::size_t limit = allowed;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance_within(word, c, limit);
    if (d <= limit) {
      best = c;
      if (d == 0) break;
      limit = d - 1;  // only a closer one can replace it
    }
  }
  return best;
}

}  // namespace nnmem
