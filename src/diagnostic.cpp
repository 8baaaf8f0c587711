#include "nnmem/diagnostic.hpp"

#include <algorithm>

#include "nnmem/checked.hpp"

namespace nnmem {

void throw_overflow(const char* op, std::int64_t a, std::int64_t b) {
  throw OverflowError(std::to_string(a) + " " + op + " " + std::to_string(b));
}

std::string SourceLoc::str() const {
  if (!known()) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
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
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // Suggest only what a typo could explain: at most a third of the word's letters changed.
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= allowed && best_distance < word.size() ? best : std::string{};
}

}  // namespace nnmem
