// What layers/recurrent.cpp (the sequences) and layers/recurrent_cells.cpp (the cells) share:
// which recurrence, its gates, and how a kept tensor and autocast's weight copies are recorded.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "common.hpp"

namespace nnmem::layers {

enum class Cell { Rnn, Gru, Lstm };

inline std::int64_t gate_count(Cell cell) { return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4; }

// Saves a tensor and returns its index in `saved`, for the program to free it.
inline int saved_extra(LayerResult& res, TensorType type, const std::string& what) {
  res.save_extra(std::move(type), what);
  return static_cast<int>(res.saved.size()) - 1;
}

// Autocast's low-precision copies of one layer and direction's weights (cached while it runs):
// the hidden addmm keeps weight_hh's (a cell's when its h needs a gradient), the input
// projection weight_ih's when its input needs a gradient; the others (and the biases') live
// while the module runs.
inline void autocast_weights(LayerResult& res, DType low, std::int64_t gates, std::int64_t layer_in, std::int64_t out, bool bias,
                             bool input_grad, const std::string& who, bool h_grad = true) {
  const TensorType w_hh{{gates, out}, low};
  if (h_grad) res.save_extra(w_hh, who + " weight_hh's low-precision copy");
  else res.forward_scratch.push_back({w_hh, who + " weight_hh's low-precision copy"});
  const TensorType w_ih{{gates, layer_in}, low};
  if (input_grad) res.save_extra(w_ih, who + " weight_ih's low-precision copy");
  else res.forward_scratch.push_back({w_ih, who + " weight_ih's low-precision copy"});
  if (bias) res.forward_scratch.push_back({{{checked_mul(2, gates)}, low}, who + " the biases' low-precision copies"});
}

}  // namespace nnmem::layers
