// Tensor shapes and types. Shapes always include the batch dimension once a graph is built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nnmem/checked.hpp"
#include "nnmem/dtype.hpp"
#include "nnmem/small_vector.hpp"

namespace nnmem {

/// Up to four dimensions (NCHW; most shapes a graph holds have two to four) live in the object
/// itself: every TensorType, parameter and saved tensor has one, and as a std::vector each
/// non-empty one was a heap allocation (bench/README.md, "Shapes inline"). Longer shapes spill
/// to the heap.
using Shape = SmallVector<std::int64_t, 4>;

/// The most dimensions a tensor may have, batch included. The graph refuses an input or a
/// layer output beyond it, so that a spec cannot make shapes (and the time and memory spent on
/// them) grow without bound — e.g. a repeated Unsqueeze.
inline constexpr std::size_t kMaxRank = 64;

/// Number of elements (checked).
inline std::int64_t numel(const Shape& shape) { return checked_product(shape); }

/// "[1, 64, 112, 112]"
std::string to_string(const Shape& shape);

struct TensorType {
  Shape shape;
  DType dtype = DType::Float32;

  std::int64_t numel() const { return nnmem::numel(shape); }
  std::int64_t bytes() const { return checked_mul(numel(), dtype_size(dtype)); }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

}  // namespace nnmem
