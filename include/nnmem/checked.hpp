// Overflow-checked size arithmetic: the one place where element counts and byte sizes are
// multiplied or added. Every size in nnmem is a non-negative std::int64_t; a computation that
// would not fit throws OverflowError instead of wrapping into a plausible-looking wrong number.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace nnmem {

/// Thrown when a size does not fit in a signed 64-bit integer. The library turns it into a
/// located Error naming what overflowed (a layer's tensor, the model's totals, an expression).
class OverflowError : public std::overflow_error {
 public:
  /// `operation` reads "4294967296 * 4294967296"; what() is
  /// "size overflow: 4294967296 * 4294967296 does not fit in 64 bits".
  explicit OverflowError(const std::string& operation)
      : std::overflow_error("size overflow: " + operation + " does not fit in 64 bits"), operation_(operation) {}

  /// The arithmetic that overflowed, without the "size overflow:" framing.
  const std::string& operation() const { return operation_; }

 private:
  std::string operation_;
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
