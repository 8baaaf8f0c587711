// MoEExperts: a mixture of experts' feed-forward after its router, as transformers 5 runs
// Mixtral's (MixtralSparseMoeBlock, experts_implementation "grouped_mm", the default a model
// gets on the CPU). Inputs: the hidden states [N, *, H] and the router's logits [N, *, E] (the
// router itself is a Linear, mlp.gate). Softmax over the E experts, the top_k of them per token,
// their weights renormalised to sum to one (norm_topk_prob); the T·top_k (token, expert) pairs
// sorted by expert, each pair's hidden row gathered, and two grouped matmuls over the experts'
// stacked weights — gate_up_proj [E, 2I, H] then, after silu(gate) * up, down_proj [E, H, I] —
// weighted, put back in token order and summed over the top_k: the output [N, *, H].
//
// Routing: every tensor of this path has T·top_k rows (or T), whichever experts the tokens
// pick, so what it keeps does not depend on the routing: measured on torch 2.13 with HF's
// MixtralSparseMoeBlock over several seeds, each routing differently, the same bytes
// (validation/probe_hf_moe.py, op by op, in validation/ops_saved_transformers.md). What it does
// assume is no capacity limit (transformers drops no token): every token reaches its top_k experts.
// Kept (training): softmax's result [T, E], topk's indices [T, k] (int64), the weights [T, k]
// and their sum [T, 1] (the in-place division), the sort's three permutations [S] (int64, S =
// T·k), the offsets [E] (int32, kept by both grouped matmuls), the gathered rows [S, H], the
// gate-up output [S, 2I] (silu and the product read its halves), silu's output [S, I], the
// product [S, I], the down output [S, H] and the gathered weights [S].
//
// The routing is float32 whatever the model's dtype: MixtralTopKRouter softmaxes
// `router_logits.float()`, so the probabilities, the top-k weights, their sum and the gathered
// weights are float32, and `proj_out * weights` promotes the weighted rows to float32 (their
// reordering and the sum over the top_k too, cast to the hidden states' dtype at the end). A
// 16-bit model (`model.to(dtype)`) keeps those four in float32 beside its 16-bit experts
// (probe_hf_moe.py --dtype bfloat16: 178,448 bytes, of which 2,304 float32 routing); its backward
// casts the output's gradient up to float32 first, the down output's gradient back down (the
// engine's cast to the input's dtype) and softmax's gradient down to the logits' dtype last.
#include "backward_program.hpp"

namespace nnmem::layers {
namespace {

// The router's dtype: softmax of `router_logits.float()` (see above).
constexpr DType kRouting = DType::Float32;

// The weighted rows' dtype, `proj_out * weights`'s promotion: float32 but for float64 experts.
DType weighted_dtype(DType f) { return f == DType::Float64 ? f : kRouting; }

// Saved entries, in the order infer_moe_experts keeps them.
enum Kept { kSoftmax, kTopkIndices, kWeights, kSum, kPermRows, kPerm, kInvPerm, kOffsets, kRows, kGateUp, kSilu, kProduct, kDown,
            kRowWeights };

// Backward node by node, in the engine's order (the latest-made node first): the output's
// gradient made rows (a copy of the sum's expanded gradient), put back in sorted order (index),
// through `* weights` (both gradients), down's grouped matmul (down_proj's gradient), `silu *
// up`, silu, the chunk (a cat into the gate-up gradient), gate_up's grouped matmul (gate_up_proj's
// gradient), the weights' gather, the rows' gather (the hidden states' gradient), the division,
// the sum, topk and softmax (the logits' gradient). Each node lets go of what it kept. The
// routing's tensors are float32 (kRouting); f is the experts' dtype, logits the router's. Where
// f is not the weighted rows' dtype (a 16-bit model) casts add copies: the output's gradient as
// float32 first (ToCopyBackward0), the down output's gradient cast back to f (the engine's cast
// to the input's dtype); where the logits are not float32 (a 16-bit model, or autocast's
// bfloat16 router) their gradient is softmax's float32 one cast down.
std::vector<BackwardEvent> moe_backward(std::int64_t tokens, std::int64_t pairs, std::int64_t hidden, std::int64_t inter,
                                        std::int64_t experts, std::int64_t top_k, DType f, DType logits) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const TensorType rows_h{{pairs, hidden}, f}, rows_i{{pairs, inter}, f}, rows_2i{{pairs, checked_mul(2, inter)}, f};
  const DType w = weighted_dtype(f);
  const TensorType weighted{{pairs, hidden}, w}, tk{{tokens, top_k}, kRouting};
  const int up_cast = f != w ? p.temporary({{tokens, hidden}, w}, "gradient of the output as float32") : -1;
  if (up_cast >= 0) p.release_grad_out(0);
  const int made_rows = p.temporary(weighted, "gradient made rows");
  if (up_cast >= 0) p.free(up_cast);
  else p.release_grad_out(0);
  const int sorted = p.temporary(weighted, "gradient in sorted order");
  p.free(made_rows);
  p.release(kInvPerm);
  int down = p.temporary(weighted, "gradient of the down output");
  const int full = p.temporary(weighted, "gradient of the weights, row by row");
  if (f != w) {
    const int cast = p.temporary(rows_h, "gradient of the down output, cast");
    p.free(down);
    down = cast;
  }
  const int weights = p.temporary({{pairs, 1}, kRouting}, "gradient of the gathered weights");
  p.free(full);
  p.free(sorted);
  p.release(kDown);
  p.release(kRowWeights);
  const int product = p.temporary(rows_i, "gradient of silu(gate) * up");
  p.param_grad(1);
  p.free(down);
  p.release(kProduct);
  p.params_done();
  const int silu = p.temporary(rows_i, "gradient of silu(gate)");
  const int up = p.temporary(rows_i, "gradient of up");
  p.free(product);
  p.release(kSilu);
  const int gate = p.temporary(rows_i, "gradient of gate");
  p.free(silu);
  p.release(kGateUp);
  const int gate_up = p.temporary(rows_2i, "gradient of the gate_up output");
  p.free(gate);
  p.free(up);
  const int rows = p.temporary(rows_h, "gradient of the gathered rows");
  p.param_grad(0);
  p.free(gate_up);
  p.release(kRows);
  p.release(kOffsets);
  p.params_done();
  const int flat = p.temporary({{pairs}, kRouting}, "gradient of the top-k weights");
  p.free(weights);
  p.release(kPerm);
  p.input_grad(0);
  p.free(rows);
  p.release(kPermRows);
  const int divided = p.temporary(tk, "gradient of the weights before the division");
  const int sum = p.temporary({{tokens, 1}, kRouting}, "gradient of their sum");
  p.free(flat);
  p.release(kWeights);
  p.release(kSum);
  const int topk = p.temporary(tk, "gradient of the top-k probabilities");
  p.free(divided);
  p.free(sum);
  const int probs = p.temporary({{tokens, experts}, kRouting}, "gradient of the probabilities");
  p.free(topk);
  p.release(kTopkIndices);
  if (logits != kRouting) {  // softmax's gradient, then the cast's: the logits' own
    const int softmax = p.temporary({{tokens, experts}, kRouting}, "gradient of the logits as float32");
    p.free(probs);
    p.release(kSoftmax);
    p.input_grad(1);
    p.free(softmax);
    return events;
  }
  p.input_grad(1);
  p.free(probs);
  p.release(kSoftmax);
  return events;
}

LayerResult infer_moe_experts(const LayerCall& call) {
  require_rank(call, 2, 64, "[N, *, hidden]");
  require_rank(call, 2, 64, "[N, *, num_experts]", 1);
  require_float(call);
  require_float(call, 1);
  const Shape& in = call.shape();
  const std::int64_t hidden = in.back(), experts = call.attrs.integer("num_experts");
  const std::int64_t top_k = call.attrs.integer("top_k"), inter = call.attrs.integer("intermediate_size");
  if (call.shape(1).back() != experts)
    throw LayerError("expected the router's logits over num_experts " + std::to_string(experts) + " experts in input 1's "
                     "last dimension, found " + to_string(call.shape(1)));
  if (Shape(call.shape(1).begin(), call.shape(1).end() - 1) != Shape(in.begin(), in.end() - 1))
    throw LayerError("expected the router's logits for every token of input 0 " + to_string(in) + ", found " +
                     to_string(call.shape(1)));
  if (top_k > experts)
    throw LayerError("top_k " + std::to_string(top_k) + " is more than num_experts " + std::to_string(experts), "top_k");
  const DType f = call.input().dtype;
  const std::int64_t tokens = numel(in) / hidden, pairs = checked_mul(tokens, top_k);

  LayerResult res;
  res.outputs.push_back(call.input());
  res.params.push_back({"gate_up_proj", {experts, checked_mul(2, inter), hidden}});
  res.params.push_back({"down_proj", {experts, hidden, inter}});
  res.macs = checked_mul(checked_mul(pairs, hidden), checked_mul(3, inter));
  const bool grads = call.training() && (call.trainable || call.any_input_requires_grad());
  if (grads) {
    res.save_extra({{tokens, experts}, kRouting}, "softmax's result");
    res.save_extra({{tokens, top_k}, DType::Int64}, "topk's indices");
    res.save_extra({{tokens, top_k}, kRouting}, "the top_k weights (divided in place)");
    res.save_extra({{tokens, 1}, kRouting}, "their sum");
    for (const char* what : {"perm // top_k", "perm", "inv_perm"}) res.save_extra({{pairs}, DType::Int64}, what, Saved::Made::Separate);
    res.save_extra({{experts}, DType::Int32}, "offsets");
    res.save_extra({{pairs, hidden}, f}, "gathered rows", Saved::Made::Separate);
    res.save_extra({{pairs, checked_mul(2, inter)}, f}, "gate_up output", Saved::Made::Separate);
    res.save_extra({{pairs, inter}, f}, "silu(gate)", Saved::Made::Separate);
    res.save_extra({{pairs, inter}, f}, "silu(gate) * up", Saved::Made::Separate);
    res.save_extra({{pairs, hidden}, f}, "down output", Saved::Made::Separate);
    res.save_extra({{pairs}, kRouting}, "gathered weights", Saved::Made::Separate);
  }
  if (!grads) {
    // Without autograd nothing is kept, and the call's peak is at silu(gate) * up, before the
    // output exists: live then are the router's top_k weights and indices, the sort's ids and
    // permutation, the gathered rows and weights, the ids as float32 for histc, its counts
    // (float32) and the offsets (int32), the gate-up output, silu's and the product (measured:
    // `trace_diff.py hf_mixtral_sdpa --mode eval`).
    for (const auto& [type, what] : std::vector<std::pair<TensorType, const char*>>{
             {{{tokens, top_k}, kRouting}, "top_k weights"}, {{{tokens, top_k}, DType::Int64}, "top_k indices"},
             {{{pairs}, DType::Int64}, "sorted expert ids"}, {{{pairs}, DType::Int64}, "perm"},
             {{{pairs, hidden}, f}, "gathered rows"}, {{{pairs}, kRouting}, "gathered weights"},
             {{{pairs}, DType::Float32}, "expert ids as float (histc)"}, {{{experts}, DType::Float32}, "histc counts"},
             {{{experts}, DType::Int32}, "offsets"}, {{{pairs, checked_mul(2, inter)}, f}, "gate_up output"},
             {{{pairs, inter}, f}, "silu(gate)"}, {{{pairs, inter}, f}, "silu(gate) * up"}})
      res.forward_scratch.push_back({type, what});
    res.scratch_before_output = true;
    return res;
  }
  // Made and let go within the call: the sorted expert ids and their float copy for histc, the
  // weighted rows and their reordering (float32: the weights' dtype), summed into the output.
  // A 16-bit model's float32 sum [T, H], cast to the output, comes after the weighted rows are
  // let go: below them and the output, which the scratch is counted beside.
  res.forward_scratch.push_back({{{pairs}, DType::Int64}, "sorted expert ids"});
  res.forward_scratch.push_back({{{pairs, hidden}, weighted_dtype(f)}, "weighted rows"});
  res.forward_scratch.push_back({{{pairs, hidden}, weighted_dtype(f)}, "weighted rows in token order"});
  const DType logits = call.input(1).dtype;
  res.backward_program = [=](const std::vector<bool>&) {
    return moe_backward(tokens, pairs, hidden, inter, experts, top_k, f, logits);
  };
  return res;
}

const bool registered = register_layer({
    .type = "MoEExperts",
    .summary = "a mixture of experts after its router (inputs: hidden, router logits): Mixtral's top-k SwiGLU experts, "
               "transformers' grouped_mm path",
    .attrs = {AttrDef::integer("num_experts", "experts (num_local_experts)").needed().at_least(1),
              AttrDef::integer("top_k", "experts per token (num_experts_per_tok)").needed().at_least(1),
              AttrDef::integer("intermediate_size", "each expert's hidden width").needed().at_least(1)},
    .min_inputs = 2,
    .max_inputs = 2,
    .infer = infer_moe_experts,
});

}  // namespace
}  // namespace nnmem::layers
