// The workspace oneDNN's LSTM keeps for backward (2.x on the CPU, float32: its rnn_utils.hpp),
// checked against 59 measured shapes (validation/probe_recurrent.py). recurrent.cpp uses it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "nnmem/checked.hpp"

namespace nnmem::layers::onednn {

inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return checked_mul(checked_add(x, m - 1) / m, m); }

// oneDNN's get_good_ld for float32: a multiple of 16 floats (64 bytes), not of 256 floats.
inline std::int64_t good_ld(std::int64_t dim) {
  const std::int64_t ld = round_up(dim, 16);
  return ld % 256 == 0 ? checked_add(ld, 16) : ld;
}

// The workspace oneDNN's LSTM keeps for backward, one layer and direction (float32): the gates
// of every step, h of every step, then (T + 1) steps of two layers' states, layer and iter diff
// states (leading dimension good_ld(max(input, hidden))) and c states and their diffs (hidden).
inline std::int64_t lstm_workspace(std::int64_t t, std::int64_t n, std::int64_t input, std::int64_t h) {
  const std::int64_t page = 4096;
  const std::int64_t steps = checked_mul(2, checked_add(t, 1));
  const std::int64_t states = checked_mul(checked_mul(steps, n), checked_mul(good_ld(std::max(input, h)), 4));
  const std::int64_t c_states = checked_mul(checked_mul(steps, n), checked_mul(h, 4));
  const std::int64_t parts[] = {checked_mul(checked_mul(t, n), checked_mul(good_ld(checked_mul(4, h)), 4)),
                                checked_mul(checked_mul(t, n), checked_mul(good_ld(h), 4)),
                                states, states, states, c_states, c_states};
  std::int64_t total = 0;
  for (std::int64_t p : parts) total = checked_add(total, round_up(p, page));
  return total;
}

}  // namespace nnmem::layers::onednn
