// nn.MultiheadAttention's temporaries in inference (no autograd graph), F.multi_head_attention_forward
// step by step (validation/ops_saved_mha.md, "Inference"). Private to multihead_attention*.cpp.
#pragma once

#include <cstdint>

#include "common.hpp"

namespace nnmem::layers {

struct MhaEval {
  std::int64_t l, s, src, n, e, heads, head;  // s: the key's length with added rows, src: as given
  int distinct;                              // 1: self-attention; 2: key is value; 3: all different
  bool packed, batch_first, extra_rows, need_weights, average;
  double dropout;
  DType dtype;
  // forward's masks: key_padding_mask [N, S] (none: kpm false) and attn_mask of 2 or 3
  // dimensions (0: none), each with its dtype
  bool kpm;
  DType kpm_dtype;
  int attn_dims;
  DType attn_dtype;
};

/// Fills res.forward_moments and res.forward_scratch with what forward allocates and frees
/// around its outputs, or only the masks' conversions where PyTorch takes its fast path (one
/// op). Throws LayerError for a mask on a path not measured (2.x's without the fast path).
void mha_eval_temporaries(LayerResult& res, const MhaEval& m, const TorchProfile& torch);

}  // namespace nnmem::layers
