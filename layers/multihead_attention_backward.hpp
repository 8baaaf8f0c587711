// nn.MultiheadAttention's backward as PyTorch's engine runs it, node by node (layer.hpp's
// BackwardEvent; measured, validation/ops_saved_mha.md). Private to multihead_attention*.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "common.hpp"

namespace nnmem::layers {

// What the program needs: the sizes, where PyTorch's forward went, and which of the layer's
// saved entries (LayerResult::saved) and parameters each node lets go of or makes (-1: none).
struct MhaBackward {
  std::int64_t l, s, n, e, heads, head;
  DType dtype;
  DType math;  // the attention's dtype: 2.x's CPU math composite runs a 16-bit dtype's in float32
  bool batch_first, dropout, torch2;  // torch2: TorchProfile::mha_forward_2x
  bool flash;                         // 2.x's CPU flash kernel, else the explicit path
  int input, packed, q_scaled, k, v, wrapped, softmax, mask, dropped, attention_output;  // saved entries
  int lse, float_mask;  // the flash kernel's log-sum-exp and the float mask it was given
  int in_proj_copy, out_proj_copy;  // the weights as kept (autocast's copies): saved entries
  int in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias;                      // parameters
};

// Self-attention with one in_proj_weight on the explicit path (1.13) or, 2.x with
// need_weights=False, sdpa's math composite or the CPU's flash kernel; with or without masks.
std::vector<BackwardEvent> mha_backward(const MhaBackward& b);

}  // namespace nnmem::layers
