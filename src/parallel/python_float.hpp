// Python's float(n) of an int, for the conventions that reproduce a Python estimator operation
// by operation (DeepSpeed's, Megatron-LM's): exact while |n| < 2^53; beyond, where a double
// would round and the figure would no longer be the estimator's, a SizeError.
#pragma once

#include <cstdint>
#include <string>

#include "nnmem/diagnostic.hpp"

namespace nnmem::detail {

/// n as a double, exactly; `figure` ("--convention deepspeed", "megatron": what the user asked
/// for) and `arithmetic` ("DeepSpeed's") name the figure in the error.
inline double python_float(std::int64_t n, const char* figure, const char* arithmetic) {
  constexpr std::int64_t kExact = std::int64_t{1} << 53;
  if (n >= kExact || n <= -kExact)
    throw SizeError(SourceLoc{}, std::string(figure) + ": " + with_commas(n) + " is beyond 2^53, where " +
                                     arithmetic + " float arithmetic is not exact");
  return static_cast<double>(n);
}

}  // namespace nnmem::detail
