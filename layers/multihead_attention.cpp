// MultiheadAttention: nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, add_bias_kv,
// add_zero_attn, kdim, vdim, batch_first) called as attn(query, key, value, need_weights=...,
// average_attn_weights=...). One input is self-attention (query is key is value), two are
// query and a key that is also the value (a decoder's cross-attention: attn(x, mem, mem)),
// three are all different. Outputs as PyTorch returns them: the attention output, then (with
// need_weights) the attention weights, `NAME:1` — [N, L, S] averaged over the heads, else
// [N, heads, L, S].
//
// Parameters as the module holds them: in_proj_weight [3E, E] when kdim and vdim equal
// embed_dim, else q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim];
// in_proj_bias [3E]; bias_k and bias_v [1, 1, E]; out_proj.weight [E, E] and out_proj.bias.
//
// What backward keeps, F.multi_head_attention_forward op by op (CPU, saved_tensors_hooks,
// validation/probe_mha.py; findings in validation/ops_saved_mha.md):
// - each projection's input (the input itself, or with batch_first its transpose copied into
//   rows by the linear), and the output projection's input: the attention output made
//   contiguous, [L*N, E];
// - 2.x (TorchProfile::mha_forward_2x): q, k and v are the packed projection made contiguous
//   ([3, L, N, E] for self-attention, q and [2, S, N, E] for a shared key/value) or three
//   projections; need_weights=false runs scaled_dot_product_attention on them (the CPU's flash
//   kernel without dropout: q, k, v, its output and a log-sum-exp; with dropout the math
//   composite: q and k scaled, three L x S tensors per head, v), need_weights=true the explicit
//   path: q scaled, k, the softmax (with dropout its mask and the dropped weights), v;
// - 1.13: always the explicit path, on q, k and v each made contiguous (q divided by sqrt(head
//   size), a saved wrapped number); the averaged weights are a sum divided by num_heads.
// add_bias_kv and add_zero_attn concatenate one row each to k and v: new tensors.
// Under the CPU's autocast (self-attention through in_proj_weight, bool masks): all of it in the
// low-precision dtype after the graph's casts of the input and the weights; the weights' copies
// kept for the inputs' gradients (ops_saved_mha.md, "Autocast").
// Backward runs node by node (multihead_attention_backward.cpp) where measured: batch_first
// self-attention through in_proj_weight with need_weights=False on the CPU (both versions, masks
// or none; 2.x's flash kernel or its math composite).
// Elsewhere it is taken as one node holding its largest temporary, the attention weights'
// gradient, beside the input's gradient: the step's peak is an upper bound where it falls
// inside this layer's backward. Training's forward temporaries (the projection before it is
// made contiguous, the attention output before its copy) are left out; inference's (no
// autograd graph) are multihead_attention_eval.cpp's.
#include "attention.hpp"
#include "common.hpp"
#include "multihead_attention_backward.hpp"
#include "multihead_attention_checks.hpp"
#include "multihead_attention_eval.hpp"

namespace nnmem::layers {
namespace {

void declare_params(LayerResult& res, const LayerCall& call, const MhaDims& d) {
  if (d.packed) {
    res.params.push_back({"in_proj_weight", {checked_mul(3, d.e), d.e}});
  } else {
    res.params.push_back({"q_proj_weight", {d.e, d.e}});
    res.params.push_back({"k_proj_weight", {d.e, d.kdim}});
    res.params.push_back({"v_proj_weight", {d.e, d.vdim}});
  }
  const bool bias = call.attrs.flag("bias");
  if (bias) res.params.push_back({"in_proj_bias", {checked_mul(3, d.e)}});
  if (call.attrs.flag("add_bias_kv")) {
    res.params.push_back({"bias_k", {1, 1, d.e}});
    res.params.push_back({"bias_v", {1, 1, d.e}});
  }
  res.params.push_back({"out_proj.weight", {d.e, d.e}});
  if (bias) res.params.push_back({.name = "out_proj.bias", .shape = {d.e}, .grad_summed = true});
}

// Adds kept tensors of the call's dtype (or another).
struct Kept {
  LayerResult& res;
  DType dtype;
  int extra(Shape s, const std::string& what, DType t) {
    res.save_extra({std::move(s), t}, what);
    return last();
  }
  int extra(Shape s, const std::string& what) { return extra(std::move(s), what, dtype); }
  int last() const { return static_cast<int>(res.saved.size()) - 1; }
};

LayerResult infer_mha(const LayerCall& call) {
  const MhaDims d = check_mha(call);
  // Under the CPU's autocast the layer runs in the low-precision dtype: its inputs and parameters
  // cast once (the graph's copies: nn.MultiheadAttention's first op is a Linear), everything after
  // in that dtype (validation/ops_saved_mha.md, "Autocast"). CUDA's is not measured.
  if (call.ctx.amp && call.ctx.device != Device::Cpu)
    throw LayerError("mixed precision (autocast) on CUDA is not modelled for MultiheadAttention yet (on the CPU it is)");
  if (call.ctx.amp && !(d.distinct <= 2 && d.packed))
    throw LayerError("mixed precision (autocast) is modelled for self-attention and a key that is the value (one "
                     "in_proj_weight); a value of its own or kdim/vdim (q/k/v_proj_weight) is not measured yet");
  const bool bf = call.attrs.flag("batch_first");
  const bool need_weights = call.attrs.flag("need_weights");
  const bool average = call.attrs.flag("average_attn_weights");
  const bool extra_rows = call.attrs.flag("add_bias_kv") || call.attrs.flag("add_zero_attn");
  const std::int64_t src = call.shape(d.distinct >= 2 ? 1 : 0)[bf ? 1 : 0];  // the key's length as given
  const DType dtype = call.input(0).dtype;
  LayerResult res;
  res.outputs.push_back({bf ? Shape{d.n, d.l, d.e} : Shape{d.l, d.n, d.e}, dtype});
  if (need_weights)
    res.outputs.push_back({average ? Shape{d.n, d.l, d.s} : Shape{d.n, d.heads, d.l, d.s}, dtype});
  declare_params(res, call, d);
  // Cross-attention splits in_proj_weight (and its bias) into the query's rows and the key's and
  // value's: views, which autocast casts anew at each call rather than caching the parameter's
  // copy; the copies a linear keeps are the layer's own (below).
  const bool split_casts = call.ctx.amp && d.distinct == 2;
  if (split_casts)
    for (ParamDecl& p : res.params)
      if (p.name == "in_proj_weight" || p.name == "in_proj_bias") p.cast_by_layer = true;
  const std::int64_t ln = checked_mul(d.l, d.n), src_rows = checked_mul(src, d.n);
  const std::int64_t projections = checked_add(checked_mul(checked_mul(2, ln), checked_mul(d.e, d.e)),
                                               checked_mul(src_rows, checked_mul(d.e, checked_add(d.kdim, d.vdim))));
  res.macs = checked_add(projections, checked_mul(checked_mul(checked_mul(2, d.n), checked_mul(d.heads, d.l)),
                                                  checked_mul(d.s, d.head)));
  const TorchProfile& torch = *call.ctx.torch;
  // Masks: measured on the CPU (validation/ops_saved_mha.md, "Masks"; CUDA follows the same
  // code, the fused kernels keeping the mask as their attn_bias: modelled); with added key rows
  // (the masks padded too) refused rather than estimated without them.
  if (d.masks > 0 && extra_rows)
    throw LayerError("a mask with add_bias_kv or add_zero_attn (the masks padded as the key) is not modelled yet");
  const std::size_t kpm_at = static_cast<std::size_t>(d.distinct);
  const std::size_t attn_at = kpm_at + (call.attrs.flag("key_padding_mask") ? 1 : 0);
  for (std::size_t i = kpm_at; i < call.inputs.size(); ++i)
    if (call.inputs[i].cast)
      throw LayerError("a floating-point mask under autocast (made the query's dtype, then cast) is not measured yet; give a bool mask",
                       i == attn_at && call.attrs.flag("attn_mask") ? "attn_mask" : "key_padding_mask");
  if (!call.training()) {
    mha_eval_temporaries(res,
                         {.l = d.l, .s = d.s, .src = src, .n = d.n, .e = d.e, .heads = d.heads, .head = d.head,
                          .distinct = d.distinct, .packed = d.packed, .batch_first = bf, .extra_rows = extra_rows,
                          .need_weights = need_weights, .average = average, .dropout = call.attrs.real("dropout"),
                          .dtype = dtype, .kpm = call.attrs.flag("key_padding_mask"),
                          .kpm_dtype = call.attrs.flag("key_padding_mask") ? call.input(kpm_at).dtype : dtype,
                          .attn_dims = call.attrs.flag("attn_mask") ? static_cast<int>(call.shape(attn_at).size()) : 0,
                          .attn_dtype = call.attrs.flag("attn_mask") ? call.input(attn_at).dtype : dtype},
                         torch);
    return res;
  }
  // batch_first: the output is the [L, N, E] result transposed, a view a Linear copies into rows
  // (set in training only: inference's fast path returns it contiguous, and there a Linear's
  // copy is a workspace either way).
  res.output_strided = bf;
  if (!(call.any_input_requires_grad() || call.trainable)) return res;

  const bool cpu = call.ctx.device == Device::Cpu;
  const double dropout = call.attrs.real("dropout");
  Kept kept{res, dtype};
  // Which saved entries the node-by-node backward lets go of (-1: none kept).
  MhaBackward program{.l = d.l, .s = d.s, .n = d.n, .e = d.e, .heads = d.heads, .head = d.head, .dtype = dtype, .math = dtype,
                      .batch_first = bf, .dropout = dropout > 0.0, .torch2 = torch.mha_forward_2x,
                      .flash = false, .input = -1, .packed = -1, .q_scaled = -1, .k = -1, .v = -1, .wrapped = -1, .softmax = -1,
                      .mask = -1, .dropped = -1, .attention_output = -1, .lse = -1, .float_mask = -1, .in_proj_copy = -1, .out_proj_copy = -1,
                      .in_proj_weight = -1, .in_proj_bias = -1, .out_proj_weight = -1, .out_proj_bias = -1};
  // The projections' inputs, for their weights' gradients (batch_first: the transposed input
  // copied into rows, unless autocast's contiguous copy is already rows); and their weights, for
  // the inputs' gradients (free, but for autocast's copies).
  if (call.trainable)
    for (int i = 0; i < d.distinct; ++i) {
      if (bf && !call.inputs[static_cast<std::size_t>(i)].cast)
        kept.extra({i == 0 ? ln : src_rows, call.shape(i).back()}, "input made rows (batch_first)");
      else res.save_input(i, i == 0 ? "query" : i == 1 ? "key" : "value");
      if (i == 0) program.input = kept.last();
    }
  for (int i = 0; i < d.distinct && split_casts; ++i)  // w_q [E, E] and w_kv [2E, E] as cast, for the inputs' gradients
    if (call.inputs[static_cast<std::size_t>(i)].requires_grad) {
      kept.extra({checked_mul(i == 0 ? 1 : 2, d.e), d.e}, i == 0 ? "in_proj_weight's query rows as cast" : "in_proj_weight's key and value rows as cast");
      if (i == 0) program.in_proj_copy = kept.last();
    }
  for (int i = 0; i < d.distinct && !split_casts; ++i)
    if (call.inputs[static_cast<std::size_t>(i)].requires_grad) {
      res.save_param(d.packed ? 0 : i, d.packed ? "in_proj_weight" : "the projection's weight");
      if (i == 0) program.in_proj_copy = kept.last();
      if (d.packed) break;
    }
  if (call.trainable || call.any_input_requires_grad()) {  // the attention output needs a gradient
    res.save_param(static_cast<int>(res.params.size()) - (call.attrs.flag("bias") ? 2 : 1), "out_proj.weight");
    program.out_proj_copy = kept.last();
  }
  const Shape heads_l{d.n, d.heads, d.l, d.head}, heads_s{d.n, d.heads, d.s, d.head}, scores{d.n, d.heads, d.l, d.s};
  const bool sdpa = torch.mha_forward_2x && !need_weights;
  // The mask scaled_dot_product_attention gets: attn_mask made float and merged with the key
  // padding (none when is_causal stands for it without key padding).
  const bool kpm = call.attrs.flag("key_padding_mask"), attn = call.attrs.flag("attn_mask");
  const bool sdpa_masked = kpm || (attn && !call.attrs.flag("is_causal"));
  const SdpaKernel kernel =
      sdpa ? sdpa_auto(call.ctx.device, dtype, 4, d.head, d.head, sdpa_masked, false, dropout) : SdpaKernel::Math;
  const bool fused = sdpa && kernel != SdpaKernel::Math;
  if (sdpa && sdpa_masked && !fused)
    throw LayerError("a mask on scaled_dot_product_attention's math path (dropout in training) is not measured yet");
  // The math composite on the CPU runs a 16-bit dtype in float32: q, k and v cast (copies, so
  // the packed projection is kept by nothing), everything after them float32, the output cast
  // back (measured under bfloat16 autocast: ops_saved_mha.md, "Autocast").
  const bool upcast = sdpa && !fused && cpu && dtype_size(dtype) == 2;
  if (upcast) program.math = DType::Float32;
  bool by_node = false;  // backward played node by node (below)
  // Which storages q, k and v live in. 2.x packs the projections that share an input and
  // makes them contiguous at once; 1.13 copies q, k and v one by one; added rows make k and v
  // new tensors.
  const bool packed_q = torch.mha_forward_2x && d.distinct == 1;
  const bool packed_kv = torch.mha_forward_2x && d.packed && d.distinct <= 2 && !extra_rows;
  // [3, L, N, E] and [2, S, N, E], written with the input's dimension 0 first (the batch, to nnmem)
  const Shape& key = call.shape(d.distinct >= 2 ? 1 : 0);
  if (packed_q && (fused || packed_kv) && !upcast)
    program.packed = kept.extra({call.shape(0)[0], 3, call.shape(0)[1], d.e}, "q, k, v (in_proj's output made contiguous)");
  else if (packed_kv && d.distinct == 2 && !upcast)
    kept.extra({key[0], 2, key[1], d.e}, "k, v (the key's projection made contiguous)");
  const bool own_q = !packed_q, own_kv = !packed_kv || upcast;
  if (fused) {
    if (own_q) kept.extra(heads_l, "q");
    if (own_kv) {
      kept.extra(heads_s, "k");
      kept.extra(heads_s, "v");
    }
    program.attention_output = kept.extra(heads_l, "attention output");
    const Shape lse{d.n, d.heads, kernel == SdpaKernel::Flash ? d.l : checked_mul((d.l + 31) / 32, 32)};
    program.lse = kept.extra(lse, "logsumexp", cpu && dtype == DType::Float64 ? dtype : DType::Float32);
    if (sdpa_masked) {
      const bool full = attn && call.shape(attn_at).size() == 3;
      program.float_mask = kept.extra(full || (kpm && attn) ? Shape{d.n, d.heads, d.l, d.s}
                 : kpm                 ? Shape{d.n, d.heads, 1, d.s}
                                       : Shape{1, 1, d.l, d.s},
                 "the mask (float, merged with the key padding)");
    }
    if (!cpu && dropout > 0.0) {
      kept.extra(Shape{}, "philox_seed", DType::Int64);
      kept.extra(Shape{}, "philox_offset", DType::Int64);
    }
    // Measured node by node (multihead_attention_backward.cpp), with and without masks:
    // self-attention through one in_proj_weight, batch_first, on the CPU in 32 or 64 bits, under
    // autocast, and as a 16-bit model (mha_masked, bfloat16 and float16 under torch 2.13: the
    // same nodes in the same order, the kernel's gradients in the model's dtype).
    program.flash = true;
    by_node = d.distinct == 1 && d.packed && !extra_rows && bf && cpu;
  } else {
    // The explicit path, or scaled_dot_product_attention's math composite: q scaled, k (the
    // composite scales it too), the softmax, dropout's mask and result, v.
    const DType math = program.math;
    const bool weights_out = need_weights && !average;  // the weights returned are the kept tensor
    program.q_scaled = kept.extra(heads_l, "q scaled", math);
    if (sdpa) program.k = kept.extra(heads_s, "k scaled", math);
    else if (own_kv) program.k = kept.extra(heads_s, "k");
    if (!torch.mha_forward_2x && cpu && torch.hooks_see_wrapped_numbers)
      program.wrapped = kept.extra(Shape{}, "sqrt(head size), a wrapped number", DType::Float64);
    if (weights_out && dropout == 0.0) res.save_output(1, "attention weights (softmax)");
    else kept.extra(scores, "attention weights (softmax)", math);
    program.softmax = kept.last();
    if (dropout > 0.0) {
      program.mask = kept.extra(scores, "dropout's mask", cpu ? math : DType::Bool);
      if (weights_out) res.save_output(1, "attention weights (dropped)");
      else kept.extra(scores, "dropped attention weights", math);
      program.dropped = kept.last();
    }
    if (own_kv) program.v = kept.extra(heads_s, upcast ? "v (float32)" : "v", math);
    if (need_weights && average && !torch.mha_forward_2x && cpu && torch.hooks_see_wrapped_numbers)
      kept.extra(Shape{}, "num_heads, a wrapped number", DType::Int64);
    // Measured node by node (multihead_attention_backward.cpp), with and without masks
    // (1.13's baddbmm adds the mask and keeps nothing more): self-attention through one
    // in_proj_weight, batch_first, need_weights=False, on the CPU in the input's dtype, under
    // autocast or as a 16-bit model (2.x's composite then in float32: torch_encoder's
    // self-attention, bfloat16, the same nodes as under autocast).
    // Elsewhere backward's largest temporary, the attention weights' gradient (bmm's), L x S
    // per head, made before the parameters' gradients of in_proj, stands for the dozen nodes:
    // an upper bound where the step's peak falls inside it.
    by_node = d.distinct == 1 && d.packed && !extra_rows && !need_weights && bf && cpu;
    if (!by_node) res.backward_scratch.push_back({{scores, math}, "gradient of the attention weights", true});
  }
  // The CPU's flash kernel writes its output in q's [L, N, H, hd] order: out_proj reads it as it
  // is, kept once (measured: the two saved tensors share one storage).
  if (call.trainable && !(fused && cpu))
    program.attention_output = kept.extra({ln, d.e}, "attention output made contiguous (out_proj's input)");
  if (by_node) {
    const auto param = [&res](const char* name) {
      for (std::size_t k = 0; k < res.params.size(); ++k)
        if (res.params[k].name == name) return static_cast<int>(k);
      return -1;
    };
    program.in_proj_weight = param("in_proj_weight");
    program.in_proj_bias = param("in_proj_bias");
    program.out_proj_weight = param("out_proj.weight");
    program.out_proj_bias = param("out_proj.bias");
    res.backward_program = [program](const std::vector<bool>&) { return mha_backward(program); };
  }
  return res;
}

const bool registered = register_layer({
    .type = "MultiheadAttention",
    .summary = "nn.MultiheadAttention: inputs query (self-attention), query and key=value, or query, key, value",
    .attrs = {AttrDef::integer("embed_dim", "the model's width E; the query's last dimension").needed().at_least(1),
              AttrDef::integer("num_heads", "heads; must divide embed_dim").needed().at_least(1),
              AttrDef::real("dropout", "dropout on the attention weights (training only)").or_else_real(0.0).between(0.0, 1.0),
              AttrDef::flag("bias", true, "in_proj_bias and out_proj.bias"),
              AttrDef::flag("add_bias_kv", false, "bias_k and bias_v, a row added to key and value"),
              AttrDef::flag("add_zero_attn", false, "a row of zeros added to key and value"),
              AttrDef::integer("kdim", "the key's width; default embed_dim").optional().at_least(1),
              AttrDef::integer("vdim", "the value's width; default embed_dim").optional().at_least(1),
              AttrDef::flag("batch_first", false, "inputs and output are [N, L, E] rather than [L, N, E]"),
              AttrDef::flag("need_weights", true, "forward's need_weights: also return the attention weights (NAME:1)"),
              AttrDef::flag("average_attn_weights", true, "forward's average_attn_weights: weights averaged over heads"),
              AttrDef::flag("key_padding_mask", false, "forward's key_padding_mask [N, S] is the input after query/key/value"),
              AttrDef::flag("attn_mask", false, "forward's attn_mask [L, S] or [N*num_heads, L, S] is the last input"),
              AttrDef::flag("is_causal", false, "forward's is_causal (2.x): attn_mask is causal")},
    .min_inputs = 1,
    .max_inputs = 5,
    .autocast = Autocast::Lower,
    .infer = infer_mha,
    .versions = "2.x packs q, k, v in one contiguous copy and, with need_weights false, calls scaled_dot_product_attention; "
                "1.13 copies q, k, v one by one and always runs bmm, softmax, bmm (validation/ops_saved_mha.md)",
});

}  // namespace
}  // namespace nnmem::layers
