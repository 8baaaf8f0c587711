// oneDNN's LSTM (torch 2.x on the CPU, no proj_size; TorchProfile::lstm_onednn_on_cpu): what each
// layer and direction's MkldnnRnnLayerBackward0 keeps, and its backward, node by node, in float32
// and under CPU autocast, where it runs in bfloat16 (measured: validation/ops_saved_recurrent.md).
#include "onednn_lstm.hpp"
#include "recurrent_backward.hpp"

namespace nnmem::layers {

// Per layer and direction: its output [T, N, H] (the module's own output for the top layer of
// one direction), h and c at the last step, and the workspace, all in the dtype it runs in.
// Under autocast it runs on low-precision copies, kept too: of h_0 and c_0 (the module's float32
// zeros, cast per layer), of layer 0's input (per direction; a batch_first input cast straight
// from its transposed view, no float32 time-major copy), and of its weights and biases.
std::vector<int> onednn_keep(LayerResult& res, const Dims& d, std::int64_t l, DType dtype, const std::optional<DType>& low, bool bias,
                             const std::string& who) {
  std::vector<int> kept;
  const DType run = low.value_or(dtype);
  const auto keep = [&](TensorType type, const std::string& what) {
    res.save_extra(std::move(type), who + what);
    kept.push_back(static_cast<int>(res.saved.size()) - 1);
  };
  const std::int64_t layer_in = l == 0 ? d.input : checked_mul(d.dirs, d.hidden);
  const std::int64_t gates = checked_mul(4, d.hidden);
  if (low) {
    keep({{2, d.n, d.hidden}, run}, " h_0's and c_0's low-precision copies");
    if (l == 0) keep({{d.t, d.n, d.input}, run}, " the input's low-precision copy");
    keep({{gates, layer_in}, run}, " weight_ih's low-precision copy");
    keep({{gates, d.hidden}, run}, " weight_hh's low-precision copy");
    if (bias) keep({{2, gates}, run}, " the biases' low-precision copies");
  }
  if (l + 1 == d.layers && d.dirs == 1) {
    res.save_output(0);
    kept.push_back(static_cast<int>(res.saved.size()) - 1);
  } else {
    keep({{d.t, d.n, d.hidden}, run}, " output");
  }
  keep({{2, d.n, d.hidden}, run}, " h and c at the last step");
  keep({{onednn::lstm_workspace(d.t, d.n, layer_in, d.hidden, dtype_size(run))}, DType::UInt8}, " oneDNN workspace");
  return kept;
}

// One MkldnnRnnLayerBackward0 per layer and direction, the top layer first (measured on torch
// 2.13). Each makes its layer input's gradient, h_0's and c_0's (freed at once: the module's
// zeros need none), then the weights' and biases' gradients (the second bias's a copy of the
// first's), all in float32; then frees the incoming gradient (after the layer's last direction)
// and what it kept. Under autocast each gradient is cast to the dtype of what it is the gradient
// of (the low-precision copies) before the node ends, the float32 one freed; then the copies'
// ToCopyBackward0, the input's first, cast them back to float32, each going to .grad at once.
// Two directions' gradients of a layer input are summed in place (2.x's InputBuffer); dropout's
// backward multiplies the sum by its mask, a new tensor.
std::vector<BackwardEvent> onednn_backward(const Dims& d, DType dtype, const std::optional<DType>& low, bool input_grad,
                                           const std::vector<std::vector<int>>& kept, const std::vector<int>& masks,
                                           const std::vector<int>& first_param, std::int64_t groups) {
  std::vector<BackwardEvent> events;
  Program program(events);
  const DType run = low.value_or(dtype);
  int incoming = -1;  // -1: the output's gradient
  for (std::int64_t l = d.layers; l-- > 0;) {
    const std::int64_t layer_in = l == 0 ? d.input : checked_mul(d.dirs, d.hidden);
    const std::int64_t gates = checked_mul(4, d.hidden);
    const TensorType param_types[] = {{{gates, layer_in}, dtype}, {{gates, d.hidden}, dtype}, {{gates}, dtype}, {{gates}, dtype}};
    std::vector<int> grads;  // this layer's input's gradient, per direction
    bool input_made = false;
    for (std::int64_t dir = d.dirs; dir-- > 0;) {
      const std::size_t at = static_cast<std::size_t>(l * d.dirs + dir);
      const std::string of = " of layer " + std::to_string(l);
      int grad = -1;
      int input_low = -1;  // layer 0's input's gradient, as the low-precision copy's
      if (l == 0 && input_grad && !input_made && !low) {
        program.input_grad(0);
        input_made = true;
      } else {
        grad = program.temporary({{d.t, d.n, layer_in}, dtype}, "grad" + of + "'s input");
      }
      const int h0 = program.temporary({{d.n, d.hidden}, dtype}, "grad of h_0");
      const int c0 = program.temporary({{d.n, d.hidden}, dtype}, "grad of c_0");
      std::vector<int> low_grads;
      if (low) {
        std::vector<int> made;
        for (std::int64_t k = 0; k < groups; ++k)
          made.push_back(program.temporary(param_types[k], "grad of a weight" + of + " (float32)"));
        program.free(h0);
        program.free(c0);
        if (l > 0 || input_grad) {
          const int cast = program.temporary({{d.t, d.n, layer_in}, run}, "grad" + of + "'s input");
          program.free(std::exchange(grad, cast));
          if (l == 0) input_low = std::exchange(grad, -1);
        } else {
          program.free(std::exchange(grad, -1));
        }
        for (std::int64_t k = 0; k < groups; ++k) {
          TensorType cast = param_types[k];
          cast.dtype = run;
          low_grads.push_back(program.temporary(cast, "grad of a weight" + of));
          program.free(made[static_cast<std::size_t>(k)]);
        }
      } else {
        for (std::int64_t k = 0; k < groups; ++k) program.param_grad(first_param[at] + static_cast<int>(k));
        if (l == 0 && !input_grad && grad >= 0) program.free(std::exchange(grad, -1));
        program.free(h0);
        program.free(c0);
      }
      if (dir == 0) incoming < 0 ? program.release_grad_out(0) : program.free(incoming);
      for (int k : kept[at]) program.release(k);
      if (input_low >= 0) {  // the input copy's ToCopyBackward0
        program.input_grad(0);
        program.free(input_low);
      }
      for (std::size_t k = 0; k < low_grads.size(); ++k) {  // the weights' ToCopyBackward0, each to .grad
        program.param_grad(first_param[at] + static_cast<int>(k));
        program.free(low_grads[k]);
        program.params_done();
      }
      program.params_done();
      if (grad >= 0) grads.push_back(grad);
    }
    // A second direction's gradient is added into the first's (or into the input's gradient).
    for (std::size_t k = l == 0 ? 0 : 1; k < grads.size(); ++k) program.free(grads[k]);
    if (l == 0) break;
    incoming = grads.front();
    if (!masks.empty()) {  // dropout on layer l - 1's output
      const int dropped = program.temporary({{d.t, d.n, layer_in}, run}, "grad through dropout");
      program.free(incoming);
      program.release(masks[static_cast<std::size_t>(l - 1)]);
      incoming = dropped;
    }
  }
  return events;
}

}  // namespace nnmem::layers
