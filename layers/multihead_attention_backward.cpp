// nn.MultiheadAttention's self-attention backward, node by node as the engine runs it (CPU,
// float32, batch_first; measured with validation/trace_diff.py on torch_encoder_long and
// mha_masked in 2.13 and 1.13, validation/ops_saved_mha.md):
//   ViewBackward0   the output's gradient made rows [L*N, E] (batch_first: a copy of the
//                   transposed gradient, which is then freed);
//   AddmmBackward0  out_proj: the attention output's gradient, out_proj's weight and bias
//                   gradients; frees the incoming gradient and the attention output it kept
//                   (not the flash kernel's output, which that kernel's node holds too);
// then the explicit path (1.13, 2.x's math composite):
//   BmmBackward0    attn @ v: v's gradient and the (dropped) weights' [N*H, L, S]; lets go of
//                   the weights and v (2.x: the packed q, k, v, which only v still holds);
//   MulBackward0    dropout: the softmax's gradient; lets go of the mask;
//   (Safe)SoftmaxBackward0  the scores' gradient; lets go of the softmax;
//   BmmBackward0    q @ k^T (BaddbmmBackward0 with a mask, the same tensors: the mask is
//                   added, not kept): q's and k's gradients; lets go of q scaled and k (2.x: scaled);
//   MulBackward1 x2 (2.x, q and k scaled) or DivBackward0 (1.13, q and its wrapped divisor);
//   ViewBackward0 x2  q's and k's gradients copied into [L, N, E] (v's arrives viewable);
//   (2.x's math composite in a 16-bit dtype on the CPU runs in float32: a ToCopyBackward0
//   makes the attention output's gradient float32 before attn @ v, and three make v's, k's
//   and q's the 16-bit dtype again before their copies; measured under bfloat16 autocast,
//   torch_encoder);
// or 2.x's CPU flash kernel (need_weights=False without dropout, with or without a mask):
//   ScaledDotProductFlashAttentionForCpuBackward0  q's, k's and v's gradients [N, H, L, hd]
//                   in q's [N, L, H, hd] order; lets go of the packed q, k, v, its output,
//                   the log-sum-exp and the float mask;
//   ViewBackward0 x6  each gradient copied twice: into [N*H, L, hd], then (transposed) into
//                   [L, N, E];
// then
//   SelectBackward0 x3 (2.x: each a zero [3, L, N, E] with one gradient written in, summed in
//                   place into the first, then ViewBackward0 copies the sum to [L, N, 3E]) or
//                   SplitBackward0 (1.13: one cat into [L, N, 3E]);
//   AddBackward0, MmBackward0  in_proj's bias and weight gradients and the input's gradient;
//                   frees the packed gradient and lets go of the input rows.
#include "multihead_attention_backward.hpp"

#include "backward_program.hpp"

namespace nnmem::layers {
namespace {

// The explicit path from attn @ v to q's and k's unscaled gradients, in the slots q, k, v.
void explicit_path(Program& p, const MhaBackward& b, int attn_out, int& q, int& k, int& v) {
  const std::int64_t nh = checked_mul(b.n, b.heads);
  const TensorType heads_l{{nh, b.l, b.head}, b.math}, heads_s{{nh, b.s, b.head}, b.math};
  const TensorType scores{{nh, b.l, b.s}, b.math};
  if (b.math != b.dtype) {  // the output's ToCopyBackward0
    const int upcast = p.temporary(heads_l, "grad of the attention output (float32)");
    p.free(attn_out);
    attn_out = upcast;
  }
  // attn @ v
  v = p.temporary(heads_s, "grad of v");
  int w = p.temporary(scores, b.dropout ? "grad of the dropped attention weights" : "grad of the attention weights");
  p.free(attn_out);
  p.release(b.torch2 && b.math == b.dtype ? b.packed : b.v);
  if (b.dropout) {  // without dropout the softmax is also SoftmaxBackward0's, let go of below
    p.release(b.dropped);
    const int before = p.temporary(scores, "grad of the attention weights");
    p.free(w);
    p.release(b.mask);
    w = before;
  }
  const int logits = p.temporary(scores, "grad of the scores");
  p.free(w);
  p.release(b.softmax);
  // q @ k^T (with a mask baddbmm, the same), then the scaling
  q = p.temporary(heads_l, "grad of q scaled");
  k = p.temporary(heads_s, b.torch2 ? "grad of k scaled" : "grad of k");
  p.free(logits);
  p.release(b.q_scaled);
  p.release(b.k);
  const int q_unscaled = p.temporary(heads_l, "grad of q");
  p.free(q);
  q = q_unscaled;
  if (b.torch2) {
    const int k_unscaled = p.temporary(heads_s, "grad of k");
    p.free(k);
    k = k_unscaled;
  } else {
    p.release(b.wrapped);
  }
}

}  // namespace

std::vector<BackwardEvent> mha_backward(const MhaBackward& b) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const std::int64_t nh = checked_mul(b.n, b.heads);
  const TensorType rows{{checked_mul(b.l, b.n), b.e}, b.dtype};
  const TensorType heads_l{{nh, b.l, b.head}, b.dtype}, heads_s{{nh, b.s, b.head}, b.dtype};
  const TensorType packed{{3, b.l, b.n, b.e}, b.dtype};
  const auto param = [&p](int k) {
    if (k >= 0) p.param_grad(k);
  };
  // out_proj's view (and the batch_first transpose), then out_proj.
  const int out_rows = b.batch_first ? p.temporary(rows, "grad of the output made rows") : -1;
  if (out_rows >= 0) p.release_grad_out(0);
  const int attn_out = p.temporary(rows, "grad of the attention output");
  param(b.out_proj_weight);
  param(b.out_proj_bias);
  out_rows >= 0 ? p.free(out_rows) : p.release_grad_out(0);
  p.release(b.out_proj_copy);
  if (!b.flash) p.release(b.attention_output);
  p.params_done();
  int q = -1, k = -1, v = -1;
  if (b.flash) {
    q = p.temporary(heads_l, "grad of q (flash attention)");
    k = p.temporary(heads_s, "grad of k (flash attention)");
    v = p.temporary(heads_s, "grad of v (flash attention)");
    p.free(attn_out);
    for (const int saved : {b.packed, b.attention_output, b.lse, b.float_mask}) p.release(saved);
    for (int* g : {&q, &k, &v}) {
      const int copy = p.temporary(g == &q ? heads_l : heads_s, "grad of a head made [N*H, L, hd]");
      p.free(*g);
      *g = copy;
    }
    const int v_rows = p.temporary(rows, "grad of v made contiguous");
    p.free(v);
    v = v_rows;
  } else {
    explicit_path(p, b, attn_out, q, k, v);
    if (b.math != b.dtype)  // q's, k's and v's ToCopyBackward0, the last made first
      for (int* g : {&v, &k, &q}) {
        const int copy = p.temporary({{nh, g == &q ? b.l : b.s, b.head}, b.dtype}, "grad of a head in the layer's dtype");
        p.free(*g);
        *g = copy;
      }
  }
  // q's and k's gradients made [L, N, E]
  for (int* g : {&q, &k}) {
    const int copy = p.temporary(rows, "grad of a projection made contiguous");
    p.free(*g);
    *g = copy;
  }
  int sum = -1;
  if (b.torch2) {
    for (const int g : {q, k, v}) {
      const int one = p.temporary(packed, "grad of q, k, v (one written in)");
      p.free(g);
      if (sum < 0) sum = one;
      else p.free(one);  // added into the first in place
    }
    const int copy = p.temporary(packed, "grad of in_proj's output made rows");
    p.free(sum);
    sum = copy;
  } else {
    sum = p.temporary(packed, "grad of in_proj's output (q, k, v concatenated)");
    for (const int g : {q, k, v}) p.free(g);
  }
  param(b.in_proj_bias);
  param(b.in_proj_weight);
  p.input_grad(0);
  p.free(sum);
  p.release(b.input);
  p.release(b.in_proj_copy);
  p.params_done();
  return events;
}

}  // namespace nnmem::layers
