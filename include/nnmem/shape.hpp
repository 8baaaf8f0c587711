// Tensor shapes and types. Shapes always include the batch dimension once a graph is built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnmem/checked.hpp"
#include "nnmem/dtype.hpp"

namespace nnmem {

using Shape = std::vector<std::int64_t>;

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
