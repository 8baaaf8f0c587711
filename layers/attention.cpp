// ScaledDotProductAttention: F.scaled_dot_product_attention(q, k, v[, attn_mask]) on
// [N, (heads,) L, E] queries and [N, (heads,) S, E] keys and values; `kernel` chooses the
// implementation, each of which keeps different tensors for backward (torch 2.13 on the CPU,
// saved_tensors_hooks, validation/probe_transformer_ops.py; on CUDA from derivatives.yaml,
// not measured here):
//   math      — the composite: q * sqrt(scale) and k * sqrt(scale) (k repeated to the query's
//               heads), the softmax's probabilities and the copy bmm reads (two L x S tensors per
//               head; a third, the dropout's, with dropout_p > 0), and v (a copy when repeated or
//               converted). On the CPU a 16-bit input runs in float32: every kept tensor is.
//               With dropout its backward is played node by node (math_backward, below).
//   flash     — q, k, v, the output and the log-sum-exp [N, heads, L] in float32 (float64 for a
//               float64 input), and, on the CPU, the mask converted to the query's dtype.
//   efficient — (CUDA) q, k, v, the mask, the output, a log-sum-exp [N, heads, ceil(L/32)*32].
//   cudnn     — (CUDA) q, k, v, the output, softmax statistics [N, heads, L, 1].
// So only math keeps the s^2 attention weights: the term that decides long-sequence memory.
// It exists from PyTorch 2.0: the profile of 1.13 lists it as absent, and the graph refuses it.
// `auto` chooses as PyTorch does: on the CPU flash for 4-D inputs whose value head size equals
// the query's, without dropout, else math (measured); on CUDA flash for 16-bit inputs without
// a mask, else efficient, else math (sdp_utils.cpp's order; not measured).
#include "attention.hpp"

#include "backward_program.hpp"

namespace nnmem::layers {

SdpaKernel sdpa_auto(Device device, DType dtype, std::size_t rank, std::int64_t head, std::int64_t v_head, bool masked,
                     bool mask_needs_grad, double dropout) {
  const bool same_head = v_head == head;
  if (device == Device::Cpu)
    return rank == 4 && same_head && dropout == 0.0 && !mask_needs_grad ? SdpaKernel::Flash : SdpaKernel::Math;
  if (rank == 4 && dtype_size(dtype) == 2 && !masked && same_head && head <= 256 && head % 8 == 0) return SdpaKernel::Flash;
  return rank == 4 && head % 8 == 0 && v_head % 8 == 0 ? SdpaKernel::Efficient : SdpaKernel::Math;
}

namespace {

using Kernel = SdpaKernel;

struct Shapes {
  Shape q, k, v, out;
  std::size_t rank = 0;
  bool gqa_repeat = false;  // k and v have fewer heads than q
};

Shapes check_shapes(const LayerCall& call) {
  for (std::size_t i = 0; i < 3; ++i) require_float(call, i);
  Shapes s{call.shape(0), call.shape(1), call.shape(2), {}, call.shape(0).size(), false};
  const char* names[] = {"query", "key", "value"};
  for (std::size_t i = 0; i < 3; ++i) {
    if (call.shape(i).size() < 3)
      throw LayerError(std::string("expected a ") + names[i] + " of at least 3 dimensions [N, (heads,) L, E], found " +
                       to_string(call.shape(i)));
    if (call.shape(i).size() != s.rank || call.input(i).dtype != call.input(0).dtype)
      throw LayerError("query, key and value must have as many dimensions and one dtype, found " + to_string(s.q) + " " +
                       std::string(dtype_name(call.input(0).dtype)) + ", " + to_string(s.k) + " " +
                       std::string(dtype_name(call.input(1).dtype)) + ", " + to_string(s.v) + " " +
                       std::string(dtype_name(call.input(2).dtype)));
  }
  const std::size_t r = s.rank;
  if (s.k[r - 1] != s.q[r - 1])
    throw LayerError("the key's head size " + std::to_string(s.k[r - 1]) + " (its last dimension, " + to_string(s.k) +
                     ") must equal the query's " + std::to_string(s.q[r - 1]) + " (" + to_string(s.q) + ")");
  if (s.v[r - 2] != s.k[r - 2])
    throw LayerError("the value's length " + std::to_string(s.v[r - 2]) + " (" + to_string(s.v) +
                     ") must equal the key's " + std::to_string(s.k[r - 2]) + " (" + to_string(s.k) + ")");
  const bool gqa = call.attrs.flag("enable_gqa");
  for (std::size_t d = 0; d + 2 < r; ++d) {
    const bool heads = d + 3 == r && d > 0;
    if (s.k[d] != s.v[d])
      throw LayerError("key " + to_string(s.k) + " and value " + to_string(s.v) + " differ in dimension " + std::to_string(d));
    if (s.k[d] == s.q[d]) continue;
    if (heads && gqa && s.q[d] % s.k[d] == 0) {
      s.gqa_repeat = true;
      continue;
    }
    throw LayerError("the query " + to_string(s.q) + " has " + std::to_string(s.q[d]) + " in dimension " + std::to_string(d) +
                         (heads ? " (heads)" : "") + ", the key " + to_string(s.k) + " has " + std::to_string(s.k[d]) +
                         (heads ? (gqa ? "; with enable_gqa the key's heads must divide the query's"
                                       : "; grouped-query attention needs enable_gqa: true")
                                : ""),
                     heads ? "enable_gqa" : "");
  }
  s.out = s.q;
  s.out.back() = s.v.back();
  return s;
}

// The attention weights' shape: the query's leading dimensions, L and S.
Shape weights_shape(const Shapes& s) {
  Shape w(s.q.begin(), s.q.end() - 1);
  w.push_back(s.k[s.rank - 2]);
  return w;
}

// The math composite's backward on the CPU with dropout, node by node as the engine runs it
// (torch 2.13, validation/trace_diff.py on hf_bert_sdpa in float32, as a bfloat16 model and
// under bfloat16 autocast):
//   ToCopyBackward0      (16-bit inputs) the output's gradient made float32;
//   UnsafeViewBackward0  the gradient folded to [N*H, L, Ev]: a copy of the transposed gradient
//                        that the heads' merge (transpose, contiguous) passes back; nnmem's
//                        Contiguous has copied it already, so the fold copies nothing here;
//   BmmBackward0         attn @ v: v's gradient and the dropped weights'; lets go of the incoming
//                        gradient, the dropped weights and v;
//   MulBackward0         dropout: the probabilities' gradient; lets go of the mask;
//   SafeSoftmaxBackward0 the scores' gradient; lets go of the probabilities;
//   AddBackward0         (an attn_mask that needs a gradient: T5's position bias) the scores'
//                        gradient is the mask's too, summed to the mask's shape where it is
//                        broadcast and cast to its dtype (the engine's validate_outputs: a
//                        float32 sum first, for a 16-bit mask); the same tensor where neither
//                        (nnmem makes it a copy there: a batch of 1, over by one L x S tensor);
//   BmmBackward0         q @ k^T: the scaled q's and k's gradients; lets go of both;
//   MulBackward1 x2      the scaling, k's first (made later in forward);
//   ToCopyBackward0 x3   (16-bit inputs) v's, k's and q's gradients in the inputs' dtype.
// Without it, the layer is one node making the three inputs' gradients at once, which is below
// the composite's peak (its L x S gradients): a bfloat16 BERT's SGD step peaks in it.
struct MathBackward {
  TensorType q, k, v, out, weights;  // in the composite's dtype (float32 for a 16-bit input)
  bool upcast;                       // the inputs are 16-bit: cast to float32 and back
  std::optional<TensorType> mask;    // an attn_mask that needs a gradient, in the composite's dtype
  int q_scaled, k_scaled, probs, dropout_mask, dropped, value;  // saved entries
};

std::vector<BackwardEvent> math_backward(const MathBackward& b) {
  std::vector<BackwardEvent> events;
  Program p(events);
  int grad = -1;
  if (b.upcast) {
    grad = p.temporary(b.out, "grad of the output (float32)");
    p.release_grad_out(0);
  }
  // attn @ v
  const int v = b.upcast ? p.temporary(b.v, "grad of v (float32)") : -1;
  if (!b.upcast) p.input_grad(2);
  int w = p.temporary(b.weights, "grad of the dropped attention weights");
  b.upcast ? p.free(grad) : p.release_grad_out(0);
  p.release(b.dropped);
  p.release(b.value);
  // dropout, softmax
  const int probs = p.temporary(b.weights, "grad of the attention probabilities");
  p.free(w);
  p.release(b.dropout_mask);
  w = p.temporary(b.weights, "grad of the scores");
  p.free(probs);
  p.release(b.probs);
  if (b.mask) {  // the mask added to the scores
    const bool summed = b.mask->shape != b.weights.shape;
    const int sum = summed && b.upcast ? p.temporary(*b.mask, "grad of attn_mask, summed (float32)") : -1;
    p.input_grad(3);
    if (sum >= 0) p.free(sum);
  }
  // q @ k^T, then the scaling: k's, then q's
  int q = p.temporary(b.q, "grad of q scaled");
  int k = p.temporary(b.k, "grad of k scaled");
  p.free(w);
  p.release(b.q_scaled);
  p.release(b.k_scaled);
  if (!b.upcast) {
    p.input_grad(1);
    p.free(k);
    p.input_grad(0);
    p.free(q);
    return events;
  }
  const int k_unscaled = p.temporary(b.k, "grad of k (float32)");
  p.free(k);
  const int q_unscaled = p.temporary(b.q, "grad of q (float32)");
  p.free(q);
  // the casts back, the last made first
  p.input_grad(2);
  p.free(v);
  p.input_grad(1);
  p.free(k_unscaled);
  p.input_grad(0);
  p.free(q_unscaled);
  return events;
}

void check_mask(const LayerCall& call, const Shapes& s) {
  if (call.inputs.size() < 4) return;
  if (call.attrs.flag("is_causal"))
    throw LayerError("is_causal is true and an attn_mask is given (input 3); PyTorch refuses both", "is_causal");
  const TensorType& mask = call.input(3);
  if (mask.dtype != DType::Bool && mask.dtype != call.input(0).dtype)
    throw LayerError("attn_mask (input 3) must be bool or the query's dtype " + std::string(dtype_name(call.input(0).dtype)) +
                     ", found " + std::string(dtype_name(mask.dtype)));
  const Shape w = weights_shape(s);
  bool ok = mask.shape.size() <= w.size();
  for (std::size_t k = 0; ok && k < mask.shape.size(); ++k) {
    const std::int64_t m = mask.shape[mask.shape.size() - 1 - k], want = w[w.size() - 1 - k];
    ok = m == want || m == 1;
  }
  if (!ok)
    throw LayerError("attn_mask (input 3) is " + to_string(mask.shape) + ", which does not broadcast to the attention weights " +
                     to_string(w));
}

Kernel choose(const LayerCall& call, const Shapes& s, double dropout) {
  const std::string& k = call.attrs.text("kernel");
  const bool cpu = call.ctx.device == Device::Cpu;
  const bool masked = call.inputs.size() == 4;
  const bool mask_needs_grad = masked && call.training() && call.input_requires_grad(3);
  const bool same_head = s.v.back() == s.q.back();
  if (k == "math") return Kernel::Math;
  if (k == "auto")
    return sdpa_auto(call.ctx.device, call.input(0).dtype, s.rank, s.q.back(), s.v.back(), masked, mask_needs_grad, dropout);
  if (s.rank != 4) throw LayerError("kernel " + k + " takes 4-D inputs [N, heads, L, E], found " + to_string(s.q), "kernel");
  if (k == "flash") {
    if (!same_head)
      throw LayerError("kernel flash needs the value's head size " + std::to_string(s.v.back()) + " to equal the query's " +
                       std::to_string(s.q.back()), "kernel");
    if (cpu && dropout > 0.0) throw LayerError("kernel flash on the CPU has no dropout; dropout_p is " + std::to_string(dropout), "kernel");
    if (cpu && mask_needs_grad)  // (PyTorch: "No available kernel")
      throw LayerError("kernel flash on the CPU gives attn_mask (input 3) no gradient, and it needs one; use math", "kernel");
    if (!cpu && masked) throw LayerError("kernel flash on CUDA takes no attn_mask (use efficient or math)", "kernel");
    if (!cpu && dtype_size(call.input(0).dtype) != 2)
      throw LayerError("kernel flash on CUDA needs float16 or bfloat16, found " + std::string(dtype_name(call.input(0).dtype)), "kernel");
    return Kernel::Flash;
  }
  if (cpu) throw LayerError("kernel " + k + " runs only on CUDA; on the CPU there are math and flash", "kernel");
  return k == "efficient" ? Kernel::Efficient : Kernel::Cudnn;
}

LayerResult infer_sdpa(const LayerCall& call) {
  const Shapes s = check_shapes(call);
  check_mask(call, s);
  const double dropout = call.training() ? call.attrs.real("dropout_p") : 0.0;  // as modules pass it
  const Kernel kernel = choose(call, s, dropout);
  const DType dtype = call.input(0).dtype;
  const Shape w = weights_shape(s);
  LayerResult res;
  res.outputs.push_back({s.out, dtype});
  res.macs = checked_add(checked_mul(numel(w), s.q.back()), checked_mul(numel(w), s.v.back()));
  // The CPU flash kernel lays its output out as the query is (measured: a query stored as
  // [B, L, H, D] gives an output whose .transpose(1, 2).contiguous() copies nothing); math's
  // output is a bmm's, contiguous. CUDA kernels: not measured, taken as contiguous.
  res.layout = call.ctx.device == Device::Cpu && kernel == Kernel::Flash ? call.inputs[0].layout : Layout::Contiguous;
  if (!call.training() || !(call.input_requires_grad(0) || call.input_requires_grad(1) || call.input_requires_grad(2)))
    return res;
  const bool cpu = call.ctx.device == Device::Cpu;
  const DType acc = dtype == DType::Float64 ? dtype : DType::Float32;
  const Shape lead(s.q.begin(), s.q.end() - 2);  // the query's batch and heads
  auto with_lead = [&](const Shape& t) {
    Shape out = lead;
    out.insert(out.end(), t.end() - 2, t.end());
    return out;
  };
  if (kernel == Kernel::Math) {
    const DType math = cpu && dtype_size(dtype) == 2 ? DType::Float32 : dtype;  // the CPU upcasts 16-bit inputs
    const auto last = [&res] { return static_cast<int>(res.saved.size()) - 1; };
    MathBackward program{.q = {s.q, math}, .k = {with_lead(s.k), math}, .v = {with_lead(s.v), math}, .out = {s.out, math},
                         .weights = {w, math}, .upcast = math != dtype, .mask = std::nullopt, .q_scaled = -1, .k_scaled = -1,
                         .probs = -1, .dropout_mask = -1, .dropped = -1, .value = -1};
    if (call.inputs.size() == 4 && call.input_requires_grad(3)) program.mask = TensorType{call.shape(3), math};
    res.save_extra({s.q, math}, "query * sqrt(scale)");
    program.q_scaled = last();
    res.save_extra({with_lead(s.k), math}, "key * sqrt(scale)");
    program.k_scaled = last();
    res.save_extra({w, math}, "attention probabilities");
    program.probs = last();
    if (dropout > 0.0) {
      res.save_extra({w, math}, "dropout's attention weights");
      program.dropout_mask = last();
    }
    res.save_extra({w, math}, "attention weights for bmm");
    program.dropped = last();
    // bmm reads v folded to [N*H, S, Ev]: a copy unless v is contiguous in its own dtype.
    if (math != dtype || s.gqa_repeat || call.inputs[2].layout != Layout::Contiguous)
      res.save_extra({with_lead(s.v), math}, "value (copied)");
    else res.save_input(2, "value");
    program.value = last();
    // Node by node where measured: the CPU, 4-D inputs with dropout, k and v with the query's
    // heads, all three needing a gradient.
    if (cpu && s.rank == 4 && dropout > 0.0 && !s.gqa_repeat && call.input_requires_grad(0) && call.input_requires_grad(1) &&
        call.input_requires_grad(2))
      res.backward_program = [program](const std::vector<bool>&) { return math_backward(program); };
    return res;
  }
  for (int i = 0; i < 3; ++i) res.save_input(i, i == 0 ? "query" : i == 1 ? "key" : "value");
  res.save_output(0);
  Shape stats = lead;
  const std::int64_t l = s.q[s.rank - 2];
  if (kernel == Kernel::Flash) stats.push_back(l);
  if (kernel == Kernel::Efficient) stats.push_back(checked_mul((l + 31) / 32, 32));
  if (kernel == Kernel::Cudnn) stats.insert(stats.end(), {l, 1});
  res.save_extra({stats, cpu ? acc : DType::Float32}, "logsumexp");
  if (call.inputs.size() == 4 && (kernel == Kernel::Efficient || cpu)) {
    if (call.input(3).dtype == dtype) res.save_input(3, "attn_mask");
    else res.save_extra({call.shape(3), dtype}, "attn_mask as " + std::string(dtype_name(dtype)));
  }
  if (!cpu && dropout > 0.0) {
    res.save_extra({{}, DType::Int64}, "philox_seed");
    res.save_extra({{}, DType::Int64}, "philox_offset");
  }
  return res;
}

const bool registered = register_layer({
    .type = "ScaledDotProductAttention",
    .summary = "F.scaled_dot_product_attention(query, key, value[, attn_mask]): inputs in that order",
    .attrs = {AttrDef::flag("is_causal", false, "a causal mask, without attn_mask"),
              AttrDef::real("dropout_p", "dropout on the attention weights (training only)").or_else_real(0.0).between(0.0, 1.0),
              AttrDef::real("scale", "default 1/sqrt(E); memory does not depend on it").optional(),
              AttrDef::flag("enable_gqa", false, "key and value may have fewer heads than the query"),
              AttrDef::word("kernel", {"auto", "math", "flash", "efficient", "cudnn"},
                            "the implementation; auto chooses as PyTorch does for the device, dtype and shapes")},
    .min_inputs = 3,
    .max_inputs = 4,
    .autocast = Autocast::Lower,
    .infer = infer_sdpa,
});

}  // namespace
}  // namespace nnmem::layers
