// A growing array kept in pieces of 2^Shift elements: what the step simulation appends a
// million times to (its blocks). A vector doubling its capacity holds its old and new arrays
// at once, which at 100,000 layers was a sixth of an estimate's heap peak (--device cpu);
// here growing allocates one more piece. Pieces of 4,096 (64 KiB of 16-byte blocks): with
// pieces of 1 MiB (above malloc's first mmap threshold) the 100,000-layer CUDA estimate was
// 8 MB more resident than with the vector (375 against 367 MB; 368 MB with these; why was not
// measured).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace nnmem::detail {

template <class T, std::size_t Shift = 12>
class Pieces {
 public:
  T& operator[](std::size_t k) { return pieces_[k >> Shift][k & kMask]; }
  const T& operator[](std::size_t k) const { return pieces_[k >> Shift][k & kMask]; }
  T& at(std::size_t k) {
    if (k >= size_) throw std::out_of_range("Pieces::at");
    return (*this)[k];
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The last element (there must be one).
  const T& back() const { return (*this)[size_ - 1]; }
  void push_back(const T& value) {
    if ((size_ & kMask) == 0) pieces_.push_back(std::make_unique<T[]>(kMask + 1));
    (*this)[size_++] = value;
  }
  /// The elements from k (< size()) to the end of its piece or of the array, [first, last).
  std::pair<const T*, const T*> run_from(std::size_t k) const {
    const T* first = &(*this)[k];
    return {first, first + std::min(kMask + 1 - (k & kMask), size_ - k)};
  }
  /// Whether any element equals `value`.
  bool contains(const T& value) const {
    for (std::size_t k = 0; k < size_; ++k)
      if ((*this)[k] == value) return true;
    return false;
  }

 private:
  static constexpr std::size_t kMask = (std::size_t{1} << Shift) - 1;
  std::vector<std::unique_ptr<T[]>> pieces_;
  std::size_t size_ = 0;
};

}  // namespace nnmem::detail
