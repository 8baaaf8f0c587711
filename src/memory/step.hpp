// Internal pieces of the step model shared by estimate.cpp and simulate.cpp: the optimizer's
// state and temporaries, and the loss's tensors.
#pragma once

#include <functional>
#include <limits>

#include <vector>

#include "memory_tracker.hpp"
#include "nnmem/graph.hpp"

namespace nnmem::detail {

/// A Python int or float used as a tensor operand (K in `loss / K`): a 0-dim int64 or float64
/// CPU tensor, PyTorch's "wrapped number". On CUDA it costs the device nothing.
inline constexpr std::int64_t kWrappedNumberBytes = 8;

/// A tensor the optimizer steps, as it sees it: its elements and dtype, its shape no matter (16
/// bytes against a TensorType's 56, and a large model has hundreds of thousands).
struct StepTensor {
  std::int64_t elements = 0;
  DType dtype = DType::Float32;
  std::int64_t numel() const { return elements; }
  std::int64_t bytes() const { return checked_mul(elements, dtype_size(dtype)); }
};

/// The graph's trainable parameters, each once however many layers share or tie it, in
/// model.parameters()' order: what an unsharded optimizer steps.
std::vector<StepTensor> trainable_tensors(const Graph& graph);

/// The optimizer's persistent state for these trainable parameters (PyTorch 1.13's layout).
std::vector<OptimizerSlot> optimizer_slots(const StepOptions& options, Device device,
                                           const std::vector<StepTensor>& params);

/// One tensor of the optimizer's state: `param` indexes the parameters (-1: shared by all).
struct OptimizerTensor {
  int param = -1;
  const char* slot = "";  // a literal: a large model has hundreds of thousands of these
  std::int64_t bytes = 0;
};
/// The same state tensor by tensor, f(tensor) in the order the optimizer creates them (parameter
/// by parameter, each one's slots); per slot, the bytes add up to optimizer_slots'. Visited, not
/// listed: 200,000 parameters' Adam state was a 14 MB list at the simulation's heap peak.
void for_each_optimizer_state_tensor(const StepOptions& options, Device device, const std::vector<StepTensor>& params,
                                     const std::function<void(const OptimizerTensor&)>& f);

/// Throws Error (at the Embedding) when a sparse gradient meets what nnmem does not model with
/// one: an optimizer that refuses it or whose step depends on the ids, several uses, accumulation.
void check_sparse_gradients(const Graph& graph, const StepOptions& options);

/// Simulates optimizer.step(): the temporaries of the single-tensor (one parameter at a time)
/// or the foreach (all parameters at once) implementation. State and grads are already live.
void simulate_optimizer_step(MemoryTracker& memory, const StepOptions& options, Device device,
                             const TorchProfile& torch, const std::vector<StepTensor>& params);

/// A loss term's options, checked against that loss's attributes (located errors, as a layer's);
/// the defaults when `loss` is not the term's own type (--loss chose another).
LossOptions loss_options(LossKind loss, const LossSpec& spec);

/// The tensors a loss adds around the model's output.
struct LossTensors {
  std::optional<TensorType> target;   // cross_entropy, nll: int64 class indices; the others: a float tensor
  std::optional<TensorType> cast;     // autocast: the float32 copy of the output the loss runs on
  std::vector<TensorType> kept;       // new tensors its backward keeps (log-probabilities, …)
  bool keeps_input = false;           // mse keeps what it runs on: the output, or its copy
  bool keeps_target = false;          // its backward keeps the target
  std::vector<TensorType> backward_scratch;  // l1: temporaries beside the output's gradient
  std::optional<TensorType> smoothed;  // label smoothing: the per-position smoothed loss [N] (its gradient's size)
  std::int64_t loss_bytes = 4;        // the storage behind the 0-dim loss tensor

  /// What the loss runs on: the output, or under autocast its float32 copy.
  TensorType input(const TensorType& output) const { return cast ? *cast : output; }
};

/// Throws Error (at the spec's `loss`, if any) when the output cannot take this loss; `producer`
/// names the output in that message ("Squeeze 'score'"). `amp`: autocast is on, and runs the
/// losses (on both devices' float32 lists) in float32; `float_dtype` is the target's dtype.
LossTensors loss_tensors(LossKind loss, const TensorType& output, const SourceLoc& where,
                         const std::string& producer = {}, bool amp = false, DType float_dtype = DType::Float32,
                         const LossOptions& options = {}, const TorchProfile& torch = default_torch_profile());

/// The spec's loss terms on the graph's values (one `mean` of the only output when it names none);
/// `override` (--loss) replaces a single term's kind. Throws Error when training has an output
/// a term cannot tell from the others, or --loss would replace several terms.
std::vector<LossTerm> loss_terms(const Graph& graph, const std::optional<LossKind>& override, bool training);

/// The whole step, tensor by tensor. What lives across steps (parameters, buffers, optimizer
/// state, input, target, the previous step's output, loss and gradients) is allocated first.
struct StepResult {
  std::int64_t peak = 0;
  Phase peak_phase = Phase::Forward;
  std::string peak_layer;
  std::int64_t peak_micro_step = 1;
  std::array<std::int64_t, kMemoryKinds> breakdown{};
  std::int64_t backward_transients = 0;
  Timeline timeline;
  AllocationTrace trace;  // for the CUDA allocator replay
  ReplaySteps replay;     // Record::Replay: the events, as the replay reads them
};
struct CheckpointPlan;
struct ShardPlan;
StepResult simulate_step(const Graph& graph, const StepOptions& options, const std::vector<LossTerm>& losses,
                         const CheckpointPlan& checkpoints, const ShardPlan& shards, Record record);

/// What estimate_with_step makes besides the totals and the step.
enum class Keep : std::uint8_t {
  Rows,    // the layer rows; the step's events as options.timeline says
  Events,  // no rows, and the step's events whatever options.timeline says (fit replays them at other batches itself)
};

/// estimate(graph, options) up to what needs only the step it simulated (its events and the
/// trace of its blocks), which it hands to the caller: finish_estimate adds the rest, after the
/// caller has let the graph go if it likes.
Estimate estimate_with_step(const Graph& graph, const StepOptions& options, StepResult& step, Keep keep = Keep::Rows);
/// The same, for a graph the caller lets go of after it: its parameters are let go of once the
/// step is simulated, before the layer rows are made (which do not read them). The graph is
/// left without parameters; its nodes, values and spec stay.
Estimate estimate_with_step(Graph&& graph, const StepOptions& options, StepResult& step);

/// Lets go of what only the graph's build reads, each layer's attributes and its inputs by name
/// and the spec's Python references, in a graph built for one estimate (the step, the layer rows
/// and the replay read the nodes and values; 100,000 layers' were 14 MB at the estimate's heap peak).
/// The freed pages are then handed back (return_free_pages; both in src/memory/let_go.cpp).
void let_go_of_build_inputs(Graph& graph);

/// Hands the heap's free pages back to the system, once `bytes` (at least 1 MiB) have just been
/// freed. glibc keeps a freed block's pages resident until the top of the heap is free; a deep
/// model's estimate frees its build's inputs, its parameters and its graph in blocks that what
/// comes next (the rows, the step's records, the replay's tables) does not fit in, and took new
/// pages beside tens of MB of resident free ones (bench/README.md, "Under 100 MiB", "Reserved,
/// trimmed and walked").
void return_free_pages(std::size_t bytes);

/// The rest of an estimate_with_step: the timeline when options.timeline asks for it, and on
/// CUDA the step replayed through the allocator model; a size overflow is an Error located at
/// `spec` (the spec's mapping). With `give_up_above`, the replay stops once max_memory_reserved()
/// passes it (replay_cuda_allocator): what the device holds is then over it, not the whole figure.
void finish_estimate(Estimate& e, StepResult& step, const SourceLoc& spec,
                     std::int64_t give_up_above = std::numeric_limits<std::int64_t>::max());

/// estimate(spec, options), its replay stopped as finish_estimate's once max_memory_reserved()
/// passes `give_up_above` (fit's checks, which need only to know that a batch does not fit).
Estimate estimate_giving_up_above(ModelSpec spec, const EstimateOptions& options, std::int64_t give_up_above);

/// The steady step's events as the CUDA allocator's replay reads them (4 bytes each instead of a
/// TimelineEvent's 32), with the persistent blocks listed once: what a replay needs besides the
/// blocks' sizes. Made once for the many replays of BatchCurve::needed (one per batch fit
/// checks); an estimate without a timeline records its steps so from the start (Record::Replay).
struct ReplayScript {
  ReplayScript(const Timeline& events, const AllocationTrace& trace, const StepOptions& options);
  /// From the steps as recorded.
  ReplayScript(ReplaySteps recorded, const AllocationTrace& trace, const StepOptions& options);
  ReplaySteps steps;  // each event
  std::size_t first_optimizer_step;  // where optimizer.step() begins (steps.size(): it does not)
  std::vector<int> model, batch, state;  // the blocks of Carry Model, Batch and State allocated, in order
  // Kept gradients the step never makes anew (--keep-grads with sharded gradients: each step adds
  // into the shards the last one left): the first iteration makes them, as its backward does.
  std::vector<int> kept_grads;
  bool eager_state;     // Adagrad makes its state in its constructor
  bool rebinds_output;  // training: the next step's `out = model(x)` releases this one
};

/// PyTorch's CUDA caching allocator (options.allocator) running the training loop of which the
/// script's steps (with their blocks' `trace`, their sizes `block_bytes`) are the steady step:
/// the model built, a first iteration, then steady iterations until the allocator's state
/// repeats (cuda_replay.cpp). `layers` names the steps' layers (Timeline::layers).
/// With `give_up_above`, the replay stops once max_memory_reserved() passes it (the figures are
/// then those reached so far, over it: enough to say a budget is not met; `segments` is not counted).
CudaAllocatorFigures replay_cuda_allocator(const ReplayScript& script, const Texts& layers,
                                           const AllocationTrace& trace, const BlockSizes& block_bytes,
                                           const StepOptions& options,
                                           std::int64_t give_up_above = std::numeric_limits<std::int64_t>::max());

}  // namespace nnmem::detail
