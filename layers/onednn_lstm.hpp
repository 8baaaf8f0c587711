// The workspace oneDNN's LSTM keeps for backward (2.x on the CPU: its rnn_utils.cpp/.hpp,
// set_workspace_sizes and get_good_ld), checked against 59 measured float32 shapes and 40
// bfloat16 ones (validation/probe_recurrent.py). recurrent.cpp uses it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "nnmem/checked.hpp"

namespace nnmem::layers::onednn {

inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return checked_mul(checked_add(x, m - 1) / m, m); }

// oneDNN's get_good_ld for elements of `size` bytes: a multiple of 64 bytes, plus 64 bytes when
// the count of elements divides by 256.
inline std::int64_t good_ld(std::int64_t dim, std::int64_t size) {
  const std::int64_t ld = round_up(dim, 64 / size);
  return ld % 256 == 0 ? checked_add(ld, 64 / size) : ld;
}

// The workspace oneDNN's LSTM keeps for backward, one layer and direction, its data in elements
// of `size` bytes (4: float32, 2: bfloat16, as autocast runs it): the gates of every step, h of
// every step, then (T + 1) steps of two layers' states (leading dimension good_ld(max(input,
// hidden))) and c states, in that type; the layer and iteration diff states and the c diff
// states in float32 (oneDNN accumulates in float32). Each part rounded up to a 4 KiB page.
inline std::int64_t lstm_workspace(std::int64_t t, std::int64_t n, std::int64_t input, std::int64_t h, std::int64_t size = 4) {
  const std::int64_t page = 4096;
  const std::int64_t steps = checked_mul(checked_mul(2, checked_add(t, 1)), n);
  const std::int64_t wide = std::max(input, h);
  const std::int64_t diff_states = checked_mul(steps, checked_mul(good_ld(wide, 4), 4));
  const std::int64_t parts[] = {checked_mul(checked_mul(t, n), checked_mul(good_ld(checked_mul(4, h), size), size)),
                                checked_mul(checked_mul(t, n), checked_mul(good_ld(h, size), size)),
                                checked_mul(steps, checked_mul(good_ld(wide, size), size)),
                                checked_mul(steps, checked_mul(h, size)),
                                diff_states,
                                diff_states,
                                checked_mul(steps, checked_mul(h, 4))};
  std::int64_t total = 0;
  for (std::int64_t p : parts) total = checked_add(total, round_up(p, page));
  return total;
}

}  // namespace nnmem::layers::onednn
