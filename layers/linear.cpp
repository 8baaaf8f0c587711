// Linear: y = x Wᵀ + b over the last dimension of an input of any rank; transformers' Conv1D, the
// same with its weight stored transposed. And one rank's share of
// Megatron-LM's ColumnParallelLinear and RowParallelLinear under sequence parallelism, with the
// scatter into its sequence-parallel region and the gather out of it (docs/parallel.md, "Sequence parallelism"): what
// `--tp T --sequence-parallel` rewrites a spec to. Modelled (Megatron needs GPUs).
// Backward (derivatives.yaml, `addmm`/`mm`): the grad of the weight needs the input, the grad
// of the input needs the weight; each is kept only when its gradient is needed — so a frozen
// Linear keeps no activation, and the weight (a parameter) costs nothing extra.
#include <algorithm>

#include "backward_program.hpp"
#include "common.hpp"

namespace nnmem::layers {
namespace {

// The rows of the input times a weight of `features` in and `out_features` out, stored as
// `weight` says ([out, in] for nn.Linear, [in, out] for Conv1D), plus the bias.
LayerResult rows_times_weight(const LayerCall& call, std::int64_t out_features, Shape weight, bool bias) {
  const Shape& in = call.shape();
  const std::int64_t features = in.back();
  LayerResult res;
  Shape out = in;
  out.back() = out_features;
  res.outputs.push_back({out, call.input().dtype});
  res.params.push_back({"weight", std::move(weight)});
  if (bias) res.params.push_back({.name = "bias", .shape = {out_features}, .grad_summed = true});
  const std::int64_t rows = numel(in) / features;
  res.macs = checked_mul(checked_mul(rows, features), out_features);
  return res;
}

LayerResult infer_linear(const LayerCall& call) {
  require_rank(call, 2, 64, "[N, *, in_features]");
  require_float(call);
  const std::int64_t features = call.shape().back();
  check_declared(call, "in_features", features, "features in its last dimension");
  const std::int64_t out_features = call.attrs.integer("out_features");
  const Shape& in = call.shape();
  LayerResult res = rows_times_weight(call, out_features, {out_features, features}, call.attrs.flag("bias"));
  // The weight's gradient comes through weight.t()'s TBackward0: a view (hf_gpt2_sdpa, lstm_lm:
  // the tied embedding's gradient is then summed with it out of place, EmbeddingBackward0 >
  // aten::add).
  res.params[0].grad_view = true;
  // A non-contiguous input of more than two dimensions (a batch_first RNN's output) is copied
  // into rows first (matmul's reshape): the copy is what the weight's gradient keeps (when
  // nothing keeps it, it is freed inside aten::linear, a workspace).
  // Its bias is then added by a node of its own (AddBackward0, which backward runs first): the
  // bias's gradient, summed down from the output's, goes to AccumulateGrad before MmBackward0
  // makes the input's and the weight's (measured on mha_masked's `out` with --keep-grads, both
  // versions: .grad added into and the sum freed before the mm). Under autocast the bias's cast
  // back waits behind the mm: the one-node order stands.
  if (call.inputs[0].strided && in.size() > 2) {
    if (call.training() && call.trainable) res.save_extra({in, call.input().dtype}, "contiguous copy of the input");
    if (call.training() && call.attrs.flag("bias") && !call.ctx.amp)
      res.backward_program = [](const std::vector<bool>&) {
        std::vector<BackwardEvent> events;
        Program p(events);
        p.param_grad(1);  // the bias
        p.params_done();
        p.input_grad(0);
        p.param_grad(0);  // the weight
        p.params_done();
        return events;
      };
  } else if (call.training() && call.trainable) {
    res.save_input(0);
  }
  if (call.training() && call.input_requires_grad()) res.save_param(0, "weight.t()");
  // On more than two dimensions the input's gradient is mm's 2-D result viewed back to the
  // input's shape (ViewBackward0; through matmul, UnsafeViewBackward0 too): a view, which
  // torch 2.x's InputBuffer does not add a second gradient into in place (probe_ops.py,
  // "Two gradients for one tensor").
  res.input_grad_view = in.size() > 2;
  return res;
}

// transformers' Conv1D (GPT-2's c_attn, c_proj and c_fc): y = addmm(bias, x.view(-1, nx), weight)
// viewed back, the weight [nx, nf]. What addmm keeps is Linear's (validation/probe_transformer_ops.py
// linear hf_conv1d and their _autocast cases, both torch versions): the input's rows (a view of it)
// for the weight's gradient, the weight (free; under autocast its low-precision copy) for the
// input's. Its x.view needs rows it can view: a transposed input (a batch_first RNN's output) with
// more than one row in two of its leading dimensions is refused, as PyTorch refuses it.
LayerResult infer_conv1d(const LayerCall& call) {
  require_rank(call, 2, 64, "[N, *, nx]");
  require_float(call);
  const Shape& in = call.shape();
  if (call.inputs[0].strided && std::count_if(in.begin(), in.end() - 1, [](std::int64_t d) { return d > 1; }) > 1)
    throw LayerError("views its input as rows (x.view(-1, nx)), which PyTorch refuses for the non-contiguous input " +
                     to_string(call.shape()) + "; make it Contiguous first");
  const std::int64_t features = call.shape().back();
  check_declared(call, "nx", features, "features in its last dimension");
  const std::int64_t nf = call.attrs.integer("nf");
  LayerResult res = rows_times_weight(call, nf, {features, nf}, true);
  if (call.training() && call.trainable) res.save_input(0);
  if (call.training() && call.input_requires_grad()) res.save_param(0, "weight");
  res.input_grad_view = in.size() > 2;  // x.view(-1, nx)'s gradient viewed back, as Linear's
  return res;
}

// Megatron's sequence-parallel layers split the hidden states' sequence (dimension -2 here, 0 in
// Megatron's [s, b, h]) over `sequence_parallel` ranks.
AttrDef ranks_attr() {
  return AttrDef::integer("sequence_parallel", "tensor-parallel ranks the sequence (dimension -2) is split over").or_else(1).at_least(1);
}

// ColumnParallelLinear(sequence_parallel=True): the input is the rank's sequence shard; forward
// all-gathers it into Megatron's global memory buffer and multiplies, and saves the shard, not
// the gathered input (LinearWithGradAccumulationAndAsyncCommunication: save_for_backward(input,
// weight)); backward gathers it again for the weight's gradient and reduce-scatters the input's
// gradient out of a whole one (a fresh tensor). With global_buffer (what --tp --sequence-parallel
// writes), the gathers go into one buffer the rank holds for good (a Buffer layer of its spec,
// sized to its largest gather: GlobalMemoryBuffer.get_tensor(…, "mpu")), shared by all its
// ColumnParallelLinear layers; without, each gather is a transient of the layer's own.
LayerResult infer_column_parallel(const LayerCall& call) {
  require_rank(call, 3, 64, "[N, *, sequence shard, in_features]");
  const std::int64_t ranks = call.attrs.integer("sequence_parallel");
  std::vector<InputTensor> gathered(call.inputs.begin(), call.inputs.end());
  Shape& whole = gathered[0].type.shape;
  whole[whole.size() - 2] = checked_mul(whole[whole.size() - 2], ranks);
  LayerResult res = infer_linear({call.name, call.attrs, gathered, call.ctx, call.trainable});
  if (ranks == 1) return res;
  // In the global buffer (the rank's Buffer layer) the gathers allocate nothing; else a
  // transient of their own, forward and backward.
  const bool own = !call.attrs.flag("global_buffer");
  if (own) res.forward_scratch.push_back({gathered[0].type, "the all-gathered input"});
  if (call.training() && (call.trainable || call.input_requires_grad())) {
    if (own) res.backward_scratch.push_back({gathered[0].type, "the input all-gathered again"});
    if (call.input_requires_grad()) res.backward_scratch.push_back({gathered[0].type, "the whole input gradient, reduce-scattered"});
  }
  res.input_grad_view = false;  // the input's gradient is the reduce-scatter's result, a tensor of its own
  return res;
}

// RowParallelLinear(sequence_parallel=True): its output reduce-scattered to the rank's sequence
// shard out of the whole partial product; backward all-gathers the output's gradient.
LayerResult infer_row_parallel(const LayerCall& call) {
  require_rank(call, 3, 64, "[N, *, sequence, in_features / ranks]");
  const std::int64_t ranks = call.attrs.integer("sequence_parallel");
  LayerResult res = infer_linear(call);
  if (ranks == 1) return res;
  const TensorType partial = res.outputs[0];
  Shape& out = res.outputs[0].shape;
  const std::int64_t seq = out[out.size() - 2];
  if (seq % ranks != 0)
    throw LayerError("reduce-scatters its output's sequence over " + std::to_string(ranks) + " ranks: expected its length (dimension " +
                         std::to_string(out.size() - 2) + ") to divide by " + std::to_string(ranks) + ", found " + std::to_string(seq),
                     "sequence_parallel");
  out[out.size() - 2] = seq / ranks;
  res.forward_scratch.push_back({partial, "the whole partial output, reduce-scattered"});
  if (call.training()) res.backward_scratch.push_back({partial, "the output's gradient all-gathered"});
  return res;
}

// scatter_to_sequence_parallel_region (or the embedding's reduce-scatter): the rank's shard of
// the sequence, a tensor of its own; backward all-gathers the gradient. Keeps nothing.
LayerResult infer_sequence_scatter(const LayerCall& call) {
  require_rank(call, 3, 64, "[N, *, sequence, features]");
  const std::int64_t ranks = call.attrs.integer("sequence_parallel");
  LayerResult res;
  res.outputs.push_back(call.input());
  Shape& out = res.outputs[0].shape;
  const std::int64_t seq = out[out.size() - 2];
  if (seq % ranks != 0)
    throw LayerError("splits the sequence over " + std::to_string(ranks) + " ranks: expected its length (dimension " +
                         std::to_string(out.size() - 2) + ") to divide by " + std::to_string(ranks) + ", found " + std::to_string(seq),
                     "sequence_parallel");
  out[out.size() - 2] = seq / ranks;
  return res;
}

// gather_from_sequence_parallel_region: the whole sequence all-gathered from the ranks' shards,
// for a layer that needs it (BERT's pooler); backward keeps the gradient's shard. Keeps nothing.
LayerResult infer_sequence_gather(const LayerCall& call) {
  require_rank(call, 3, 64, "[N, *, sequence shard, features]");
  LayerResult res;
  res.outputs.push_back(call.input());
  Shape& out = res.outputs[0].shape;
  out[out.size() - 2] = checked_mul(out[out.size() - 2], call.attrs.integer("sequence_parallel"));
  return res;
}

std::vector<AttrDef> linear_attrs() {
  return {
      AttrDef::integer("in_features", "input features; inferred, checked when given").optional().at_least(1),
      AttrDef::integer("out_features", "output features").needed().at_least(1),
      AttrDef::flag("bias", true, "learnable bias"),
  };
}
std::vector<AttrDef> with_ranks(std::vector<AttrDef> attrs) {
  attrs.push_back(ranks_attr());
  return attrs;
}

std::vector<AttrDef> column_attrs() {
  std::vector<AttrDef> attrs = with_ranks(linear_attrs());
  attrs.push_back(AttrDef::flag("global_buffer", false,
                                "the input is gathered into Megatron's global memory buffer (a Buffer layer of the rank), "
                                "not a tensor of the layer's own"));
  return attrs;
}

const bool registered = register_layer({
    .type = "Linear",
    .summary = "fully connected layer over the last dimension",
    .attrs = linear_attrs(),
    .autocast = Autocast::Lower,
    .infer = infer_linear,
}) && register_layer({
    .type = "Conv1D",
    .summary = "transformers' Conv1D (GPT-2): a Linear over the last dimension with its weight stored [nx, nf]",
    .attrs = {AttrDef::integer("nf", "output features").needed().at_least(1),
              AttrDef::integer("nx", "input features; inferred, checked when given").optional().at_least(1)},
    .autocast = Autocast::Lower,
    .infer = infer_conv1d,
}) && register_layer({
    .type = "ColumnParallelLinear",
    .summary = "one rank of Megatron's column-parallel Linear: out_features is the rank's; with sequence_parallel, the input is its sequence shard, all-gathered",
    .attrs = column_attrs(),
    .autocast = Autocast::Lower,
    .infer = infer_column_parallel,
}) && register_layer({
    .type = "RowParallelLinear",
    .summary = "one rank of Megatron's row-parallel Linear: the input is the rank's features; with sequence_parallel, the output is reduce-scattered to its sequence shard",
    .attrs = with_ranks(linear_attrs()),
    .autocast = Autocast::Lower,
    .infer = infer_row_parallel,
}) && register_layer({
    .type = "ScatterToSequenceParallelRegion",
    .summary = "the rank's shard of the sequence (dimension -2), a tensor of its own (Megatron's sequence parallelism)",
    .attrs = {ranks_attr()},
    .autocast = Autocast::Inherit,
    .infer = infer_sequence_scatter,
}) && register_layer({
    .type = "GatherFromSequenceParallelRegion",
    .summary = "the whole sequence (dimension -2) all-gathered from the ranks' shards (Megatron's sequence parallelism)",
    .attrs = {ranks_attr()},
    .autocast = Autocast::Inherit,
    .infer = infer_sequence_gather,
});

}  // namespace
}  // namespace nnmem::layers
