// cuDNN's RNN (PyTorch on CUDA: RNN, GRU and LSTM run as one _cudnn_rnn call for every layer and
// direction, aten/src/ATen/native/cudnn/RNN.cpp). Its backward keeps an opaque reserve space whose
// size cudnnGetRNNTrainingReserveSize / cudnnGetRNNTempSpaceSizes give and NVIDIA does not publish;
// the best published arithmetic is MIOpen's (ROCm's counterpart, which PyTorch on ROCm calls instead:
// RNNDescriptor::GetReserveSize and GetMainSolWorkspaceSize in its src/rnn.cpp), used here for both.
// Every figure here is modelled: no GPU measured it. recurrent.cpp uses it.
#pragma once

#include <cstdint>

#include "nnmem/checked.hpp"
#include "recurrent_backward.hpp"
#include "recurrent_shared.hpp"

namespace nnmem::layers::cudnn {

// MIOpen's workspaceScale: the [T·N, H] blocks a step's kernels work in per layer and direction.
inline std::int64_t workspace_scale(Cell cell) { return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 4 : 6; }

// One layer and direction's block of every step: T·N·H elements of `size` bytes, times the layers.
inline std::int64_t step_blocks(const Dims& d, std::int64_t size) {
  return checked_mul(checked_mul(d.layers, checked_mul(d.t, d.n)), checked_mul(d.hidden, size));
}

// The reserve space backward reads (MIOpen's GetReserveSize): twice the workspace's blocks (LSTM:
// its 6 blocks and one more), and with dropout between layers each lower layer's dropped output and
// its one-byte mask; times the directions.
inline std::int64_t reserve_bytes(Cell cell, const Dims& d, std::int64_t size, bool dropout) {
  const std::int64_t blocks = step_blocks(d, size);
  std::int64_t x = cell == Cell::Lstm ? checked_mul(7, blocks) : checked_mul(checked_mul(2, workspace_scale(cell)), blocks);
  if (dropout && d.layers > 1)
    x = checked_add(x, checked_mul(checked_mul(d.layers - 1, checked_mul(d.t, d.n)), checked_mul(d.hidden, checked_add(size, 1))));
  return checked_mul(x, d.dirs);
}

// The workspace a forward or backward call holds while it runs (MIOpen's GetMainSolWorkspaceSize).
inline std::int64_t workspace_bytes(Cell cell, const Dims& d, std::int64_t size) {
  return checked_mul(checked_mul(workspace_scale(cell), step_blocks(d, size)), d.dirs);
}

}  // namespace nnmem::layers::cudnn

namespace nnmem::layers {

// What the layer keeps and allocates when cuDNN runs it (recurrent_cudnn.cpp): `res` holds its
// outputs and parameters; dims as recurrent.cpp worked them out.
void cudnn_sequence(const LayerCall& call, Cell cell, const Dims& d, bool batch_first, LayerResult& res);

}  // namespace nnmem::layers
