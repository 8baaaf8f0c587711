// nn.MultiheadAttention in inference, measured with validation/measure.py --trace-eval
// (torch_decoder, both versions) and read off F.multi_head_attention_forward:
// - the fast path, torch._native_multi_head_attention (eval, batch_first self-attention with
//   one in_proj_weight, an even num_heads, no bias_k/bias_v or zero row; 1.13 also wants
//   dropout 0): one op, nothing but its outputs;
// - 2.x, need_weights=False: the projections (self-attention's [L, N, 3E] beside its [3, L, N,
//   E] copy; a key that is the value: q and [S, N, 2E] beside its [2, S, N, E] copy; else
//   three linears), then scaled_dot_product_attention's output [N, H, L, hd] (its kernel's own
//   tensors are freed inside it), which out_proj reads in place (already in [L, N, E] order);
// - the explicit path (1.13 always, 2.x with need_weights): the projections (1.13 copies each
//   chunk of a packed projection on its own), q scaled, the scores and their softmax, the
//   attention output (bmm's) and its contiguous copy that out_proj reads; q, k, v, q scaled,
//   the softmax and the copy are the function's variables until it returns; the averaged
//   weights are 1.13's sum divided by num_heads (the sum a temporary), 2.x's mean.
#include "multihead_attention_eval.hpp"

#include <algorithm>

namespace nnmem::layers {

void mha_eval_temporaries(LayerResult& res, const MhaEval& m, const TorchProfile& torch) {
  const bool masked = m.kpm || m.attn_dims > 0;
  // 1.13's fast path also refuses any attn_mask
  const bool fast = m.batch_first && m.distinct == 1 && m.packed && !m.extra_rows && m.heads % 2 == 0 &&
                    (torch.mha_forward_2x || (m.dropout == 0.0 && m.attn_dims == 0));
  const DType t = m.dtype;
  const std::int64_t nh = checked_mul(m.n, m.heads);
  if (fast) {
    // 2.x: the bool masks made float (F._canonical_mask) and, both given, merged into [N, H, L,
    // S] (merge_masks' add) before the op; 1.13 hands the key padding mask to the op as it is.
    if (torch.mha_forward_2x) {
      if (m.kpm && m.kpm_dtype == DType::Bool) res.forward_scratch.push_back({{{m.n, m.src}, t}, "key_padding_mask made float"});
      if (m.attn_dims > 0 && m.attn_dtype == DType::Bool)
        res.forward_scratch.push_back({{m.attn_dims == 2 ? Shape{m.l, m.src} : Shape{nh, m.l, m.src}, t}, "attn_mask made float"});
      if (m.kpm && m.attn_dims > 0) res.forward_scratch.push_back({{{m.n, m.heads, m.l, m.src}, t}, "the masks merged"});
    }
    return;
  }
  if (masked && torch.mha_forward_2x)
    throw LayerError("a mask in inference off the fast path (PyTorch 2.x's sdpa or explicit path) is not measured yet");
  const std::int64_t ln = checked_mul(m.l, m.n);
  const Scratch q{{{m.l, m.n, m.e}, t}, "q"};
  const Scratch k{{{m.s, m.n, m.e}, t}, "k"}, v{{{m.s, m.n, m.e}, t}, "v"};
  const Scratch k_given{{{m.src, m.n, m.e}, t}, "k"}, v_given{{{m.src, m.n, m.e}, t}, "v"};
  // The projections, and the storages q, k and v live in afterwards.
  std::vector<Scratch> projections, qkv;
  if (m.distinct == 1 && m.packed) {
    projections.push_back({{{m.l, m.n, checked_mul(3, m.e)}, t}, "in_proj's output"});
    if (torch.mha_forward_2x) qkv.push_back({{{3, m.l, m.n, m.e}, t}, "q, k, v (in_proj's output made contiguous)"});
    else qkv = {q, k_given, v_given};  // each chunk made contiguous on its own
  } else if (m.distinct == 2 && m.packed) {
    projections.push_back({{{m.src, m.n, checked_mul(2, m.e)}, t}, "the key's projection"});  // q is in qkv
    if (torch.mha_forward_2x) qkv = {q, {{{2, m.src, m.n, m.e}, t}, "k, v (the key's projection made contiguous)"}};
    else qkv = {q, k_given, v_given};
  } else {
    qkv = {q, k_given, v_given};
  }
  if (m.extra_rows) {  // bias_k/bias_v or a zero row concatenated: k and v new tensors
    qkv.push_back(k);
    qkv.push_back(v);
  }
  std::vector<Scratch> first = projections;
  first.insert(first.end(), qkv.begin(), qkv.end());
  if (!projections.empty()) res.forward_moments.push_back(first);
  const Scratch attention{{{ln, m.e}, t}, "attention output"};
  if (torch.mha_forward_2x && !m.need_weights) {
    std::vector<Scratch> sdpa = qkv;
    sdpa.push_back(attention);
    res.forward_moments.push_back(sdpa);
    res.forward_scratch.push_back(attention);  // out_proj reads it
    return;
  }
  // 1.13's masks, after the projections: the key padding expanded over the heads ([N*H, 1, S]),
  // or-ed into a bool attn_mask, the bool result made a float mask; the expanded padding and
  // the float mask are the function's variables until it returns.
  std::vector<Scratch> masks;
  if (m.kpm) masks.push_back({{{nh, 1, m.src}, m.kpm_dtype}, "key_padding_mask over the heads"});
  const DType merged_dtype = m.attn_dims > 0 ? m.attn_dtype : m.kpm_dtype;
  const Shape merged = m.attn_dims == 0 ? Shape{nh, 1, m.src} : m.kpm || m.attn_dims == 3 ? Shape{nh, m.l, m.src} : Shape{1, m.l, m.src};
  const bool or_ed = m.kpm && m.attn_dims > 0;  // a new tensor of the attn_mask's dtype
  if (masked && merged_dtype == DType::Bool) {
    std::vector<Scratch> converting = qkv;
    converting.insert(converting.end(), masks.begin(), masks.end());
    if (or_ed) converting.push_back({{merged, DType::Bool}, "the masks or-ed"});
    converting.push_back({{merged, t}, "the mask made float"});
    res.forward_moments.push_back(converting);
    masks.push_back({{merged, t}, "the mask made float"});
  } else if (or_ed) {
    masks.push_back({{merged, t}, "the masks merged"});
  }
  const Scratch q_scaled{{{nh, m.l, m.head}, t}, "q scaled"};
  const Scratch scores{{{nh, m.l, m.s}, t}, "attention scores"}, softmax{{{nh, m.l, m.s}, t}, "attention weights (softmax)"};
  std::vector<Scratch> live = qkv;
  live.insert(live.end(), masks.begin(), masks.end());
  live.push_back(q_scaled);
  live.push_back(softmax);
  std::vector<Scratch> at_softmax = live;
  at_softmax.push_back(scores);
  res.forward_moments.push_back(at_softmax);
  live.push_back({{{ln, m.e}, t}, "attention output made contiguous"});
  std::vector<Scratch> at_copy = live;
  at_copy.push_back({{{nh, m.l, m.head}, t}, "attention output (bmm's)"});
  res.forward_moments.push_back(at_copy);
  // Beside the outputs: the variables, but the softmax when it is the weights returned.
  if (m.need_weights && !m.average) std::erase_if(live, [](const Scratch& s) { return s.what.starts_with("attention weights"); });
  if (m.need_weights && m.average && !torch.mha_forward_2x) live.push_back({{{m.n, m.l, m.s}, t}, "the weights summed over the heads"});
  res.forward_scratch.insert(res.forward_scratch.end(), live.begin(), live.end());
}

}  // namespace nnmem::layers
