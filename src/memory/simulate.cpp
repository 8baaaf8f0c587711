// One training step (or one inference pass), tensor by tensor, the way PyTorch's loop
//   opt.zero_grad(); out = model(x); loss = loss_fn(out, y); loss.backward(); opt.step()
// spends memory in its steady state (the optimizer state already exists):
//   forward  — each output is allocated; a tensor is freed once nothing later reads it, no
//              backward node keeps it and forward()'s code no longer refers to it (a block's
//              argument, a variable: TensorValue::held_until); in a plain loop the previous
//              step's output and loss are released when `out` and `loss` are rebound (a
//              function returning loss.item() frees them as it returns, so the next step
//              starts without them);
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
#include <utility>

#include "step_simulator.hpp"

namespace nnmem::detail {

void StepSimulator::forward_node(std::size_t i, Pass pass, bool stop) {
  const Node& node = graph_.nodes[i];
  const std::string& name = graph_.layer(node).name;
  if (pass != Pass::Recompute) memory_.at(Phase::Forward, i, name);
  const char* again = pass == Pass::Recompute ? " (recomputed)" : "";
  const bool keeps = graph_.options.mode == Mode::Train && in_autograd(node);
  // Stopping before the output exists: everything the node keeps is packed before its kernel.
  const bool no_output = stop && std::all_of(node.result->saved.begin(), node.result->saved.end(),
                                             [](const Saved& s) { return s.before_output(); });
  // Autocast's copies of the inputs and parameters, made as the layer runs; a cached
  // parameter copy is also held by autocast's cache until the loss is computed.
  std::vector<int> copies;
  // An op's own conversion it does not keep is its workspace: no bytes (TensorValue::op_workspace).
  for (int c : node.input_casts)
    if (c >= 0)
      copies.push_back(block_of(c) = memory_.alloc(MemoryKind::Activations, value(c).op_workspace ? 0 : value(c).type.bytes(),
                                                   value(c).name, 1));
  for (int c : node.param_casts) {
    if (c < 0 || value(c).producer != static_cast<int>(i)) continue;  // none, or a shared parameter's cached copy
    copies.push_back(block_of(c) = memory_.alloc(MemoryKind::WeightCopies, value(c).type.bytes(), value(c).name, value(c).cached ? 2 : 1));
    if (value(c).cached) cached_copies_.push_back(block_of(c));
  }
  // Unkept, a copy an op of its own made before this one (F.pad's) lives until this op has run.
  if (pass == Pass::Checkpointed && keeps)
    for (const Saved& s : node.result->saved)
      if (s.of == Saved::Of::Extra && s.made == Saved::Made::Separate)
        copies.push_back(memory_.alloc(MemoryKind::Activations, s.type.bytes(), {s.what, " of ", name}, 1));
  const bool early = node.result->scratch_before_output;
  if (!no_output && node.fused == Fused::No) {
    for (const auto& moment : node.result->forward_moments) scratch(moment, name, [](const Scratch&) { return true; });
    if (early) scratch(node.result->forward_scratch, name, [](const Scratch&) { return true; });
  }
  std::vector<int> fresh;
  fresh.reserve(node.outputs.size());
  const bool workspace = node.fused == Fused::Inside;  // inside a fused op: its workspace, not counted
  for (int v : node.outputs) {
    if (no_output) break;
    if (block_of(v) < 0) {
      block_of(v) = memory_.alloc(MemoryKind::Activations, workspace ? 0 : graph_.storages[value(v).storage].bytes,
                                  {workspace ? "inside the fused op: output of " : "output of ", name, again}, 1);
      fresh.push_back(block_of(v));
    }
    if (!stop) hold_reads(block_of(v), pass == Pass::Recompute ? checkpoint_.reads(v) : static_cast<int>(value(v).readers.size()) + (is_output(v) ? 1 : 0));
    if (pass != Pass::Recompute && value(v).held_until >= 0) memory_.hold(block_of(v));  // forward()'s code refers to it
  }
  if (keeps && pass != Pass::Checkpointed) {
    kept_[i].reserve(kept_[i].size() + node.result->saved.size());
    kept_saved_[i].reserve(kept_saved_[i].size() + node.result->saved.size());
    for (std::size_t k = 0; k < node.result->saved.size(); ++k) {
      const Saved& s = node.result->saved[k];
      if (no_output && !s.before_output()) continue;
      if (s.of == Saved::Of::Extra) {
        kept_[i].push_back(memory_.alloc(MemoryKind::Activations, s.type.bytes(), {s.what, " of ", name, again}, 1));
      } else if (const int v = node.saved_value(s); v >= 0) {
        memory_.hold(block_of(v));
        kept_[i].push_back(block_of(v));
      } else {
        continue;
      }
      kept_saved_[i].push_back(static_cast<int>(k));
    }
  }
  if (!early && !no_output && node.fused == Fused::No) scratch(node.result->forward_scratch, name, [](const Scratch&) { return true; });
  for (int b : fresh) memory_.release(b);
  if (!stop)  // a stopped recomputation drops its reads as it unwinds
    for (int v : node.inputs) drop_read(block_of(v));
  for (int b : copies) memory_.release(b);
}

// A hold for each later read of a tensor, and the read done; a recomputation keeps count of
// those it holds, to drop them when it stops early.
void StepSimulator::hold_reads(int block, int reads) {
  memory_.hold(block, reads);
  checkpoint_.held(block, reads);
}

void StepSimulator::drop_read(int block) {
  memory_.release(block);
  checkpoint_.held(block, -1);
}

void StepSimulator::forward(bool training) {
  for (int v : graph_.inputs) memory_.hold(block_of(v), static_cast<int>(value(v).readers.size()) + (value(v).held_until >= 0 ? 1 : 0));
  auto unreferenced = unreferenced_after_.begin();
  for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Segment* s = checkpoints_.of(i);
    if (s && i == s->first) checkpoint_.begin_segment(*s);
    shard_.forward(i);  // ZeRO-3, FSDP: the unit's parameters gathered
    forward_node(i, !training ? Pass::Forward : s ? Pass::Checkpointed : Pass::Forward);
    for (; unreferenced != unreferenced_after_.end() && unreferenced->first == static_cast<int>(i); ++unreferenced)
      memory_.release(block_of(unreferenced->second));  // the code's reference dropped (a call returned)
    shard_.forward_done(i);
    if (s && i == s->last && s->keepers.empty()) checkpoint_.end_frame(*s);  // nothing refers to its frame
  }
  shard_.forward_end();
  if (training) {
    memory_.at(Phase::Forward, "out = model(x)");
    for (int b : previous_outputs_) memory_.release(b);
  } else {
    release_autocast_cache();
  }
}

// Leaving `with torch.autocast(...)` drops its cache of parameter copies; the copies a
// backward node keeps live on until that node has run.
void StepSimulator::release_autocast_cache() {
  memory_.at(memory_.phase(), "autocast exit");
  for (int b : cached_copies_) memory_.release(b);
  cached_copies_.clear();
}

// A gradient replaced by a converted copy: ToCopyBackward0's (the gradient of an autocast copy
// in the original dtype) and AccumulateGrad's (a parameter's gradient in the parameter's strides).
int StepSimulator::cast_back(int grad, std::int64_t bytes, What what) {
  const int converted = memory_.alloc(memory_.kind(grad), bytes, what);
  memory_.release(grad);
  return converted;
}

// Adds a gradient contribution to value v's gradient as autograd's InputBuffer does: torch
// 1.13 makes `old + new`, a new tensor of v's own size, whatever the blocks behind `old` and
// `new` (a gradient that cat passed on is a narrow() view holding the whole concatenated
// gradient's storage); 2.x adds `new` into `old` in place when `old` is a whole tensor of
// v's size (not such a slice) that nothing else holds, and not a view of another tensor.
// `view`: the contribution is a view of another tensor (LayerResult::input_grad_view); the
// buffer's gradient is, as long as it is that first contribution.
void StepSimulator::accumulate(int v, int contribution, bool view) {
  auto [it, fresh] = grad_.emplace(v, contribution);
  if (fresh) {
    if (view) view_grads_.insert(v);
    return;
  }
  add_into(it->second, contribution, value(v).type.bytes(), view_grads_.erase(v) > 0);
}

// `whole`: the size of the tensor whose gradient this is (a slice of a larger one is smaller).
// `view`: `existing` is a view of another tensor, whose storage it shares: never reused.
void StepSimulator::add_into(int& existing, int contribution, std::int64_t whole, bool view) {
  if (graph_.options.torch->grad_sum_in_place && !view && memory_.refs(existing) == 1 && memory_.bytes(existing) == whole) {
    memory_.release(contribution);
    return;
  }
  const int sum = memory_.alloc(memory_.kind(existing), whole, "accumulated grad");
  memory_.release(existing);
  memory_.release(contribution);
  existing = sum;
}

// A parameter used by several layers (a shared module, a tied weight) has one AccumulateGrad
// node: the engine sums the contributions in its input buffer and runs it after the last one.
// `view`: the contribution is a view of another tensor (ParamDecl::grad_view); so is the
// buffered sum while it is the first contribution. Returns the gradient once complete, else -1.
int StepSimulator::param_gradient(int param, int contribution, bool view) {
  const int uses = graph_.parameters[static_cast<std::size_t>(param)].uses;
  if (uses == 1) return contribution;
  auto [it, fresh] = param_grads_.emplace(param, PendingGrad{contribution, 1, view});
  PendingGrad& pending = it->second;
  if (!fresh) {
    add_into(pending.grad, contribution, graph_.parameters[static_cast<std::size_t>(param)].bytes(), pending.view);
    ++pending.contributions;
    pending.view = false;
  }
  if (pending.contributions < uses) return -1;
  const int done = pending.grad;
  param_grads_.erase(it);
  return done;
}

void StepSimulator::backward() {
  const int root = loss_backward();

  const bool add_into = options_.keep_grads || micro_ > 1;  // .grad exists: gradients are added into it
  for (std::size_t i = graph_.nodes.size(); i-- > 0;) {
    shard_.backward(i, add_into);  // ZeRO, FSDP: the unit left reduce-scatters, the one entered is gathered
    checkpoint_.entering(i, grad_);
    const Node& node = graph_.nodes[i];
    if (!in_autograd(node)) continue;
    const std::string& name = graph_.layer(node).name;
    memory_.at(Phase::Backward, i, name);
    const bool passthrough =
        (node.result->grad_passthrough || node.result->alias == Alias::View) && !node.result->grad_scatters;
    // The gradient of its first output that has one (an LSTM whose h_n alone is read gets only
    // h_n's); none: no gradient reached it. A split's backward fills the outputs that got none
    // with zeros, then concatenates them into the input's gradient (_split_with_sizes_backward).
    const auto with_grad = std::find_if(node.outputs.begin(), node.outputs.end(), [&](int v) { return grad_.count(v) > 0; });
    if (with_grad == node.outputs.end()) continue;
    checkpoint_.before_node(i, grad_);
    const int grad_out = grad_.at(*with_grad);
    std::vector<int> zeros;
    if (node.result->grad_scatters)
      for (int v : node.outputs)
        if (grad_.count(v) == 0)
          zeros.push_back(memory_.alloc(MemoryKind::Transients, value(v).type.bytes(), {"zeros for the grad of ", value(v).name}));
    std::vector<std::pair<std::size_t, int>> contributions;  // (input index, block)
    std::set<int> views;  // the contributions that are views of another tensor
    std::vector<std::pair<std::size_t, TensorType>> reductions;  // (position in contributions, reduced type)
    const TensorType& out_type = value(node.outputs.front()).type;
    const auto input_grads = [&](int only) {  // -1: every input's
      for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        if (!value(node.inputs[k]).requires_grad || (only >= 0 && k != static_cast<std::size_t>(only))) continue;
        const TensorType& in_type = value(node.read(k)).type;
        const bool broadcast = node.result->broadcasts && in_type.shape != out_type.shape;
        // The engine casts a gradient to its input's dtype: one passed on to an input of
        // another dtype (add's type promotion) is a new tensor, not the output's gradient.
        if (passthrough && !broadcast && in_type.dtype == out_type.dtype) {
          memory_.hold(grad_out);
          contributions.emplace_back(k, grad_out);
          // a view op's backward views the output's gradient; a no-op passes on what it got
          if (node.result->input_grad_view || view_grads_.count(*with_grad) > 0) views.insert(grad_out);
          continue;
        }
        // A broadcast input's gradient is summed down from an output-shaped one: the output's
        // gradient itself (add), or a product computed at the output's shape (mul) — which
        // lives until the engine's validate_outputs sums it, after the node made every gradient.
        if (broadcast && !passthrough) {
          reductions.emplace_back(contributions.size(), in_type);
          contributions.emplace_back(k, memory_.alloc(MemoryKind::Transients, TensorType{out_type.shape, in_type.dtype}.bytes(),
                                                      {"grad of input of ", name, " before reduction"}));
          continue;
        }
        const std::int64_t bytes = k == 0 && node.result->input_grad_storage ? node.result->input_grad_storage->bytes() : in_type.bytes();
        contributions.emplace_back(k, memory_.alloc(MemoryKind::Transients, bytes, {"grad of input of ", name}));
        if (k == 0 && node.result->input_grad_view && !passthrough) views.insert(contributions.back().second);
      }
      for (const auto& [at, type] : reductions) {
        const int full = contributions[at].second;
        contributions[at].second = memory_.alloc(MemoryKind::Transients, type.bytes(), {"grad of input of ", name});
        memory_.release(full);
      }
      reductions.clear();
      for (int b : zeros) memory_.release(b);
      zeros.clear();
    };
    // Parameters' gradients: the node's own, then those the engine sums down after it. A
    // tensor read as the parameter itself (Alias::Parameter): the output's gradient is .grad.
    const bool read_as_is = node.trainable && node.result->alias == Alias::Parameter;
    std::vector<int> param_grads(node.trainable ? node.result->params.size() : 0, -1);
    // A sparse gradient (Embedding's `sparse: true`): its values are the output's gradient and
    // its indices view the ids (a model input): AccumulateGrad keeps both as .grad, no copy.
    const auto sparse = [&](std::size_t k) -> const Parameter* {
      const Parameter& p = graph_.parameters[static_cast<std::size_t>(node.params[k])];
      return p.sparse_rows > 0 ? &p : nullptr;
    };
    const auto param_grad = [&](std::size_t k) {
      if (sparse(k)) {
        memory_.hold(param_grads[k] = grad_out);
        return;
      }
      const int copy = node.param_casts[k];
      const ParamDecl& p = node.result->params[k];
      const TensorType type = copy >= 0 ? value(copy).type : TensorType{p.shape, p.dtype};
      param_grads[k] = memory_.alloc(MemoryKind::Gradients, type.bytes(), {"grad of ", name, ".", p.name});
    };
    // The gradients made so far go to their parameters (AccumulateGrad runs as soon as its
    // gradient is dispatched).
    std::vector<bool> handed(param_grads.size(), false);
    const auto hand_over = [&] {
      for (std::size_t k = 0; k < param_grads.size(); ++k) {
        if (handed[k] || param_grads[k] < 0) continue;
        handed[k] = true;
        if (node.param_casts[k] >= 0)
          param_grads[k] = cast_back(param_grads[k], TensorType{node.result->params[k].shape, node.result->params[k].dtype}.bytes(),
                                     {"grad of ", name, ".", node.result->params[k].name});
        // .grad is made in the first micro-step (when set_to_none left none); later ones, and
        // --keep-grads, have AccumulateGrad add into it and free the new gradient.
        // (autocast's cast back makes a tensor of its own, no view)
        int complete = param_gradient(node.params[k], param_grads[k], node.result->params[k].grad_view && node.param_casts[k] < 0);
        if (complete < 0) continue;  // a shared parameter's sum waits for its other uses
        if (const Parameter* s = sparse(k); s && options_.keep_grads) {
          // zero_grad(set_to_none=False) emptied .grad: adding into it makes new indices and values
          const int added = memory_.alloc(MemoryKind::Gradients, s->grad_bytes(), {"grad of ", graph_.layer(graph_.owner(*s)).name, ".", graph_.param_own_name(*s), " (sparse: indices and values)"});
          memory_.release(complete);
          memory_.mark(added, Carry::Grad);
          continue;
        }
        // AccumulateGrad's copy into the parameter's strides, made where it would keep the gradient itself
        if (node.result->params[k].grad_restrided && micro_ == 1 && !options_.keep_grads)
          complete = cast_back(complete, memory_.bytes(complete), {"grad of ", name, ".", node.result->params[k].name,
                                                                   " (AccumulateGrad's copy in the parameter's strides)"});
        if (shard_.take_gradient(node.params[k], complete)) continue;  // reduce-scattered as its unit ends
        if (micro_ == 1) memory_.mark(complete, Carry::Grad);
        if (options_.keep_grads || micro_ > 1) memory_.release(complete);
      }
    };
    // The node's outputs are dispatched: input gradients go to their input buffers, then the
    // autocast copies' ToCopyBackward nodes, latest-made first: autocast casts a call's
    // arguments last to first (GCC evaluates them right to left), so the input's copy runs
    // first, then the weight's, then the bias's. Each casts a gradient back.
    const auto dispatch = [&] {
      for (auto [k, b] : contributions)
        if (node.input_casts[k] < 0) accumulate(node.inputs[k], b, views.count(b) > 0);
      for (auto [k, b] : contributions)
        if (node.input_casts[k] >= 0) accumulate(node.inputs[k], cast_back(b, value(node.inputs[k]).type.bytes(), {"grad of input of ", name}));
      contributions.clear();
      views.clear();
    };
    if (node.result->backward_program) {
      run_program(i, {input_grads, dispatch, param_grad, hand_over}, !param_grads.empty());
      if (checkpoint_.hands_over(i)) release_kept(i);
    } else {
      input_grads(-1);
      std::vector<int> late = scratch(node.result->backward_scratch, name, [](const Scratch& s) { return s.freed_before_param_grads; });
      if (read_as_is) memory_.hold(param_grads[0] = grad_out);
      for (const bool summed : {false, true}) {
        if (summed && checkpoint_.hands_over(i)) release_kept(i);  // the recomputed tensors die with the apply
        for (std::size_t k = 0; k < param_grads.size(); ++k)
          if (node.result->params[k].grad_summed == summed && !read_as_is) param_grad(k);
      }
      for (int b : late) memory_.release(b);
    }
    release_kept(i);
    for (int v : node.outputs)
      if (auto it = grad_.find(v); it != grad_.end()) memory_.release(it->second), grad_.erase(it), view_grads_.erase(v);
    checkpoint_.after_node(i);
    dispatch();
    hand_over();
  }
  shard_.backward_done(add_into);
  checkpoint_.backward_done(grad_);
  memory_.at(Phase::Backward, "");
  memory_.release(root);
}

void StepSimulator::release_kept(std::size_t node) {
  for (int b : kept_[node])
    if (b >= 0) memory_.release(b);
  kept_[node].clear();
  kept_saved_[node].clear();
}

// A backward PyTorch runs as several nodes (layer.hpp's BackwardEvent), event by event.
void StepSimulator::run_program(std::size_t i, const ProgramSteps& steps, bool trainable) {
  const Node& node = graph_.nodes[i];
  const std::string& name = graph_.layer(node).name;
  std::vector<bool> with_grad;
  for (int v : node.outputs) with_grad.push_back(grad_.count(v) > 0);
  std::map<int, int> temporaries;  // the program's index -> block
  for (const BackwardEvent& e : node.result->backward_program(with_grad)) {
    switch (e.kind) {
      case BackwardEvent::Kind::Temporary:
        temporaries[e.index] = memory_.alloc(MemoryKind::Transients, e.type.bytes(), {e.what, " of ", name});
        break;
      case BackwardEvent::Kind::Free: memory_.release(temporaries.at(e.index)); break;
      case BackwardEvent::Kind::InputGrad: steps.input_grads(e.index); break;
      case BackwardEvent::Kind::InputGradsOut: steps.input_grads_out(); break;
      case BackwardEvent::Kind::ParamGrad:  // one the layer does not have (a bias) is skipped
        if (trainable && static_cast<std::size_t>(e.index) < node.result->params.size()) steps.param_grad(static_cast<std::size_t>(e.index));
        break;
      case BackwardEvent::Kind::ParamGradsDone: steps.hand_over(); break;
      case BackwardEvent::Kind::ReleaseSaved: {
        const NodeIndices& saved = kept_saved_[i];
        for (std::size_t k = 0; k < saved.size(); ++k)
          if (saved[k] == e.index && kept_[i][k] >= 0) memory_.release(std::exchange(kept_[i][k], -1));
        break;
      }
      case BackwardEvent::Kind::ReleaseGradOut: {
        const int v = node.outputs.at(static_cast<std::size_t>(e.index));
        if (auto it = grad_.find(v); it != grad_.end()) memory_.release(it->second), grad_.erase(it), view_grads_.erase(v);
        break;
      }
    }
  }
}

StepResult simulate_step(const Graph& graph, const StepOptions& options, const std::vector<LossTerm>& losses,
                         const CheckpointPlan& checkpoints, const ShardPlan& shards, Record record) {
  return StepSimulator(graph, options, losses, checkpoints, shards, record).run();
}

}  // namespace nnmem::detail
