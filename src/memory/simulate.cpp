// One training step (or one inference pass), tensor by tensor, the way PyTorch's loop
//   opt.zero_grad(); out = model(x); loss = loss_fn(out, y); loss.backward(); opt.step()
// spends memory in its steady state (the optimizer state already exists):
//   forward  — each output is allocated; a tensor is freed once nothing later reads it and no
//              backward node keeps it; in a plain loop the previous step's output and loss are
//              released when `out` and `loss` are rebound (a function returning loss.item()
//              frees them as it returns, so the next step starts without them);
//   backward — in reverse order, each node allocates its inputs' gradients (or passes its own
//              on, for views, add and cat) and its parameters' gradients, then frees what it
//              kept and the gradient it consumed; gradients of tensors read twice accumulate;
//   step     — the optimizer's temporaries.
//
// Every tensor is its own allocation, as in PyTorch — each parameter, buffer, gradient and
// optimizer state tensor too — and each block is marked with what it is to the loop around
// the step (Carry: built with the model, the previous step's output, this step's gradient, …).
// The byte accounting here (peak_bytes, the timeline) is the steady step alone; the CUDA
// caching allocator replays the same events (cuda_replay.cpp), reading the marks to rebuild the
// loop: the model built, a first iteration (no previous output, loss or gradients; the
// optimizer state created in its step), then this step again until the allocator's state
// repeats.
#include <algorithm>
#include <map>
#include <utility>

#include "checkpoint.hpp"
#include "step.hpp"

namespace nnmem::detail {

namespace {

class StepSimulator {
 public:
  StepSimulator(const Graph& graph, const StepOptions& options, LossKind loss, const CheckpointPlan& checkpoints)
      : graph_(graph), options_(options), loss_(loss), block_(graph.storages.size(), -1), returned_(graph.values.size()),
        checkpoints_(checkpoints),
        checkpoint_(graph, checkpoints, memory_,
                    {[this](int v) -> int& { return block_of(v); },
                     [this](std::size_t node, bool stop) { forward_node(node, Pass::Recompute, stop); }}) {
    for (int v : graph.outputs) returned_[static_cast<std::size_t>(v)] = true;
  }

  StepResult run(const std::vector<TensorType>& params) {
    const bool training = graph_.options.mode == Mode::Train;
    persistent(params, training);
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
      backward(params);
      if (m == k) simulate_optimizer_step(memory_, options_, graph_.options.device, *graph_.options.torch, params);
      if (options_.loop == Loop::Function) {
        memory_.at(m == k ? Phase::Optimizer : Phase::Backward, "return loss.item()");
        for (int v : graph_.outputs) memory_.release(block_of(v));
        checkpoint_.release_graph();  // the graph dies with `loss`
        memory_.release(loss_block_);
      }
    }
    mark_carried_out();
    StepResult r;
    r.peak = memory_.peak();
    r.peak_phase = memory_.peak_phase();
    r.peak_layer = memory_.peak_layer();
    r.peak_micro_step = memory_.peak_micro_step();
    r.breakdown = memory_.breakdown_at_peak();
    r.backward_transients = memory_.backward_transients();
    r.timeline = memory_.take_timeline();
    r.trace = memory_.take_trace();
    return r;
  }

 private:
  const TensorValue& value(int v) const { return graph_.values[static_cast<std::size_t>(v)]; }
  int& block_of(int v) { return block_[static_cast<std::size_t>(value(v).storage)]; }
  bool is_output(int v) const { return returned_[static_cast<std::size_t>(v)]; }
  // A node is part of the autograd graph when it has something to differentiate.
  bool in_autograd(const Node& node) const {
    return std::any_of(node.outputs.begin(), node.outputs.end(), [&](int v) { return value(v).requires_grad; });
  }

  // Allocates a tensor that outlives the step, marked with what it is to the loop.
  int persist(MemoryKind kind, std::int64_t bytes, std::string what, Carry carry) {
    const int block = memory_.alloc(kind, bytes, std::move(what));
    memory_.mark(block, carry);
    return block;
  }

  // The trainable parameters' names, in the order of `params` (node by node).
  std::vector<std::string> param_names() const {
    std::vector<std::string> names;
    for (const Node& n : graph_.nodes)
      if (n.trainable)
        for (const ParamDecl& p : n.result.params) names.push_back(graph_.layer(n).name + "." + p.name);
    return names;
  }

  void persistent(const std::vector<TensorType>& params, bool training) {
    memory_.at(Phase::Forward, "");
    // Parameters and buffers layer by layer, as model.to(device) moves them.
    for (const Node& n : graph_.nodes) {
      const std::string& name = graph_.layer(n).name;
      for (const ParamDecl& p : n.result.params)
        persist(MemoryKind::Parameters, TensorType{p.shape, p.dtype}.bytes(), "parameter " + name + "." + p.name, Carry::Model);
      for (const ParamDecl& b : n.result.buffers)
        persist(MemoryKind::Buffers, TensorType{b.shape, b.dtype}.bytes(), "buffer " + name + "." + b.name, Carry::Model);
    }
    const std::vector<std::string> names = training ? param_names() : std::vector<std::string>{};
    if (training)
      for (const StateTensor& t : optimizer_state_tensors(options_, graph_.options.device, params))
        persist(MemoryKind::OptimizerState, t.bytes,
                "optimizer state: " + t.slot + (t.param >= 0 ? " of " + names.at(static_cast<std::size_t>(t.param)) : ""),
                Carry::State);
    for (int v : graph_.inputs) {
      block_of(v) = persist(MemoryKind::Inputs, value(v).type.bytes(), "input '" + value(v).name + "'", Carry::Batch);
    }
    if (!training) return;
    if (loss_tensors_.target) persist(MemoryKind::Inputs, loss_tensors_.target->bytes(), "target", Carry::Batch);
    // In a plain loop, still bound to `out` and `loss` from the previous step until this step
    // rebinds them.
    if (options_.loop == Loop::Plain) {
      for (int v : graph_.outputs)
        previous_outputs_.push_back(persist(MemoryKind::Activations, graph_.storages[value(v).storage].bytes,
                                            "previous step's output", Carry::LastOutput));
      previous_loss_ = persist(MemoryKind::Activations, loss_tensors_.loss_bytes, "previous step's loss", Carry::LastLoss);
    }
    checkpoint_.previous_step(options_.loop == Loop::Plain);
    // zero_grad(): set_to_none frees last step's gradients; otherwise they are zeroed in place.
    std::vector<int> grads;
    for (std::size_t k = 0; k < params.size(); ++k)
      grads.push_back(persist(MemoryKind::Gradients, params[k].bytes(), "grad of " + names.at(k) + " (from the previous step)",
                              Carry::LastGrad));
    if (!options_.keep_grads)
      for (int g : grads) memory_.release(g);
  }

  // The next micro-step of gradient accumulation starts where the last one left off: with its
  // `out` and `loss` still bound (in a plain loop), and the gradients accumulated so far.
  void next_micro_step(std::int64_t m) {
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
    loss_kept_.clear();
    checkpoint_.next_micro_step(options_.loop == Loop::Plain);
  }

  // What this step leaves for the next: `out` and `loss` (gradients are marked in backward);
  // a step written as a function has freed them as it returned.
  void mark_carried_out() {
    if (options_.loop == Loop::Function) return;
    for (int v : graph_.outputs)
      if (block_of(v) >= 0 && memory_.carry(block_of(v)) == Carry::None) memory_.mark(block_of(v), Carry::Output);
    if (loss_block_ >= 0) memory_.mark(loss_block_, Carry::Loss);
  }

  // How a node's forward runs: as usual; inside a checkpointed segment, keeping nothing (what
  // the op would keep is dropped, or never exists outside its call); or recomputed in backward,
  // where `stop` marks the node whose last save ends 2.x's early-stopping recomputation.
  enum class Pass { Forward, Checkpointed, Recompute };

  void forward_node(std::size_t i, Pass pass, bool stop = false) {
    const Node& node = graph_.nodes[i];
    const std::string& name = graph_.layer(node).name;
    if (pass != Pass::Recompute) memory_.at(Phase::Forward, name);
    const char* again = pass == Pass::Recompute ? " (recomputed)" : "";
    const bool keeps = graph_.options.mode == Mode::Train && in_autograd(node);
    // Stopping before the output exists: everything the node keeps is packed before its kernel.
    const bool no_output = stop && std::all_of(node.result.saved.begin(), node.result.saved.end(),
                                               [](const Saved& s) { return s.before_output(); });
    // Autocast's copies of the inputs and parameters, made as the layer runs; a cached
    // parameter copy is also held by autocast's cache until the loss is computed.
    std::vector<int> copies;
    for (int c : node.input_casts)
      if (c >= 0) copies.push_back(block_of(c) = memory_.alloc(MemoryKind::Activations, value(c).type.bytes(), value(c).name, 1));
    for (int c : node.param_casts) {
      if (c < 0) continue;
      copies.push_back(block_of(c) = memory_.alloc(MemoryKind::WeightCopies, value(c).type.bytes(), value(c).name, value(c).cached ? 2 : 1));
      if (value(c).cached) cached_copies_.push_back(block_of(c));
    }
    // Unkept, a copy an op of its own made before this one (F.pad's) lives until this op has run.
    if (pass == Pass::Checkpointed && keeps)
      for (const Saved& s : node.result.saved)
        if (s.of == Saved::Of::Extra && s.made == Saved::Made::Separate)
          copies.push_back(memory_.alloc(MemoryKind::Activations, s.type.bytes(), s.what + " of " + name, 1));
    std::vector<int> fresh;
    for (int v : node.outputs) {
      if (no_output) break;
      if (block_of(v) < 0) {
        block_of(v) = memory_.alloc(MemoryKind::Activations, graph_.storages[value(v).storage].bytes, "output of " + name + again, 1);
        fresh.push_back(block_of(v));
      }
      if (!stop) hold_reads(block_of(v), pass == Pass::Recompute ? checkpoint_.reads(v) : static_cast<int>(value(v).readers.size()) + (is_output(v) ? 1 : 0));
    }
    if (keeps && pass != Pass::Checkpointed) {
      for (const Saved& s : node.result.saved) {
        if (no_output && !s.before_output()) continue;
        if (s.of == Saved::Of::Extra) {
          kept_[i].push_back(memory_.alloc(MemoryKind::Activations, s.type.bytes(), s.what + " of " + name + again, 1));
        } else if (const int v = node.saved_value(s); v >= 0) {
          memory_.hold(block_of(v));
          kept_[i].push_back(block_of(v));
        }
      }
    }
    if (!no_output) scratch(node.result.forward_scratch, name, [](const Scratch&) { return true; });
    for (int b : fresh) memory_.release(b);
    if (!stop)  // a stopped recomputation drops its reads as it unwinds
      for (int v : node.inputs) drop_read(block_of(v));
    for (int b : copies) memory_.release(b);
  }

  // A hold for each later read of a tensor, and the read done; a recomputation keeps count of
  // those it holds, to drop them when it stops early.
  void hold_reads(int block, int reads) {
    memory_.hold(block, reads);
    checkpoint_.held(block, reads);
  }
  void drop_read(int block) {
    memory_.release(block);
    checkpoint_.held(block, -1);
  }

  void forward(bool training) {
    for (int v : graph_.inputs) memory_.hold(block_of(v), static_cast<int>(value(v).readers.size()));
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      const Segment* s = checkpoints_.of(i);
      if (s && i == s->first) checkpoint_.begin_segment(*s);
      forward_node(i, !training ? Pass::Forward : s ? Pass::Checkpointed : Pass::Forward);
      if (s && i == s->last && s->keepers.empty()) checkpoint_.end_frame(*s);  // nothing refers to its frame
    }
    if (training) {
      memory_.at(Phase::Forward, "out = model(x)");
      for (int b : previous_outputs_) memory_.release(b);
    } else {
      release_autocast_cache();
    }
  }

  // Leaving `with torch.autocast(...)` drops its cache of parameter copies; the copies a
  // backward node keeps live on until that node has run.
  void release_autocast_cache() {
    memory_.at(memory_.phase(), "autocast exit");
    for (int b : cached_copies_) memory_.release(b);
    cached_copies_.clear();
  }

  void loss_forward() {
    memory_.at(Phase::Forward, "loss");
    const int out = graph_.outputs.front();
    const int input = loss_tensors_.cast ? memory_.alloc(MemoryKind::Activations, loss_tensors_.cast->bytes(), "output as float32", 1) : block_of(out);
    for (const auto& t : loss_tensors_.kept) loss_kept_.push_back(memory_.alloc(MemoryKind::Activations, t.bytes(), "kept by the loss", 1));
    if (loss_tensors_.keeps_input) {
      memory_.hold(input);
      loss_kept_.push_back(input);
    }
    loss_block_ = memory_.alloc(MemoryKind::Activations, loss_tensors_.loss_bytes, "loss");
    if (options_.grad_accum > 1) {
      // loss / K: K as a wrapped scalar (a CPU tensor, which DivBackward0 keeps), the quotient,
      // and the undivided loss let go.
      divisor_ = memory_.alloc(MemoryKind::Activations, graph_.options.device == Device::Cpu ? kWrappedNumberBytes : 0,
                               "the loss's divisor K");
      const int undivided = std::exchange(loss_block_, memory_.alloc(MemoryKind::Activations, loss_scalar_bytes(), "loss / K"));
      memory_.release(undivided);
    }
    checkpoint_.release_previous();  // the previous step's graph dies as its loss is let go
    if (previous_loss_ >= 0) memory_.release(previous_loss_);
    if (loss_tensors_.cast) memory_.release(input);
    if (graph_.options.amp) release_autocast_cache();
  }

  // A layer's scratch tensors (layer.hpp): all allocated at once; those `now` says are
  // released again at once, the others returned for the caller to release later.
  template <typename Now>
  std::vector<int> scratch(const std::vector<Scratch>& tensors, const std::string& layer, Now now) {
    std::vector<int> blocks, later;
    for (const Scratch& s : tensors) blocks.push_back(memory_.alloc(MemoryKind::Transients, s.type.bytes(), s.what + " of " + layer));
    for (std::size_t k = 0; k < tensors.size(); ++k)
      now(tensors[k]) ? memory_.release(blocks[k]) : later.push_back(blocks[k]);
    return later;
  }

  // ToCopyBackward0: the gradient of an autocast copy becomes one in the original dtype.
  int cast_back(int grad, std::int64_t bytes, const std::string& what) {
    const int converted = memory_.alloc(memory_.kind(grad), bytes, what);
    memory_.release(grad);
    return converted;
  }

  // Adds a gradient contribution to value v's gradient as autograd's InputBuffer does: torch
  // 1.13 makes `old + new`, a new tensor of v's own size, whatever the blocks behind `old` and
  // `new` (a gradient that cat passed on is a narrow() view holding the whole concatenated
  // gradient's storage); 2.x adds `new` into `old` in place when `old` is a whole tensor of
  // v's size (not such a slice) that nothing else holds.
  void accumulate(int v, int contribution) {
    auto [it, fresh] = grad_.emplace(v, contribution);
    if (fresh) return;
    int& existing = it->second;
    if (graph_.options.torch->grad_sum_in_place && memory_.refs(existing) == 1 &&
        memory_.bytes(existing) == value(v).type.bytes()) {
      memory_.release(contribution);
      return;
    }
    const int sum = memory_.alloc(MemoryKind::Transients, value(v).type.bytes(), "accumulated grad");
    memory_.release(existing);
    memory_.release(contribution);
    existing = sum;
  }

  void backward(const std::vector<TensorType>&) {
    memory_.at(Phase::Backward, "loss");
    const int out = graph_.outputs.front();
    const std::int64_t in_bytes = loss_tensors_.input(value(out).type).bytes();
    // torch.autograd.backward() holds the root gradient (ones_like(loss)) until it returns.
    const int root = memory_.alloc(MemoryKind::Transients, dtype_size(DType::Float32), "grad of loss");
    int quotient = -1;  // loss / K: DivBackward0's gradient of the undivided loss, then its divisor let go
    if (divisor_ >= 0) {
      quotient = memory_.alloc(MemoryKind::Transients, loss_scalar_bytes(), "grad of the undivided loss");
      memory_.release(std::exchange(divisor_, -1));
    }
    int grad_in = -1;
    if (loss_ == LossKind::CrossEntropy) {
      // NllLossBackward0, then LogSoftmaxBackward0; each frees what it kept once it has run.
      const int grad_logp = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of log_softmax");
      memory_.release(loss_kept_[1]);  // total_weight
      if (quotient >= 0) memory_.release(quotient);
      grad_in = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of output");
      memory_.release(grad_logp);
      memory_.release(loss_kept_[0]);  // log-probabilities
    } else {
      std::vector<int> scratch;
      for (const TensorType& t : loss_tensors_.backward_scratch) scratch.push_back(memory_.alloc(MemoryKind::Transients, t.bytes(), "loss backward temporary"));
      grad_in = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of output");
      if (quotient >= 0) memory_.release(quotient);
      for (int b : scratch) memory_.release(b);
      for (int b : loss_kept_) memory_.release(b);
    }
    if (loss_tensors_.cast) grad_in = cast_back(grad_in, value(out).type.bytes(), "grad of output");
    grad_[out] = grad_in;

    for (std::size_t i = graph_.nodes.size(); i-- > 0;) {
      checkpoint_.entering(i, grad_);
      const Node& node = graph_.nodes[i];
      if (!in_autograd(node)) continue;
      const std::string& name = graph_.layer(node).name;
      memory_.at(Phase::Backward, name);
      const bool passthrough = node.result.grad_passthrough || node.result.alias == Alias::View;
      const auto found = grad_.find(node.outputs.front());
      if (found == grad_.end()) continue;  // no gradient reached it
      checkpoint_.before_node(i, grad_);
      const int grad_out = found->second;
      std::vector<std::pair<std::size_t, int>> contributions;  // (input index, block)
      std::vector<std::pair<std::size_t, TensorType>> reductions;  // (position in contributions, reduced type)
      const TensorType& out_type = value(node.outputs.front()).type;
      for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        if (!value(node.inputs[k]).requires_grad) continue;
        const TensorType& in_type = value(node.read(k)).type;
        const bool broadcast = node.result.broadcasts && in_type.shape != out_type.shape;
        // The engine casts a gradient to its input's dtype: one passed on to an input of
        // another dtype (add's type promotion) is a new tensor, not the output's gradient.
        if (passthrough && !broadcast && in_type.dtype == out_type.dtype) {
          memory_.hold(grad_out);
          contributions.emplace_back(k, grad_out);
          continue;
        }
        // A broadcast input's gradient is summed down from an output-shaped one: the output's
        // gradient itself (add), or a product computed at the output's shape (mul) — which
        // lives until the engine's validate_outputs sums it, after the node made every gradient.
        if (broadcast && !passthrough) {
          reductions.emplace_back(contributions.size(), in_type);
          contributions.emplace_back(k, memory_.alloc(MemoryKind::Transients, TensorType{out_type.shape, in_type.dtype}.bytes(),
                                                      "grad of input of " + name + " before reduction"));
          continue;
        }
        const std::int64_t bytes = k == 0 && node.result.input_grad_storage ? node.result.input_grad_storage->bytes() : in_type.bytes();
        contributions.emplace_back(k, memory_.alloc(MemoryKind::Transients, bytes, "grad of input of " + name));
      }
      for (const auto& [at, type] : reductions) {
        const int full = contributions[at].second;
        contributions[at].second = memory_.alloc(MemoryKind::Transients, type.bytes(), "grad of input of " + name);
        memory_.release(full);
      }
      std::vector<int> late = scratch(node.result.backward_scratch, name, [](const Scratch& s) { return s.freed_before_param_grads; });
      // Parameters' gradients: the node's own, then those the engine sums down after it.
      std::vector<int> param_grads(node.trainable ? node.result.params.size() : 0, -1);
      for (const bool summed : {false, true}) {
        if (summed && checkpoint_.hands_over(i)) release_kept(i);  // the recomputed tensors die with the apply
        for (std::size_t k = 0; k < param_grads.size(); ++k) {
          const int copy = node.param_casts[k];
          const ParamDecl& p = node.result.params[k];
          const TensorType type = copy >= 0 ? value(copy).type : TensorType{p.shape, p.dtype};
          if (p.grad_summed == summed)
            param_grads[k] = memory_.alloc(MemoryKind::Gradients, type.bytes(), "grad of " + name + "." + p.name);
        }
      }
      for (int b : late) memory_.release(b);
      release_kept(i);
      for (int v : node.outputs)
        if (auto it = grad_.find(v); it != grad_.end()) memory_.release(it->second), grad_.erase(it);
      checkpoint_.after_node(i);
      // The node's outputs are dispatched: input gradients go to their input buffers.
      for (auto [k, b] : contributions)
        if (node.input_casts[k] < 0) accumulate(node.inputs[k], b);
      // Then the autocast copies' ToCopyBackward nodes, latest-made first: autocast casts a
      // call's arguments last to first (GCC evaluates them right to left), so the input's copy
      // runs first, then the weight's, then the bias's. Each casts a gradient back.
      for (auto [k, b] : contributions)
        if (node.input_casts[k] >= 0) accumulate(node.inputs[k], cast_back(b, value(node.inputs[k]).type.bytes(), "grad of input of " + name));
      for (std::size_t k = 0; k < param_grads.size(); ++k) {
        if (node.param_casts[k] >= 0)
          param_grads[k] = cast_back(param_grads[k], TensorType{node.result.params[k].shape, node.result.params[k].dtype}.bytes(),
                                     "grad of " + name + "." + node.result.params[k].name);
        // .grad is made in the first micro-step (when set_to_none left none); later ones, and
        // --keep-grads, have AccumulateGrad add into it and free the new gradient.
        if (micro_ == 1) memory_.mark(param_grads[k], Carry::Grad);
        if (options_.keep_grads || micro_ > 1) memory_.release(param_grads[k]);
      }
    }
    checkpoint_.backward_done(grad_);
    memory_.at(Phase::Backward, "");
    memory_.release(root);
  }

  // The 0-dim loss's own size (torch 1.13's mse loss holds a larger storage).
  std::int64_t loss_scalar_bytes() const {
    return dtype_size(loss_tensors_.input(value(graph_.outputs.front()).type).dtype);
  }

  void release_kept(std::size_t node) {
    for (int b : kept_[node]) memory_.release(b);
    kept_[node].clear();
  }

  const Graph& graph_;
  const StepOptions& options_;
  LossKind loss_;
  LossTensors loss_tensors_ = loss_tensors(loss_, graph_.values[static_cast<std::size_t>(graph_.outputs.front())].type, {}, {},
                                           graph_.options.amp.has_value(), graph_.float_dtype);
  std::vector<int> cached_copies_;          // autocast's cache of parameter copies
  MemoryTracker memory_;
  std::vector<int> block_;                  // graph storage -> live block
  std::vector<bool> returned_;              // value -> whether the model returns it
  std::map<std::size_t, std::vector<int>> kept_;  // node -> blocks its backward keeps
  std::vector<int> loss_kept_;
  std::vector<int> previous_outputs_;
  int previous_loss_ = -1;
  int loss_block_ = -1;
  int divisor_ = -1;                        // gradient accumulation: K, kept by DivBackward0
  std::int64_t micro_ = 1;                  // which micro-step is simulated
  std::map<int, int> grad_;                 // value -> block holding its gradient
  const CheckpointPlan& checkpoints_;
  CheckpointRun checkpoint_;
};

}  // namespace

StepResult simulate_step(const Graph& graph, const StepOptions& options, LossKind loss,
                         const std::vector<TensorType>& trainable_params, const CheckpointPlan& checkpoints) {
  return StepSimulator(graph, options, loss, checkpoints).run(trainable_params);
}

}  // namespace nnmem::detail
