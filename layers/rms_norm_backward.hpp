// RMSNorm's backward as PyTorch's engine runs it, node by node (layer.hpp's BackwardEvent;
// measured, validation/ops_saved_transformers.md). Private to norm.cpp and rms_norm_backward.cpp.
#pragma once

#include <vector>

#include "common.hpp"

namespace nnmem::layers {

// RMSNorm's backward, the input and the weight both needing a gradient, node by node as the
// engine runs them, for each form in float32, as a 16-bit model and under autocast (torch 2.13
// and 1.13, validation/trace_diff.py hf_llama_sdpa, hf_t5_sdpa, rms_mlp, rms_mlp_torch and
// rms_mlp_t5: every backward event aligned). LlamaRMSNorm's (x is the input, h its float32 copy
// (x itself in float32), r = rsqrt(mean(h^2) + eps) [..., 1]):
//   MulBackward0    weight * (h * r).to(x's dtype): the normalised input's gradient and the
//                   weight's product, summed to the weight, in x's dtype; lets go of the
//                   normalised input and the incoming gradient; the weight's AccumulateGrad;
//   ToCopyBackward0 (16-bit) that gradient in float32;
//   MulBackward0    h * r: h's gradient through the product (in float32 a part of x's, handed
//                   to x as the node returns) and r's product, summed to [..., 1];
//   RsqrtBackward0  -0.5 * grad * r^3: three [..., 1] tensors, one kept; lets go of r;
//   MeanBackward1   the gradient of h^2, expanded: an input-sized tensor (1.13: lets go of h^2);
//   PowBackward0    2 * h * grad: three input-sized tensors, the last h's gradient's other part
//                   (in float32 handed to x, else added into the first part); lets go of h;
//   ToCopyBackward0 (16-bit) x's gradient in its dtype.
// Before, one node made the input's and the weight's gradients: two or three input-sized
// tensors below the norm's own peak (hf_llama_sdpa's final norm: 1,951,560 against the measured
// 1,984,072; as a bfloat16 model 1,027,112 against 1,076,008). In float32 x's gradient comes in
// two parts, each handed to x as its node returns: where x already has a gradient (a residual
// stream's: every norm but the final one) the engine adds x * r's part into it at once and frees
// it (InputBuffer accumulates in place), then the pow's part likewise.
// nn.RMSNorm (F.rms_norm) on a 16-bit input differs only before h * r (rms_mlp_torch as a
// bfloat16 model and under bfloat16 autocast): it multiplies the float32 normalised input by the
// weight and casts the result back, so its backward begins with
//   ToCopyBackward0 the gradient in float32; lets go of the incoming one;
//   MulBackward0    both products in float32, the weight's summed in float32 (and cast to a
//                   16-bit weight's dtype); lets go of the normalised input and the float32
//                   gradient.
// Under autocast (a 16-bit input beside a float32 weight; rms_mlp --amp bfloat16) LlamaRMSNorm's
// weight product is float32: its two products are float32, the normalised input's gradient
// cast to the input's dtype. T5LayerNorm on a 16-bit x (rms_mlp_t5 as a bfloat16 model and
// under autocast) multiplies x itself by r: that product's node makes x's gradient in float32,
// casts it to x's dtype (x's first part, handed to x as the node returns) and lets go of x; the
// pow's float32 gradient of h is then h's whole one, cast to x's dtype (the second part).
struct RmsBackward {
  TensorType x, wide, stats;    // the input, its float32 copy, rstd
  TensorType weight;            // the weight (float32 beside a 16-bit x: autocast)
  DType normalised = DType::Float32;  // the normalised input's dtype (what the weight multiplies)
  bool cast_last = false;       // nn.RMSNorm on a 16-bit input: the cast back after the weight's product
  int x_itself = -1;            // T5LayerNorm on a 16-bit x: the saved entry of x itself (x * r)
  int input, rstd, normalised_entry;  // saved entries (input: x in float32, else its float32 copy)
  int squared;                  // h^2, which 1.13's MeanBackward1 keeps (else -1)
  bool sum_in_place = true;     // TorchProfile::grad_sum_in_place: 1.13 adds h's two parts out of place
};

std::vector<BackwardEvent> rms_norm_backward(const RmsBackward& b);

}  // namespace nnmem::layers
