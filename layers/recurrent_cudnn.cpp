// RNN, GRU and LSTM on CUDA: cuDNN's _cudnn_rnn, one call and one autograd node (CudnnRnnBackward0)
// for every layer and direction (aten/src/ATen/native/cudnn/RNN.cpp, AutocastRNN.cpp;
// derivatives.yaml). Modelled, not measured (no GPU here): the tensors are PyTorch's, read from its
// source; the reserve space's and workspaces' sizes MIOpen's arithmetic (cudnn_rnn.hpp).
#include "cudnn_rnn.hpp"

namespace nnmem::layers {

// CudnnRnnBackward0 keeps the input, h_0 (and c_0), the output, the reserve space and the weight
// buffer (the parameters themselves once flatten_parameters() has made them views of one buffer,
// as nn.RNNBase does on CUDA; so nothing of its own in full precision). CUDA autocast runs the
// call in float16 whatever its dtype (AutocastRNN.cpp casts to kHalf): the input, h_0 and c_0 are
// cast and the weights copied into one new float16 flat buffer, each kept. The forward holds a
// workspace, and with batch_first the input's time-major copy (x = input.transpose(0, 1)
// .contiguous()). Backward holds the incoming gradient's time-major copy (batch_first), zeros for
// an unused h_n's gradient (c_n's), the gradients of h_0 (c_0) it makes and autograd drops, a
// workspace, and under autocast the float16 gradients of the input and of the weights (one flat
// buffer, its views cast back to float32). The dropout state (cuDNN's RNG, made once per device
// and cached) is not counted.
void cudnn_sequence(const LayerCall& call, Cell cell, const Dims& d, bool batch_first, LayerResult& res) {
  const DType dtype = call.input().dtype;
  const bool cast = call.ctx.amp.has_value() && autocast_eligible(dtype) && dtype != DType::Float16;
  const DType run = cast ? DType::Float16 : dtype;
  for (TensorType& out : res.outputs) out.dtype = run;
  const std::int64_t size = dtype_size(run);
  const bool dropout = call.attrs.real("dropout") > 0 && call.training();
  const std::int64_t states = checked_mul(d.layers, d.dirs);
  const TensorType in{call.shape(), run};
  std::vector<TensorType> zeros = {{{states, d.n, d.out}, dtype}};
  if (cell == Cell::Lstm) zeros.push_back({{states, d.n, d.hidden}, dtype});
  std::int64_t weights = 0;
  for (const ParamDecl& p : res.params) weights = checked_add(weights, numel(p.shape));
  const TensorType weight_buf{{weights}, run};
  const TensorType workspace{{cudnn::workspace_bytes(cell, d, size)}, DType::UInt8};
  const TensorType time_major{{d.t, d.n, d.input}, run};
  const bool backward = call.training() && (call.input_requires_grad() || call.trainable);

  const TensorType reserve{{cudnn::reserve_bytes(cell, d, size, dropout)}, DType::UInt8};
  res.forward_scratch.push_back({workspace, "cuDNN's workspace (modelled)"});
  if (batch_first) res.forward_scratch.push_back({time_major, "time-major copy of the input"});
  // the module's zero h_0 (c_0): kept, or (under autocast, or without backward) alive while it runs
  if (cast || !backward)
    for (const TensorType& z : zeros) res.forward_scratch.push_back({z, "zero initial state"});
  if (!backward) {
    if (cast) {
      res.forward_scratch.push_back({in, "the input's float16 copy"});
      res.forward_scratch.push_back({weight_buf, "the weights' float16 flat buffer"});
      for (const TensorType& z : zeros) res.forward_scratch.push_back({{z.shape, run}, "zero initial state's float16 copy"});
    }
    if (call.training()) res.forward_scratch.push_back({reserve, "cuDNN's reserve space (modelled)"});
    return;
  }
  if (cast) {
    res.save_extra(in, "the input's float16 copy", Saved::Made::Separate);
    res.save_extra(weight_buf, "the weights' float16 flat buffer", Saved::Made::Separate);
  } else {
    res.save_input(0);
  }
  for (const TensorType& z : zeros)
    res.save_extra({z.shape, run}, cast ? "zero initial state's float16 copy" : "zero initial state", Saved::Made::Separate);
  res.save_output(0);
  res.save_extra(reserve, "cuDNN's reserve space (modelled)");

  if (batch_first) res.backward_scratch.push_back({{{d.t, d.n, checked_mul(d.dirs, d.out)}, run}, "time-major copy of the output's gradient"});
  for (const TensorType& z : zeros) {
    res.backward_scratch.push_back({{z.shape, run}, "final state's gradient (zeros when unused)"});
    res.backward_scratch.push_back({{z.shape, run}, "initial state's gradient (dropped)"});
  }
  res.backward_scratch.push_back({workspace, "cuDNN's workspace (modelled)"});
  if (cast) {
    if (call.input_requires_grad()) res.backward_scratch.push_back({in, "the input's float16 gradient"});
    if (call.trainable) res.backward_scratch.push_back({weight_buf, "the weights' float16 gradients, one flat buffer"});
  }
}

}  // namespace nnmem::layers
