// MultiheadAttention's inputs and attributes checked (multihead_attention_checks.cpp): the
// sizes the rule and its backward work with, or a LayerError naming expected and found values.
#pragma once

#include <cstdint>

#include "common.hpp"

namespace nnmem::layers {

struct MhaDims {  // L, S: the query's and the key's lengths (S with add_bias_kv's and add_zero_attn's rows); N; E
  std::int64_t l, s, n, e, heads, head, kdim, vdim;
  int distinct;  // 1: self-attention; 2: key is value; 3: all different
  int masks;     // key_padding_mask and attn_mask inputs after them
  bool packed;   // kdim == vdim == embed_dim: one in_proj_weight
};

// The query, key and value (1 to 3 distinct inputs, then the masks the attributes name), their
// widths, batch and lengths, the masks' dtypes and shapes, heads dividing embed_dim, is_causal.
MhaDims check_mha(const LayerCall& call);

}  // namespace nnmem::layers
