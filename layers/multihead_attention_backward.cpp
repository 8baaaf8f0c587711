// nn.MultiheadAttention's self-attention backward, node by node as the engine runs it (CPU,
// float32, batch_first; measured with validation/trace_diff.py on torch_encoder_long in 2.13
// and 1.13, validation/ops_saved_mha.md):
//   ViewBackward0   the output's gradient made rows [L*N, E] (batch_first: a copy of the
//                   transposed gradient, which is then freed);
//   AddmmBackward0  out_proj: the attention output's gradient, out_proj's weight and bias
//                   gradients; frees the incoming gradient and the attention output it kept;
//   BmmBackward0    attn @ v: v's gradient and the (dropped) weights' [N*H, L, S]; lets go of
//                   the weights and v (2.x: the packed q, k, v, which only v still holds);
//   MulBackward0    dropout: the softmax's gradient; lets go of the mask;
//   (Safe)SoftmaxBackward0  the scores' gradient; lets go of the softmax;
//   BmmBackward0    q @ k^T: q's and k's gradients; lets go of q scaled and k (2.x: scaled);
//   MulBackward1 x2 (2.x, q and k scaled) or DivBackward0 (1.13, q and its wrapped divisor);
//   ViewBackward0 x2  q's and k's gradients copied into [L, N, E] (v's arrives viewable);
//   SelectBackward0 x3 (2.x: each a zero [3, L, N, E] with one gradient written in, summed in
//                   place into the first, then ViewBackward0 copies the sum to [L, N, 3E]) or
//                   SplitBackward0 (1.13: one cat into [L, N, 3E]);
//   AddBackward0, MmBackward0  in_proj's bias and weight gradients and the input's gradient;
//                   frees the packed gradient and lets go of the input rows.
#include "multihead_attention_backward.hpp"

#include "backward_program.hpp"

namespace nnmem::layers {

std::vector<BackwardEvent> mha_backward(const MhaBackward& b) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const std::int64_t nh = checked_mul(b.n, b.heads);
  const TensorType rows{{checked_mul(b.l, b.n), b.e}, b.dtype};
  const TensorType heads_l{{nh, b.l, b.head}, b.dtype}, heads_s{{nh, b.s, b.head}, b.dtype};
  const TensorType scores{{nh, b.l, b.s}, b.dtype};
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
  p.release(b.attention_output);
  p.params_done();
  // attn @ v
  const int v = p.temporary(heads_s, "grad of v");
  int w = p.temporary(scores, b.dropout ? "grad of the dropped attention weights" : "grad of the attention weights");
  p.free(attn_out);
  p.release(b.torch2 ? b.packed : b.v);
  p.release(b.dropout ? b.dropped : b.softmax);
  if (b.dropout) {
    const int before = p.temporary(scores, "grad of the attention weights");
    p.free(w);
    p.release(b.mask);
    w = before;
  }
  const int logits = p.temporary(scores, "grad of the scores");
  p.free(w);
  p.release(b.softmax);
  // q @ k^T, then the scaling
  int q = p.temporary(heads_l, "grad of q scaled");
  int k = p.temporary(heads_s, b.torch2 ? "grad of k scaled" : "grad of k");
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
  p.params_done();
  return events;
}

}  // namespace nnmem::layers
