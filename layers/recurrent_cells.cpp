// The one-step cells RNNCell, LSTMCell and GRUCell (layers/recurrent.cpp describes the family
// and what each keeps; their backward programs are in recurrent_cells_backward.cpp).
#include "common.hpp"
#include "recurrent_backward.hpp"
#include "recurrent_shared.hpp"

namespace nnmem::layers {
namespace {

// A cell: x [N, input_size] and optionally h [N, hidden_size] (LSTMCell: h and c, or neither).
LayerResult infer_cell(const LayerCall& call, Cell cell) {
  require_rank(call, 2, 2, "[N, input_size]");
  require_float(call);
  const Shape& x = call.shape();
  const std::int64_t n = x[0], input = x[1], h = call.attrs.integer("hidden_size");
  check_declared(call, "input_size", input, "features in its last dimension");
  if (cell == Cell::Lstm && call.inputs.size() == 2)
    throw LayerError("takes x alone or x, h and c (PyTorch's (h, c) tuple), found 2 inputs");
  for (std::size_t i = 1; i < call.inputs.size(); ++i) {
    require_float(call, i);
    if (call.shape(i) != Shape{n, h})
      throw LayerError(std::string(i == 1 ? "h" : "c") + " must be [" + std::to_string(n) + ", " + std::to_string(h) +
                       "] (batch, hidden_size), found " + to_string(call.shape(i)));
  }
  const DType dtype = call.input().dtype;
  const std::int64_t gates = checked_mul(gate_count(cell), h);
  LayerResult res;
  res.outputs.push_back({{n, h}, dtype});
  if (cell == Cell::Lstm) res.outputs.push_back({{n, h}, dtype});
  res.params.push_back({"weight_ih", {gates, input}});
  res.params.push_back({"weight_hh", {gates, h}});
  if (call.attrs.flag("bias")) {
    res.params.push_back({"bias_ih", {gates}});
    res.params.push_back({"bias_hh", {gates}});
  }
  res.macs = checked_mul(checked_mul(n, gates), checked_add(input, h));
  if (!call.training() || !(call.any_input_requires_grad() || call.trainable)) return res;
  // The weights' gradients need x and h; without h the module passes zeros (LSTMCell: one
  // zero tensor as both h and c). Under CPU autocast (1.13 and 2.x alike, measured) GRUCell and
  // LSTMCell run their addmms on low-precision copies of x, h (the zeros' copy; GRUCell lets the
  // zeros go, LSTMCell keeps them as c) and the weights (autocast_weights); the gates, and
  // GRUCell's tanh and h_n, are low; tanh(c'), c', h - n and the output float32.
  const bool given_h = call.inputs.size() > 1, h_grad = given_h && call.input_requires_grad(1);
  const std::optional<DType> low = cell != Cell::Rnn && call.ctx.device == Device::Cpu && dtype == DType::Float32 ? call.ctx.amp : std::nullopt;
  const DType mm = low.value_or(dtype);
  const auto low_copy = [&](Shape shape, const std::string& what) {
    if (call.trainable) return saved_extra(res, {std::move(shape), mm}, what + "'s low-precision copy");
    res.forward_scratch.push_back({{std::move(shape), mm}, what + "'s low-precision copy"});
    return -1;
  };
  int saved_h = -1, zeros = -1;
  if (call.trainable && !low) res.save_input(0);
  if (!given_h && (!low || cell == Cell::Lstm)) zeros = saved_extra(res, {{n, h}, dtype}, "h (zeros)");
  else if (!given_h) res.forward_scratch.push_back({{{n, h}, dtype}, "h (zeros)"});
  if (low) {
    low_copy({n, input}, "x");
    saved_h = low_copy({n, h}, "h");
    autocast_weights(res, *low, gates, input, h, call.attrs.flag("bias"), call.input_requires_grad(), "its", h_grad);
  } else if (given_h && call.trainable) {
    res.save_input(1);
    saved_h = static_cast<int>(res.saved.size()) - 1;
  } else {
    saved_h = zeros;
  }
  const CellBackward b{n, h, dtype, saved_h, call.ctx.torch->grad_sum_in_place, h_grad};
  const bool cpu = call.ctx.device == Device::Cpu;  // CUDA's fused cell kernels: one node
  switch (cell) {
    case Cell::Rnn: res.save_output(0); break;  // one TanhBackward0 and two addmm: run as one node
    case Cell::Gru: {
      const int gates_kept = saved_extra(res, {{n, checked_mul(3, h)}, mm}, "gates");
      const int tanh_kept = saved_extra(res, {{n, h}, mm}, "tanh of the new gate");
      const int diff_kept = saved_extra(res, {{n, h}, dtype}, "h - n (an in-place op's clone)");
      const int hn_kept = saved_extra(res, {{n, h}, mm}, "h_n (an in-place op's clone)");
      if (cpu)
        res.backward_program = [b, gates_kept, tanh_kept, diff_kept, hn_kept](const std::vector<bool>&) {
          return gru_cell_backward(b, gates_kept, tanh_kept, diff_kept, hn_kept);
        };
      break;
    }
    case Cell::Lstm: {
      int saved_c = low ? zeros : -1;
      if (call.inputs.size() == 3) {
        res.save_input(2, "c");
        saved_c = static_cast<int>(res.saved.size()) - 1;
      }
      const int gates_kept = saved_extra(res, {{n, gates}, mm}, "gates");
      const int tanh_kept = saved_extra(res, {{n, h}, dtype}, "tanh(c')");
      const bool c_grad = call.inputs.size() == 3 && call.input_requires_grad(2);
      if (cpu)
        res.backward_program = [b, saved_c, gates_kept, tanh_kept, c_grad](const std::vector<bool>& with_grad) {
          return lstm_cell_backward(b, with_grad, saved_c, gates_kept, tanh_kept, c_grad);
        };
      break;
    }
  }
  return res;
}

std::vector<AttrDef> cell_attrs(Cell cell) {
  std::vector<AttrDef> a = {
      AttrDef::integer("input_size", "features of the input; inferred, checked when given").optional().at_least(1),
      AttrDef::integer("hidden_size", "features of the hidden state").needed().at_least(1),
      AttrDef::flag("bias", true, "learnable biases bias_ih and bias_hh"),
  };
  if (cell == Cell::Rnn) a.push_back(AttrDef::word("nonlinearity", {"tanh", "relu"}, "the activation").or_else_word("tanh"));
  return a;
}

const bool registered = [] {
  const struct {
    const char* type;
    const char* sequence;
    Cell cell;
  } kinds[] = {{"RNNCell", "RNN", Cell::Rnn}, {"GRUCell", "GRU", Cell::Gru}, {"LSTMCell", "LSTM", Cell::Lstm}};
  for (const auto& k : kinds) {
    const Cell cell = k.cell;
    register_layer({
        .type = k.type,
        .summary = std::string("one step of the ") + k.sequence + "; inputs x (and h" + (cell == Cell::Lstm ? " and c" : "") +
                   "); outputs h'" + (cell == Cell::Lstm ? ", c'" : ""),
        .attrs = cell_attrs(cell),
        .max_inputs = cell == Cell::Lstm ? 3 : 2,
        .infer = [cell](const LayerCall& call) { return infer_cell(call, cell); },
        .versions = cell == Cell::Rnn ? "the same in 1.13 and 2.x"
                                      : "the same tensors in 1.13 and 2.x; backward, node by node on the CPU, sums a state's "
                                        "two gradients out of place in 1.13, in place in 2.x",
    });
  }
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
