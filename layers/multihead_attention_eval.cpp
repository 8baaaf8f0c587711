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
  const bool fast = m.batch_first && m.distinct == 1 && m.packed && !m.extra_rows && m.heads % 2 == 0 &&
                    (torch.mha_fast_path_with_dropout || m.dropout == 0.0);
  if (fast) return;
  const DType t = m.dtype;
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
  const std::int64_t nh = checked_mul(m.n, m.heads);
  const Scratch q_scaled{{{nh, m.l, m.head}, t}, "q scaled"};
  const Scratch scores{{{nh, m.l, m.s}, t}, "attention scores"}, softmax{{{nh, m.l, m.s}, t}, "attention weights (softmax)"};
  std::vector<Scratch> live = qkv;
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
