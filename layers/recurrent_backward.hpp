// The backward programs (layer.hpp's BackwardEvent) of the recurrent layers whose backward
// PyTorch runs as several autograd nodes, node by node as measured (validation/
// ops_saved_recurrent.md): oneDNN's LSTM (one node per layer and direction), the generic GRU
// and LSTM (step by step) and the cells.
// Private to layers/recurrent*.cpp (the generic sequences' programs in recurrent_backward.cpp, oneDNN's
// LSTM's in recurrent_onednn.cpp, the cells' in recurrent_cells_backward.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backward_program.hpp"
#include "common.hpp"

namespace nnmem::layers {

struct Dims {
  std::int64_t t, n, input, hidden, layers, dirs, proj, out;  // out: proj_size, or hidden
};

// What a cell's backward program needs to know. Parameters: 0 weight_ih, 1 weight_hh, 2 bias_ih,
// 3 bias_hh (without bias the program still names 2 and 3; the simulator skips them).
struct CellBackward {
  std::int64_t n, h;
  DType dtype;
  int saved_h;        // the saved h (the module's zeros, or input 1), -1: none
  bool sum_in_place;  // TorchProfile::grad_sum_in_place
  bool h_grad;        // input 1 (h) needs a gradient
  TensorType nh(std::int64_t k = 1) const { return {{n, checked_mul(k, h)}, dtype}; }
};

// What the generic LSTM keeps, by saved index: per layer and step, its gates, tanh(c_t), and
// c_t and h_t (read by the next step; -1 at the last); the zero h_0 and c_0; each layer's input.
struct LstmStep {
  int gates = -1, tanh_c = -1, c = -1, h = -1;
};
struct LstmSteps {
  std::vector<std::vector<LstmStep>> steps;
  int zeros_h = -1, zeros_c = -1;
  std::vector<int> layer_input;
};

// The same for the generic GRU, per layer and direction: each step's gates (3H), tanh's
// result, the clones of h − n and h_n, and h_t (-1 at the last); the zero h_0; the inputs.
struct GruStep {
  int gates = -1, tanh = -1, diff = -1, hn = -1, h = -1;
};
struct GruSteps {
  std::vector<std::vector<GruStep>> steps;
  int zeros_h = -1;
  std::vector<int> layer_input;
};

std::vector<BackwardEvent> gru_steps_backward(const Dims& d, DType dtype, bool batch_first, bool bias, bool input_grad, bool in_place,
                                              const GruSteps& kept, const std::vector<int>& first_param, const std::vector<int>& masks);
std::vector<BackwardEvent> lstm_steps_backward(const Dims& d, DType dtype, bool batch_first, bool bias, bool input_grad, const LstmSteps& kept,
                                               const std::vector<int>& first_param);
// oneDNN's LSTM (recurrent_onednn.cpp): what one layer and direction keeps (its saved indices),
// running in `low` under autocast; and the backward of them all.
std::vector<int> onednn_keep(LayerResult& res, const Dims& d, std::int64_t l, DType dtype, const std::optional<DType>& low, bool bias,
                             const std::string& who);
std::vector<BackwardEvent> onednn_backward(const Dims& d, DType dtype, const std::optional<DType>& low, bool input_grad,
                                           const std::vector<std::vector<int>>& kept, const std::vector<int>& masks,
                                           const std::vector<int>& first_param, std::int64_t groups);
std::vector<BackwardEvent> gru_cell_backward(const CellBackward& b, int gates_kept, int tanh_kept, int diff_kept, int hn_kept);
std::vector<BackwardEvent> lstm_cell_backward(const CellBackward& b, const std::vector<bool>& with_grad, int saved_c, int gates_kept,
                                              int tanh_kept, bool c_grad);

}  // namespace nnmem::layers
