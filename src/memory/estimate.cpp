// Puts the estimate together: per-layer figures, the memory components of a step, what the
// backward pass keeps (counted once per storage) and the simulated peak.
#include "nnmem/estimate.hpp"

#include <array>
#include <charconv>
#include <stdexcept>

#include "../enum_names.hpp"
#include "recompute.hpp"
#include "sharding.hpp"
#include "cuda_allocator.hpp"
#include "step.hpp"

namespace nnmem {

namespace {

constexpr EnumNames<OptimizerKind, 10> kOptimizers{{{
    {OptimizerKind::None, "none"}, {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Momentum, "momentum"},
    {OptimizerKind::Nesterov, "nesterov"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::AdamW, "adamw"},
    {OptimizerKind::AMSGrad, "amsgrad"}, {OptimizerKind::RMSprop, "rmsprop"}, {OptimizerKind::Adagrad, "adagrad"},
    {OptimizerKind::Adam8bit, "adam8bit"},
}}};
constexpr EnumNames<LossKind, 8> kLosses{{{
    {LossKind::CrossEntropy, "cross_entropy"}, {LossKind::Mse, "mse"}, {LossKind::Mean, "mean"},
    {LossKind::BceWithLogits, "bce_with_logits"}, {LossKind::Nll, "nll"}, {LossKind::L1, "l1"},
    {LossKind::SmoothL1, "smooth_l1"}, {LossKind::Huber, "huber"},
}}};
constexpr EnumNames<Phase, 3> kPhases{{{
    {Phase::Forward, "forward"}, {Phase::Backward, "backward"}, {Phase::Optimizer, "optimizer"},
}}};
constexpr EnumNames<Loop, 2> kLoops{{{{Loop::Plain, "plain"}, {Loop::Function, "function"}}}};
constexpr EnumNames<CheckpointSegments, 5> kCheckpointSegments{{{
    {CheckpointSegments::Spec, "spec"}, {CheckpointSegments::None, "none"}, {CheckpointSegments::Blocks, "blocks"},
    {CheckpointSegments::Every, "every"}, {CheckpointSegments::Selective, "selective"},
}}};
constexpr EnumNames<MemoryKind, kMemoryKinds> kMemoryKindNames{{{
    {MemoryKind::Parameters, "parameters"}, {MemoryKind::Buffers, "buffers"}, {MemoryKind::OptimizerState, "optimizer_state"},
    {MemoryKind::Gradients, "gradients"}, {MemoryKind::Inputs, "inputs"}, {MemoryKind::Activations, "activations"},
    {MemoryKind::WeightCopies, "weight_copies"}, {MemoryKind::Transients, "transients"},
    {MemoryKind::CommBuffers, "comm_buffers"}, {MemoryKind::Gathered, "gathered"},
}}};
constexpr EnumNames<CheckpointImpl, 2> kCheckpointImpls{{{
    {CheckpointImpl::NonReentrant, "non-reentrant"}, {CheckpointImpl::Reentrant, "reentrant"},
}}};

std::int64_t sum(std::int64_t a, std::int64_t b) { return checked_add(a, b); }

// "Squeeze 'score'", or "input 'x'" for a model input returned as it is.
std::string producer_of(const Graph& graph, int value) {
  const TensorValue& v = graph.values[static_cast<std::size_t>(value)];
  if (v.producer < 0) return "input '" + v.name + "'";
  const LayerSpec& layer = graph.layer(graph.nodes[static_cast<std::size_t>(v.producer)]);
  return layer.title();
}

// torchsummary 1.5 counts 4 bytes per element whatever the dtype, and reads each hooked
// module's first output.
TorchSummaryFigures torchsummary_of(const Estimate& e) {
  TorchSummaryFigures f;
  for (const auto& in : e.inputs) f.input_bytes = checked_add(f.input_bytes, checked_mul(in.type.numel(), 4));
  std::int64_t outputs = 0, params = 0;
  for (const auto& l : e.layers) {
    if (l.functional) continue;
    outputs = checked_add(outputs, l.outputs.front().numel());
    params = checked_add(params, l.params);
  }
  f.forward_backward_bytes = checked_mul(checked_mul(outputs, 4), 2);
  f.params_bytes = checked_mul(params, 4);
  f.total_bytes = checked_add(checked_add(f.input_bytes, f.forward_backward_bytes), f.params_bytes);
  return f;
}

// The optimizer's implementation must exist: PyTorch refuses fused=True with foreach=True, for
// an optimizer without a fused kernel, and (before 2.x) on the CPU or for SGD.
void check_implementation(const StepOptions& o, const TorchProfile& torch, Device device, const SourceLoc& at) {
  if (!o.fused) return;
  if (o.foreach) throw Error(at, "the optimizer's fused and foreach implementations exclude each other (PyTorch: "
                                 "`fused` and `foreach` cannot be `True` together)");
  const OptimizerKind k = o.optimizer;
  const bool sgd = k == OptimizerKind::Sgd || k == OptimizerKind::Momentum || k == OptimizerKind::Nesterov;
  if (!sgd && k != OptimizerKind::Adam && k != OptimizerKind::AdamW)
    throw Error(at, "nnmem models the fused implementations of SGD, Adam and AdamW; " + std::string(name_of(k)) +
                        " was asked for");
  if (sgd && !torch.fused_sgd)
    throw Error(at, "torch " + std::string(torch.version) + "'s SGD has no fused implementation (only Adam and AdamW do)");
  if (device == Device::Cpu && !torch.fused_on_cpu)
    throw Error(at, "torch " + std::string(torch.version) + "'s fused optimizers run on CUDA only");
}

// Layer n's row: its figures, and what backward keeps that no earlier layer kept (each storage
// counted once, by `first_keep`; a checkpointed segment keeps its inputs instead). `outputs`:
// its output types too, which only the row needs.
template <class FirstKeep>
LayerEstimate layer_row(const Graph& graph, std::size_t n, const detail::CheckpointPlan& checkpoints, bool training,
                        FirstKeep& first_keep, bool outputs) {
  const Node& node = graph.nodes[n];
  const LayerSpec& spec = graph.layer(node);
  LayerEstimate l;
  if (outputs) {
    l.name = spec.name;
    l.type = spec.type;
  }
  l.functional = spec.functional;
  l.trainable = node.trainable;
  for (int v : node.outputs) {
    const TensorValue& value = graph.values[static_cast<std::size_t>(v)];
    if (outputs) l.outputs.push_back(value.type);
    const Storage& storage = graph.storages[static_cast<std::size_t>(value.storage)];
    if (storage.value == v) l.output_bytes = sum(l.output_bytes, storage.bytes);  // 0 for a Parameter's
  }
  l.params = node.param_count;
  l.trainable_params = node.trainable ? node.param_count : 0;
  l.param_bytes = node.param_bytes;
  l.buffer_bytes = node.buffer_bytes;
  l.macs = node.result->macs;
  const auto keep = [&](int v) {
    const int storage = graph.values[static_cast<std::size_t>(v)].storage;
    if (first_keep(storage)) l.saved_bytes = sum(l.saved_bytes, graph.storages[static_cast<std::size_t>(storage)].bytes);
  };
  const bool in_autograd = training && graph.values[static_cast<std::size_t>(node.outputs.front())].requires_grad;
  const detail::Segment* segment = checkpoints.of(n);
  if (segment && n == segment->first)
    for (int v : segment->inputs) keep(v);
  if (in_autograd && !segment) {
    for (const Saved& s : node.result->saved) {
      if (s.of == Saved::Of::Extra) {
        if (!s.wrapped_number || graph.options.torch->hooks_see_wrapped_numbers) l.saved_bytes = sum(l.saved_bytes, s.type.bytes());
        continue;
      }
      const int v = node.saved_value(s);
      if (v >= 0) keep(v);  // < 0: a full-precision parameter, persistent memory, nothing extra
    }
  }
  return l;
}

}  // namespace

std::string_view name_of(OptimizerKind kind) { return kOptimizers.name(kind); }
std::string_view name_of(LossKind kind) { return kLosses.name(kind); }
std::string_view name_of(Phase phase) { return kPhases.name(phase); }
std::string_view name_of(Loop loop) { return kLoops.name(loop); }
std::string_view name_of(CheckpointImpl impl) { return kCheckpointImpls.name(impl); }
std::string_view name_of(MemoryKind kind) { return kMemoryKindNames.name(kind); }
std::optional<OptimizerKind> parse_optimizer(std::string_view name) { return kOptimizers.parse(name); }
std::optional<LossKind> parse_loss(std::string_view name) { return kLosses.parse(name); }
std::optional<Loop> parse_loop(std::string_view name) { return kLoops.parse(name); }
std::optional<CheckpointImpl> parse_checkpoint_impl(std::string_view name) { return kCheckpointImpls.parse(name); }

bool parse_checkpoint_segments(std::string_view text, RecomputeOptions& options) {
  if (const auto s = kCheckpointSegments.parse(text); s && *s != CheckpointSegments::Every) {
    options.segments = *s;
    return true;
  }
  constexpr std::string_view every = "every:";
  if (text.substr(0, every.size()) != every) return false;
  const std::string_view k = text.substr(every.size());
  std::int64_t n = 0;
  const auto [end, error] = std::from_chars(k.data(), k.data() + k.size(), n);
  if (k.empty() || error != std::errc() || end != k.data() + k.size() || n < 1) return false;
  options.segments = CheckpointSegments::Every;
  options.every = n;
  return true;
}

std::string checkpoint_segments_name(const RecomputeOptions& options) {
  const std::string name(kCheckpointSegments.name(options.segments));
  return options.segments == CheckpointSegments::Every ? name + ":" + std::to_string(options.every) : name;
}

namespace detail {

namespace {

// estimate_with_step's two forms. `spent`, when set, is the graph's parameters, which the caller
// lets go of with the graph anyway: they are let go of once the step is simulated (the rows do
// not read them).
Estimate step_and_rows(const Graph& graph, const StepOptions& given, StepResult& step, Keep keep,
                       std::vector<Parameter>* spent) {
  // Data parallelism's buffers depend on the model: planned here, for every graph estimated.
  StepOptions planned;
  const bool plan = given.plan_parallel && graph.options.mode == Mode::Train;
  if (plan) {
    planned = given;
    planned.parallel = given.plan_parallel(graph);
  }
  const StepOptions& options = plan ? planned : given;
  Estimate e;
  e.model = graph.spec.name;
  e.file = graph.spec.file;
  e.variables = graph.spec.variables;
  e.set = graph.spec.set;
  e.input_shapes = graph.spec.input_shapes;
  e.options.graph = graph.options;
  e.options.step = options;
  e.mode = graph.options.mode;
  const bool training = e.mode == Mode::Train;
  e.float_dtype = graph.float_dtype;
  Totals& t = e.totals;
  if (const std::string problem = detail::CudaCachingAllocator::problem(options.allocator); !problem.empty())
    throw Error(graph.spec.loc, "CUDA allocator settings: " + problem);

  // Counted first, so that a count too large is reported as a count, not as memory.
  try {
    for (const Node& node : graph.nodes) t.params = sum(t.params, node.param_count);
  } catch (const OverflowError& err) {
    throw SizeError(graph.spec.loc, std::string("the model's parameter count does not fit in 64 bits: ") + err.what());
  }

  try {
    e.losses = detail::loss_terms(graph, options.loss, training);
    e.loss = e.losses.front().kind;
    std::vector<detail::LossTensors> losses;
    for (const LossTerm& term : training ? e.losses : std::vector<LossTerm>{})
      losses.push_back(detail::loss_tensors(term.kind, graph.values[static_cast<std::size_t>(term.output)].type, term.loc,
                                            producer_of(graph, term.output), graph.options.amp.has_value(), e.float_dtype,
                                            term.options, *graph.options.torch));

    // What backward keeps: each storage once, attributed to the first layer that keeps it. A
    // checkpointed segment keeps its inputs instead of what its layers would.
    const detail::CheckpointPlan checkpoints = detail::plan_checkpoints(graph, options.checkpoint);
    for (const detail::Segment& s : checkpoints.segments) e.checkpointed.push_back(s.name);
    std::vector<bool> kept_storages(graph.storages.size());  // by storage: counted already
    const auto first_keep = [&](int storage) {
      const bool first = !kept_storages[static_cast<std::size_t>(storage)];
      kept_storages[static_cast<std::size_t>(storage)] = true;
      return first;
    };
    std::int64_t kept_grads = 0;  // zero_grad(set_to_none=False) keeps them: a sparse one it empties
    // The layers' figures summed here; their rows (which only the reports read) are made again
    // after the step's simulation, so that the two are not in memory together.
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      const LayerEstimate l = layer_row(graph, n, checkpoints, training, first_keep, false);
      t.trainable_params = sum(t.trainable_params, l.trainable_params);
      t.param_bytes = sum(t.param_bytes, l.param_bytes);
      if (l.trainable) t.trainable_param_bytes = sum(t.trainable_param_bytes, l.param_bytes);
      t.buffer_bytes = sum(t.buffer_bytes, l.buffer_bytes);
      t.macs = sum(t.macs, l.macs);
      t.activation_bytes = sum(t.activation_bytes, l.output_bytes);
      t.saved_bytes = sum(t.saved_bytes, l.saved_bytes);
    }
    t.non_trainable_params = t.params - t.trainable_params;
    if (training) check_implementation(options, *graph.options.torch, graph.options.device, graph.spec.loc);
    if (training) detail::check_sparse_gradients(graph, options);
    for (int v : graph.inputs) {
      const TensorValue& in = graph.values[static_cast<std::size_t>(v)];
      e.inputs.push_back({in.name, in.type});
      t.input_bytes = sum(t.input_bytes, in.type.bytes());
    }

    if (training) {
      if (t.params == 0)
        throw Error(graph.spec.loc, "nothing to train: no layer has parameters; use --mode eval for inference");
      if (t.trainable_params == 0)
        throw Error(graph.spec.loc, "nothing to train: every layer with parameters is frozen (trainable: false); "
                                    "use --mode eval for inference");
      // Each loss's target and what it keeps; a weight is a wrapped number MulBackward0 keeps
      // (a CPU tensor), as accumulating's divisor K is DivBackward0's.
      const bool wrapped_saved = graph.options.device == Device::Cpu && graph.options.torch->hooks_see_wrapped_numbers;
      for (std::size_t k = 0; k < losses.size(); ++k) {
        const detail::LossTensors& loss = losses[k];
        const std::int64_t target = loss.target ? loss.target->bytes() : 0;
        t.target_bytes = sum(t.target_bytes, target);
        for (const auto& kept : loss.kept) t.saved_bytes = sum(t.saved_bytes, kept.bytes());
        const int out_storage = graph.values[static_cast<std::size_t>(e.losses[k].output)].storage;
        if (loss.keeps_input && loss.cast) t.saved_bytes = sum(t.saved_bytes, loss.cast->bytes());
        else if (loss.keeps_input && first_keep(out_storage))
          t.saved_bytes = sum(t.saved_bytes, graph.storages[static_cast<std::size_t>(out_storage)].bytes);
        if (loss.keeps_target) t.saved_bytes = sum(t.saved_bytes, target);
        if (e.losses[k].weight && wrapped_saved) t.saved_bytes = sum(t.saved_bytes, detail::kWrappedNumberBytes);
      }
      if (options.grad_accum > 1 && wrapped_saved) t.saved_bytes = sum(t.saved_bytes, detail::kWrappedNumberBytes);
      for (const Parameter& p : graph.parameters)
        if (p.trainable) {
          t.grad_bytes = sum(t.grad_bytes, p.grad_bytes());
          if (p.sparse_rows == 0) kept_grads = sum(kept_grads, p.grad_bytes());
        }
      e.optimizer_slots = detail::optimizer_slots(options, graph.options.device, detail::trainable_tensors(graph));
      for (const auto& s : e.optimizer_slots) t.optimizer_state_bytes = sum(t.optimizer_state_bytes, s.bytes);
    }
    t.persistent_bytes = sum(sum(t.param_bytes, t.buffer_bytes), t.optimizer_state_bytes);
    if (options.keep_grads) t.persistent_bytes = sum(t.persistent_bytes, kept_grads);

    {  // (the shard plan, a few entries per parameter, let go before the rows are made)
      const detail::ShardPlan shards = detail::plan_sharding(graph, options.parallel.sharding, training);
      if (training && options.parallel.sharding.active()) detail::per_rank_totals(e, shards, options, graph.options.device);
      // The events are recorded for whoever reads them: the timeline's readers, the allocator's replay.
      // Without a timeline, the replay's own steps (4 bytes an event, not a TimelineEvent's 32).
      const Record record = options.timeline                          ? Record::Timeline
                            : keep == Keep::Events                    ? Record::Events
                            : graph.options.device == Device::Cuda ? Record::Replay
                                                                      : Record::Figures;
      step = detail::simulate_step(graph, options, e.losses, checkpoints, shards, record);
    }
    t.peak_bytes = step.peak;
    t.peak_phase = step.peak_phase;
    t.peak_layer = step.peak_layer;
    t.peak_micro_step = step.peak_micro_step;
    t.peak_breakdown = step.breakdown;
    t.backward_transient_bytes = step.backward_transients;
    if (keep == Keep::Events) return e;
    // A deep model's heap peaks as the rows are made: 100,000 layers' parameters were 13.5 MB of it.
    if (spent) {
      const std::size_t bytes = spent->capacity() * sizeof(Parameter);
      std::vector<Parameter>().swap(*spent);
      return_free_pages(bytes);
    }
    std::fill(kept_storages.begin(), kept_storages.end(), false);  // the rows keep what the sums kept
    e.layers.reserve(graph.nodes.size());
    for (std::size_t n = 0; n < graph.nodes.size(); ++n)
      e.layers.push_back(layer_row(graph, n, checkpoints, training, first_keep, true));
    e.torchsummary = torchsummary_of(e);
  } catch (const OverflowError& err) {
    throw SizeError(graph.spec.loc, std::string("the model's memory does not fit in 64 bits: ") + err.what());
  } catch (const std::length_error& err) {  // a step too large to record (step_records.hpp)
    throw Error(graph.spec.loc, std::string("the model is too large to estimate: ") + err.what());
  }
  return e;
}

}  // namespace

Estimate estimate_with_step(const Graph& graph, const StepOptions& options, StepResult& step, Keep keep) {
  return step_and_rows(graph, options, step, keep, nullptr);
}

Estimate estimate_with_step(Graph&& graph, const StepOptions& options, StepResult& step) {
  return step_and_rows(graph, options, step, Keep::Rows, &graph.parameters);
}

void finish_estimate(Estimate& e, StepResult& step, const SourceLoc& spec, std::int64_t give_up_above) {
  const StepOptions& options = e.options.step;  // as planned (data parallelism's buffers)
  if (options.timeline) e.timeline = std::move(step.timeline);  // its layers alone otherwise
  if (e.options.graph.device != Device::Cuda) return;
  const Timeline& events = options.timeline ? e.timeline : step.timeline;
  try {
    const ReplayScript script = options.timeline ? ReplayScript(events, step.trace, options)
                                                 : ReplayScript(std::move(step.replay), step.trace, options);
    e.cuda_allocator = replay_cuda_allocator(script, events.layers, step.trace, step.trace.block_bytes, options, give_up_above);
    Totals& t = e.totals;
    t.reserved_bytes = e.cuda_allocator->max_reserved_bytes;
    t.max_allocated_bytes = e.cuda_allocator->max_allocated_bytes;
    t.overhead_bytes = options.overhead_bytes;
    t.device_bytes = sum(t.reserved_bytes, t.overhead_bytes);
  } catch (const OverflowError& err) {
    throw SizeError(spec, std::string("the model's memory does not fit in 64 bits: ") + err.what());
  } catch (const std::length_error& err) {  // a step too large to replay (cuda_replay.cpp)
    throw Error(spec, std::string("the model is too large to estimate: ") + err.what());
  }
}

}  // namespace detail

Estimate estimate(const Graph& graph, const StepOptions& options) {
  detail::StepResult step;
  Estimate e = detail::estimate_with_step(graph, options, step);
  detail::finish_estimate(e, step, graph.spec.loc);
  return e;
}

Estimate detail::estimate_giving_up_above(ModelSpec spec, const EstimateOptions& options, std::int64_t give_up_above) {
  // The graph is let go before the allocator's replay (on a deep model the two were the peak),
  // and its free pages handed back: the replay's tables are new pages, which the heap's holes
  // did not serve (100,000 Linear layers: 9 MB off the replay's peak).
  detail::StepResult step;
  const SourceLoc at = spec.loc;
  std::size_t layers = 0;
  Estimate e = [&] {
    Graph graph = build_graph(std::move(spec), options.graph);
    layers = graph.spec.layers.size();
    detail::let_go_of_build_inputs(graph);
    return detail::estimate_with_step(std::move(graph), options.step, step);
  }();
  if (e.options.graph.device == Device::Cuda) return_free_pages(layers * sizeof(LayerSpec));
  detail::finish_estimate(e, step, at, give_up_above);
  return e;
}

Estimate estimate(ModelSpec spec, const EstimateOptions& options) {
  return detail::estimate_giving_up_above(std::move(spec), options, std::numeric_limits<std::int64_t>::max());
}

}  // namespace nnmem
