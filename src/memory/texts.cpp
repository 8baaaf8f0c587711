// Texts (nnmem/estimate.hpp): short texts appended to 64 KiB pieces, each kept as a view.
#include <algorithm>
#include <cstring>

#include "nnmem/estimate.hpp"

namespace nnmem {

void Texts::push_back(const std::string_view* parts, std::size_t count) {
  std::size_t bytes = 0;
  for (std::size_t k = 0; k < count; ++k) bytes += parts[k].size();
  if (bytes == 0) {  // (before any piece is made, there is none to point into)
    texts_.emplace_back();
    return;
  }
  if (used_ + bytes > kPiece) {  // a text never straddles two pieces; a longer one gets its own
    pieces_.push_back(std::make_unique<char[]>(std::max(kPiece, bytes)));
    used_ = 0;
  }
  char* const start = pieces_.back().get() + used_;
  char* at = start;
  for (std::size_t k = 0; k < count; ++k) at = std::copy(parts[k].begin(), parts[k].end(), at);
  used_ += bytes;
  texts_.emplace_back(start, bytes);
}

Texts& Texts::operator=(const Texts& other) {
  if (this == &other) return *this;
  pieces_.clear();
  texts_.clear();
  used_ = kPiece;
  texts_.reserve(other.size());
  for (const std::string_view text : other) push_back(text);
  return *this;
}

}  // namespace nnmem
