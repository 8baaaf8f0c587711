// Overflow-checked size arithmetic: the one place where element counts and byte sizes are
// multiplied or added. Every size in nnmem is a non-negative std::int64_t; a computation that
// would not fit throws OverflowError instead of wrapping into a plausible-looking wrong number.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace nnmem {

/// Thrown when a size does not fit in a signed 64-bit integer. The graph builder turns it into
/// a located Error naming the layer.
class OverflowError : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

[[noreturn]] void throw_overflow(const char* op, std::int64_t a, std::int64_t b);

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow("*", a, b);
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow("+", a, b);
  return r;
}

inline std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) throw_overflow("-", a, b);
  return r;
}

/// Product of all values (1 for an empty list), checked.
inline std::int64_t checked_product(std::span<const std::int64_t> values) {
  std::int64_t r = 1;
  for (std::int64_t v : values) r = checked_mul(r, v);
  return r;
}

}  // namespace nnmem
