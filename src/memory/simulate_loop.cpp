// The loop around the simulated step: what lives across steps (parameters, buffers, optimizer
// state, the batch, the previous step's output, loss and gradients), the micro-steps of gradient
// accumulation, and the loss. The step itself is simulate.cpp's.
#include <utility>

#include "step_simulator.hpp"

namespace nnmem::detail {

StepSimulator::StepSimulator(const Graph& graph, const StepOptions& options, const std::vector<LossTerm>& losses,
                             const CheckpointPlan& checkpoints, const ShardPlan& shards, Record record)
    : graph_(graph), options_(options), losses_(make_losses(losses)), memory_(record, graph.nodes.size()), block_(graph.storages.size(), -1), returned_(graph.values.size()),
      kept_(graph.nodes.size()), kept_saved_(graph.nodes.size()),
      checkpoints_(checkpoints),
      checkpoint_(graph, checkpoints, memory_,
                  {[this](int v) -> int& { return block_of(v); },
                   [this](std::size_t node, bool stop) { forward_node(node, Pass::Recompute, stop); },
                   [this] { if (!cached_copies_.empty()) release_autocast_cache(); }}),
      shard_(graph, options.parallel.sharding, shards, memory_) {
  for (int v : graph.outputs) returned_[static_cast<std::size_t>(v)] = true;
  for (std::size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].held_until >= 0) unreferenced_after_.emplace_back(graph.values[v].held_until, static_cast<int>(v));
  std::stable_sort(unreferenced_after_.begin(), unreferenced_after_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

StepResult StepSimulator::run() {
  const bool training = graph_.options.mode == Mode::Train;
  persistent(training);
  // Gradient accumulation: the first micro-step (after zero_grad), one of those in between
  // (they all spend memory alike), and the last (with the optimizer's step).
  const std::int64_t k = training ? options_.grad_accum : 1;
  std::vector<std::int64_t> micro_steps = {1};
  if (k >= 3) micro_steps.push_back(2);
  if (k >= 2) micro_steps.push_back(k);
  for (const std::int64_t m : micro_steps) {
    if (m > 1) next_micro_step(m);
    forward(training);
    if (!training) break;
    loss_forward();
    backward();
    if (m == k && !options_.parallel.sharding.offload_optimizer) {  // offloaded: the CPU steps it
      // ZeRO on 16-bit parameters: the gradient partition in float32, the master weights' .grad for the step.
      const std::int64_t master = shard_.plan().master_bytes;
      const int fp32_grads = master > 0 ? memory_.alloc(MemoryKind::Transients, master, "float32 gradient partition") : -1;
      simulate_optimizer_step(memory_, options_, graph_.options.device, *graph_.options.torch, shard_.plan().optimizer_params);
      if (fp32_grads >= 0) memory_.release(fp32_grads);
    }
    if (options_.loop == Loop::Function) {
      memory_.at(m == k ? Phase::Optimizer : Phase::Backward, "return loss.item()");
      for (int v : graph_.outputs) memory_.release(block_of(v));
      checkpoint_.release_graph();  // the graph dies with `loss`
      memory_.release(loss_block_);
    }
  }
  mark_carried_out();
  memory_.check_nothing_outlives();
  StepResult r;
  r.peak = memory_.peak();
  r.peak_phase = memory_.peak_phase();
  r.peak_layer = memory_.peak_layer();
  r.peak_micro_step = memory_.peak_micro_step();
  r.breakdown = memory_.breakdown_at_peak();
  r.backward_transients = memory_.backward_transients();
  r.timeline = memory_.take_timeline();
  r.trace = memory_.take_trace();
  r.replay = memory_.take_replay_steps();
  return r;
}

// Allocates a tensor that outlives the step, marked with what it is to the loop.
int StepSimulator::persist(MemoryKind kind, std::int64_t bytes, What what, Carry carry) {
  const int block = memory_.alloc(kind, bytes, what);
  memory_.mark(block, carry);
  return block;
}

// The trainable parameters, each tensor once (a tied or shared one its owner's), in the order
// of the list the optimizer's state follows (estimate.cpp).
std::vector<const Parameter*> StepSimulator::trainable_params() const {
  std::vector<const Parameter*> params;
  for (const Parameter& p : graph_.parameters)
    if (p.trainable) params.push_back(&p);
  return params;
}

void StepSimulator::persistent(bool training) {
  memory_.at(Phase::Forward, "");
  // Parameters and buffers layer by layer, as model.to(device) moves them.
  // ZeRO-3 and FSDP keep a shard of each (none when offloaded). A shared module's or a tied
  // parameter is its owner's tensor: made once, by the owner.
  const Sharding& sharding = options_.parallel.sharding;
  const ShardPlan& shards = shard_.plan();
  for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    const std::string& name = graph_.layer(n).name;
    for (std::size_t k = 0; k < n.result->params.size(); ++k) {
      const ParamDecl& p = n.result->params[k];
      if (k < n.params.size() && graph_.parameters[static_cast<std::size_t>(n.params[k])].owner != static_cast<int>(i)) continue;
      const std::int64_t bytes = sharding.parameters ? shards.param_bytes.at(static_cast<std::size_t>(n.params[k])) : TensorType{p.shape, p.dtype}.bytes();
      if (bytes > 0) persist(MemoryKind::Parameters, bytes, {sharding.parameters ? "parameter shard " : "parameter ", name, ".", p.name}, Carry::Model);
    }
    if (graph_.layer(n).links().shares.empty())
      for (const ParamDecl& b : n.result->buffers)
        persist(MemoryKind::Buffers, TensorType{b.shape, b.dtype}.bytes(), {"buffer ", name, b.name.empty() ? "" : ".", b.name}, Carry::Model);
  }
  // The data-parallel wrapper, built around the model: DDP's gradient buckets.
  if (training)
    for (const DataParallelStep::Buffer& b : options_.parallel.buffers) persist(MemoryKind::CommBuffers, b.bytes, b.what, Carry::Model);
  if (training && shards.reduce_bucket_bytes > 0)
    persist(MemoryKind::CommBuffers, shards.reduce_bucket_bytes, "ZeRO's reduce bucket", Carry::Model);
  const std::vector<const Parameter*> params = training ? trainable_params() : std::vector<const Parameter*>{};
  // "optimizer state: exp_avg of fc1.weight" (of a ZeRO partition: "… of the flat float32 partition").
  const auto state = [&](const OptimizerTensor& t) -> What {
    if (t.param < 0) return {"optimizer state: ", t.slot};
    const auto k = static_cast<std::size_t>(t.param);
    if (!shards.optimizer_names.empty()) return {"optimizer state: ", t.slot, " of ", shards.optimizer_names.at(k)};
    const Parameter& p = *params.at(k);
    return {"optimizer state: ", t.slot, " of ", graph_.layer(graph_.owner(p)).name, ".",
            graph_.param_own_name(p)};
  };
  if (training && !sharding.offload_optimizer) {
    if (shards.master_bytes > 0)
      persist(MemoryKind::OptimizerState, shards.master_bytes, "optimizer state: float32 master weights (partition)", Carry::State);
    for_each_optimizer_state_tensor(options_, graph_.options.device, shards.optimizer_params, [&](const OptimizerTensor& t) {
      persist(MemoryKind::OptimizerState, t.bytes, state(t), Carry::State);
    });
  }
  for (int v : graph_.inputs) {
    block_of(v) = persist(MemoryKind::Inputs, value(v).type.bytes(), {"input '", value(v).name, "'"}, Carry::Batch);
  }
  if (!training) return;
  for (const LossRun& l : losses_)
    if (l.tensors.target)
      persist(MemoryKind::Inputs, l.tensors.target->bytes(), {losses_.size() > 1 ? "target of " : "target", losses_.size() > 1 ? l.term.output_name : ""},
              Carry::Batch);
  // In a plain loop, still bound to `out` and `loss` from the previous step until this step
  // rebinds them.
  if (options_.loop == Loop::Plain) {
    for (int v : graph_.outputs)
      previous_outputs_.push_back(persist(MemoryKind::Activations, graph_.storages[value(v).storage].bytes,
                                          "previous step's output", Carry::LastOutput));
    previous_loss_ = persist(MemoryKind::Activations, total_bytes(), "previous step's loss", Carry::LastLoss);
  }
  checkpoint_.previous_step(options_.loop == Loop::Plain);
  // zero_grad(): set_to_none frees last step's gradients; otherwise they are zeroed in place.
  std::vector<int> grads;
  if (sharding.gradients && sharding.split == Sharding::Split::FlatAll)  // ZeRO-2: one flat partition
    grads.push_back(persist(MemoryKind::Gradients, shards.grad_bytes, "gradient partition (from the previous step)", Carry::LastGrad));
  else if (sharding.gradients)  // ZeRO-3, FSDP: each unit's shards, reduce-scattered together
    for (const ShardPlan::Unit& u : shards.units) {
      if (u.grad_bytes > 0)
        grads.push_back(persist(MemoryKind::Gradients, u.grad_bytes, {"grad shards of ", u.name, " (from the previous step)"}, Carry::LastGrad));
    }
  // zero_grad(set_to_none=False) empties a sparse gradient (sparse_resize_and_clear_) as it zeroes the dense ones
  std::vector<int> emptied;
  if (!sharding.gradients)
    for (const Parameter& p : graph_.parameters) {
      if (!p.trainable) continue;
      if (p.sparse_rows == 0) {
        grads.push_back(persist(MemoryKind::Gradients, p.bytes(), {"grad of ", graph_.layer(graph_.owner(p)).name, ".", graph_.param_own_name(p), " (from the previous step)"}, Carry::LastGrad));
      } else {  // its values, its indices viewing the ids; set_to_none=False: the copy AccumulateGrad made of both
        const std::int64_t values = p.grad_bytes() - checked_mul(p.sparse_rows, dtype_size(DType::Int64));
        grads.push_back(persist(MemoryKind::Gradients, options_.keep_grads ? p.grad_bytes() : values,
                                {"grad of ", graph_.layer(graph_.owner(p)).name, ".", graph_.param_own_name(p), " (sparse, from the previous step)"}, Carry::LastGrad));
        emptied.push_back(grads.back());
      }
    }
  for (int g : options_.keep_grads ? emptied : grads) memory_.release(g);
}

// The next micro-step of gradient accumulation starts where the last one left off: with its
// `out` and `loss` still bound (in a plain loop), and the gradients accumulated so far.
void StepSimulator::next_micro_step(std::int64_t m) {
  micro_ = m;
  memory_.micro_step(m);
  previous_outputs_.clear();
  previous_loss_ = -1;
  if (options_.loop == Loop::Plain) {
    for (int v : graph_.outputs) previous_outputs_.push_back(block_of(v));
    previous_loss_ = loss_block_;
  }
  std::vector<int> batch;  // the input keeps its blocks; every other storage is made anew
  for (int v : graph_.inputs) batch.push_back(block_of(v));
  std::fill(block_.begin(), block_.end(), -1);
  for (std::size_t k = 0; k < graph_.inputs.size(); ++k) block_of(graph_.inputs[k]) = batch[k];
  for (LossRun& l : losses_) l.kept.clear();
  checkpoint_.next_micro_step(options_.loop == Loop::Plain);
}

// What this step leaves for the next: `out` and `loss` (gradients are marked in backward);
// a step written as a function has freed them as it returned.
void StepSimulator::mark_carried_out() {
  // A train_step() has let go of its `out` and `loss` as it returned; inference has no loop
  // around it to speak of (its output is this pass's, whatever --loop says).
  if (options_.loop == Loop::Function && graph_.options.mode == Mode::Train) return;
  for (int v : graph_.outputs)
    if (block_of(v) >= 0 && memory_.carry(block_of(v)) == Carry::None) memory_.mark(block_of(v), Carry::Output);
  if (loss_block_ >= 0) memory_.mark(loss_block_, Carry::Loss);
  for (int b : checkpoint_.graph_held()) memory_.mark(b, Carry::Loss);  // they die with the loss's graph
}

}  // namespace nnmem::detail
