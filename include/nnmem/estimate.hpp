// The estimate: parameters, buffers, activations, what training keeps for backward, gradients,
// optimizer state and the peak of one training step, per layer and in total. Computed from a
// Graph; the library never prints (see report.hpp for renderers).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nnmem/graph.hpp"

namespace nnmem {

enum class OptimizerKind { None, Sgd, Momentum, Nesterov, Adam, AdamW, AMSGrad, RMSprop, Adagrad, Adam8bit };
enum class LossKind { CrossEntropy, Mse, Mean, BceWithLogits, Nll, L1, SmoothL1, Huber };
enum class Phase : std::uint8_t { Forward, Backward, Optimizer };  // the loss counts as forward
/// How the training loop holds a step's `out` and `loss` (docs/memory-model.md, "The step").
enum class Loop {
  Plain,     // `for ...: out = model(x); loss = ...`: the previous step's live until rebound
  Function,  // `def train_step(): ...; return loss.item()`: freed when it returns
};

/// What a byte of the step is: the breakdown of the memory live at the peak.
enum class MemoryKind : std::uint8_t {
  Parameters,      // the model's parameters
  Buffers,         // running statistics and the like
  OptimizerState,  // the optimizer's slots
  Gradients,       // parameters' gradients
  Inputs,          // the batch and the loss's target
  Activations,     // layer outputs and what backward keeps (masks, indices, statistics, …)
  WeightCopies,    // autocast's low-precision copies of parameters
  Transients,      // activations' gradients and optimizer temporaries
  CommBuffers,     // data parallelism's own: DDP's gradient buckets, ZeRO's reduce bucket
  Gathered,        // ZeRO-3 and FSDP: parameters all-gathered for a layer (and the next one, prefetched)
};
inline constexpr std::size_t kMemoryKinds = 10;
std::string_view name_of(MemoryKind kind);

std::string_view name_of(OptimizerKind kind);
std::string_view name_of(LossKind kind);
std::string_view name_of(Phase phase);
std::string_view name_of(Loop loop);
std::optional<OptimizerKind> parse_optimizer(std::string_view name);
std::optional<LossKind> parse_loss(std::string_view name);
std::optional<Loop> parse_loop(std::string_view name);

/// The settings of PyTorch's CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF) that nnmem's
/// simulation of it models (docs/memory-model.md); the defaults are PyTorch's.
struct CudaAllocatorConfig {
  /// Pages of 2^k..2^(k+1) bytes, k = 20..35 (index 0 also takes smaller requests, index 15
  /// larger ones): how many equal divisions a request is rounded up to
  /// (`roundup_power2_divisions`); 0 or 1 rounds to 512 bytes only. Powers of two.
  static constexpr std::size_t kRoundupIntervals = 16;
  std::array<std::int64_t, kRoundupIntervals> roundup_power2_divisions{};
  /// `max_split_size_mb` in bytes: cached blocks at least this large are never split, nor used
  /// for a smaller request. At least 20 MiB; nullopt is PyTorch's default (no limit).
  std::optional<std::int64_t> max_split_size = std::nullopt;
  /// `expandable_segments:True`: one segment per pool, grown (mapped) in pages as needed.
  bool expandable_segments = false;
  /// What cudaMalloc can hand out (the device's memory less the CUDA context); 0: no limit.
  /// When a new segment would exceed it, the allocator frees its cached unsplit segments and
  /// retries, as PyTorch does; if that fails too, the step runs out of memory.
  std::int64_t capacity_bytes = 0;
};

/// Activation checkpointing (docs/memory-model.md, "Activation checkpointing"): which layers
/// form checkpointed segments, and torch.utils.checkpoint's implementation.
enum class CheckpointSegments {
  Spec,    // the spec's `checkpoint: true` entries
  None,    // none, whatever the spec says
  Blocks,  // every top-level block instance (each `repeat` instance its own segment)
  Every,   // consecutive groups of `every` top-level entries
  /// Megatron's selective recomputation: only each attention core (a ScaledDotProductAttention,
  /// or the MatMul, Softmax, Dropout, MatMul of attention written out), a segment of its own.
  Selective,
};
enum class CheckpointImpl { NonReentrant, Reentrant };  // use_reentrant=False / True
/// Activation checkpointing (torch.utils.checkpoint): which segments, which implementation.
struct RecomputeOptions {
  CheckpointSegments segments = CheckpointSegments::Spec;
  std::int64_t every = 0;  // CheckpointSegments::Every: entries per segment (at least 1)
  CheckpointImpl impl = CheckpointImpl::NonReentrant;
};
std::string_view name_of(CheckpointImpl impl);
std::optional<CheckpointImpl> parse_checkpoint_impl(std::string_view name);
/// "spec", "none", "blocks", "selective" or "every:K" (K ≥ 1) into options.segments (and .every); false for
/// anything else.
bool parse_checkpoint_segments(std::string_view text, RecomputeOptions& options);
/// The same words back: "blocks", "every:2".
std::string checkpoint_segments_name(const RecomputeOptions& options);

/// ZeRO's and FSDP's sharding, as a rank's simulated step sees it (docs/parallel.md): what each
/// rank keeps a shard of, over how many ranks, and when the parameters are gathered. Modelled.
struct Sharding {
  /// How a tensor is cut: FSDP2's dim-0 chunks of each parameter (ceil(rows / N) rows, padded),
  /// ZeRO-3's flat partition of each parameter (ceil(numel / N)), ZeRO-1/2's one flat partition
  /// of all parameters (ceil(total / N)).
  enum class Split { Dim0, FlatEach, FlatAll };
  bool optimizer = false, gradients = false, parameters = false;
  bool reshard_after_forward = true;    // FULL_SHARD, ZeRO-3; SHARD_GRAD_OP keeps them until backward
  bool per_layer = false;               // ZeRO gathers and reduces layer by layer; FSDP per top-level entry
  Split split = Split::Dim0;
  bool master_weights = false;          // ZeRO: a float32 partition of 16-bit parameters for the optimizer
  std::int64_t group = 1;               // ranks each tensor is sharded over
  std::int64_t reduce_bucket_elements = 0;  // ZeRO-2/3: reduce_bucket_size, a buffer of the gradients' dtype
  bool offload_optimizer = false;       // the optimizer's state (and master weights) in CPU memory
  bool offload_params = false;          // the parameters' shards in CPU memory (ZeRO-3, FSDP full)
  bool active() const { return optimizer || gradients || parameters; }
};

/// A rank's share of data parallelism, as the simulated step sees it: what the wrapper holds
/// besides the model (computed by the parallel stage, nnmem/parallel.hpp). Empty: one device.
struct DataParallelStep {
  std::string strategy;              // "" (one device), "ddp", "zero1".."zero3", "fsdp_full", …
  std::int64_t world_size = 1;       // ranks in all (--gpus × --nodes)
  std::int64_t nodes = 1;
  std::int64_t bucket_cap_bytes = 0; // DDP: bucket_cap_mb in bytes
  struct Buffer {
    std::string what;                // "gradient bucket 0 (1,058,856 bytes: head.bias … blocks.1.fc1.weight)"
    std::int64_t bytes = 0;
  };
  /// Allocated as the wrapper is built, after the model, and held throughout: DDP's buckets.
  std::vector<Buffer> buffers;
  Sharding sharding;                 // ZeRO, FSDP
};

struct StepOptions {
  OptimizerKind optimizer = OptimizerKind::Adam;
  bool rmsprop_momentum = false;   // RMSprop(momentum > 0): one more slot
  bool rmsprop_centered = false;   // RMSprop(centered=True): one more slot
  bool keep_grads = false;         // zero_grad(set_to_none=False), PyTorch 1.x's default
  bool foreach = false;            // the optimizer's multi-tensor implementation
  bool fused = false;              // the optimizer's fused kernel (SGD, Adam, AdamW)
  Loop loop = Loop::Plain;         // whether the previous step's out and loss are still alive
  std::optional<LossKind> loss;    // default: the spec's `loss`, else mean
  std::int64_t overhead_bytes = 0; // framework overhead added on CUDA (the CUDA context)
  CudaAllocatorConfig allocator = {};  // CUDA: the caching allocator's settings
  RecomputeOptions checkpoint = {};   // activation checkpointing
  /// Gradient accumulation: micro-steps per optimizer step (docs/memory-model.md). zero_grad()
  /// before the first, the loss divided by it, step() after the last; the batch is each
  /// micro-step's.
  std::int64_t grad_accum = 1;
  DataParallelStep parallel = {};  // data parallelism: this rank's wrapper
  /// Record the step's timeline (Estimate::timeline: every allocation and release, the layer and
  /// the tensor each names). Off, the Estimate's timeline is left empty and the step is
  /// simulated the same way without keeping it: every other figure is the same, byte for byte.
  /// Only what reads the timeline needs it (the JSON's "timeline", the timeline SVG, the Chrome
  /// trace); a large model's timeline is most of what an estimate allocates.
  bool timeline = true;
  /// When set, fills `parallel` for each training graph estimated (the parallel stage's
  /// ddp_planner()): fit, sweep and compare estimate other graphs than the first.
  std::function<DataParallelStep(const Graph&)> plan_parallel;
};

struct EstimateOptions {
  GraphOptions graph = {};
  StepOptions step = {};
};

struct LayerEstimate {
  std::string name;
  std::string type;
  bool functional = false;         // invisible to module hooks (torchsummary)
  bool trainable = true;
  std::vector<TensorType> outputs;
  std::int64_t params = 0;
  std::int64_t trainable_params = 0;
  std::int64_t param_bytes = 0;
  std::int64_t buffer_bytes = 0;
  std::int64_t macs = 0;
  std::int64_t output_bytes = 0;   // new memory its outputs take (0 for views and in-place ops)
  std::int64_t saved_bytes = 0;    // storages it is the first to keep for backward
};

struct OptimizerSlot {
  std::string name;                // "exp_avg", "momentum_buffer", "step", …
  std::int64_t bytes = 0;
};

/// One allocation (delta > 0) or release (delta < 0) in the simulated step: 32 bytes, no
/// string of its own (a large model's step has millions). What it names — its layer, its
/// tensor, its micro-step — the Timeline holding it keeps once (Timeline::layer(ev), …).
struct TimelineEvent {
  std::int64_t delta = 0;
  std::int64_t live = 0;           // bytes live after the event
  int block = -1;                  // the block allocated or released: the pair of events of one tensor
  std::uint32_t layer = 0;         // index in Timeline::layers
  Phase phase = Phase::Forward;
  MemoryKind kind = MemoryKind::Activations;  // what the block holds
  std::uint16_t micro = 0;         // index in Timeline::micro_steps
};

/// Many short texts in one store (a timeline's block descriptions, a million at 100,000
/// layers): each a view into pieces of 64 KiB, instead of a std::string of its own with, past
/// 15 characters, an allocation of its own.
class Texts {
 public:
  Texts() = default;
  Texts(const Texts& other) { *this = other; }
  Texts(Texts&&) noexcept = default;
  Texts& operator=(const Texts& other);
  Texts& operator=(Texts&&) noexcept = default;
  /// Appends the text that is `parts` one after the other.
  void push_back(const std::string_view* parts, std::size_t count);
  void push_back(std::string_view text) { push_back(&text, 1); }
  void reserve(std::size_t texts) { texts_.reserve(texts); }

  std::string_view operator[](std::size_t k) const { return texts_[k]; }
  std::size_t size() const { return texts_.size(); }
  bool empty() const { return texts_.empty(); }
  auto begin() const { return texts_.begin(); }
  auto end() const { return texts_.end(); }

 private:
  static constexpr std::size_t kPiece = std::size_t{64} << 10;
  std::vector<std::unique_ptr<char[]>> pieces_;
  std::size_t used_ = kPiece;  // of the last piece: a new one is needed
  std::vector<std::string_view> texts_;
};

/// The simulated step's allocations and releases in order, and the words they name, each kept
/// once: the layer names (and "loss", "optimizer", …) events are attributed to, and per block
/// what it holds. Iterates and indexes as its events do.
struct Timeline {
  std::vector<TimelineEvent> events;
  Texts layers;                      // the layer (or "loss", "optimizer") responsible, by TimelineEvent::layer
  Texts tensors;                      // by block: "output of fc1", "grad of input", "exp_avg_sq.sqrt()", …
  std::vector<std::int64_t> micro_steps = {1};  // with gradient accumulation: which micro-step (1-based)

  std::string_view layer(const TimelineEvent& ev) const { return layers[ev.layer]; }
  std::string_view tensor(const TimelineEvent& ev) const { return tensors[static_cast<std::size_t>(ev.block)]; }
  std::int64_t micro_step(const TimelineEvent& ev) const { return micro_steps[ev.micro]; }

  std::size_t size() const { return events.size(); }
  bool empty() const { return events.empty(); }
  const TimelineEvent& operator[](std::size_t i) const { return events[i]; }
  const TimelineEvent& back() const { return events.back(); }
  auto begin() const { return events.begin(); }
  auto end() const { return events.end(); }
};

struct Totals {
  std::int64_t params = 0, trainable_params = 0, non_trainable_params = 0;
  std::int64_t param_bytes = 0, trainable_param_bytes = 0, buffer_bytes = 0;
  std::int64_t grad_bytes = 0, optimizer_state_bytes = 0;
  std::int64_t input_bytes = 0, target_bytes = 0;
  std::int64_t activation_bytes = 0;  // every layer output, once per storage (forward pass)
  std::int64_t saved_bytes = 0;       // distinct non-parameter storages kept for backward
  std::int64_t macs = 0;
  std::int64_t persistent_bytes = 0;  // what lives across steps: params, buffers, optimizer state (+ grads)
  std::int64_t peak_bytes = 0;        // the largest live total in the step
  Phase peak_phase = Phase::Forward;
  std::string peak_layer;
  std::int64_t peak_micro_step = 1;   // with gradient accumulation: in which micro-step
  std::array<std::int64_t, kMemoryKinds> peak_breakdown{};  // by MemoryKind, at the peak
  std::int64_t backward_transient_bytes = 0;  // the most activation gradients and temporaries live in backward
  std::int64_t reserved_bytes = 0;    // CUDA: max_memory_reserved(), modelled (CudaAllocatorFigures)
  std::int64_t max_allocated_bytes = 0;  // CUDA: max_memory_allocated(), modelled
  std::int64_t overhead_bytes = 0;    // CUDA: the framework overhead asked for
  std::int64_t device_bytes = 0;      // CUDA: reserved + overhead, the total on the device
  std::int64_t cpu_offload_bytes = 0; // ZeRO/FSDP offload: what each node's CPU memory holds for its ranks
};

/// PyTorch's CUDA caching allocator replaying the training loop's allocations: the model built,
/// a first iteration (the optimizer's state created in its step), then steady iterations until
/// the allocator's state repeats (docs/memory-model.md). Modelled, not measured.
struct CudaAllocatorFigures {
  std::int64_t reserved_bytes = 0;       // memory_reserved() at the end of the last iteration
  std::int64_t max_reserved_bytes = 0;   // max_memory_reserved()
  std::int64_t max_allocated_bytes = 0;  // max_memory_allocated(): blocks, rounded, at most
  std::int64_t small_pool_reserved_bytes = 0;  // of reserved_bytes, the small pool's (2 MiB segments)
  std::int64_t segments = 0;             // segments held at the end (expandable: mapped ranges)
  std::int64_t alloc_retries = 0;        // num_alloc_retries: the cache released to retry a request
  std::int64_t steady_alloc_retries = 0; // of those, in each cycle of steady iterations
  int iterations = 0;                    // iterations replayed (the first one included)
  bool converged = false;                // the state after one iteration repeated an earlier one
  int steady_from = 0;                   // if so: iterations from this one on repeat ...
  int period = 0;                        // ... in a cycle of this many (usually 2)
  bool growing = false;                  // not converged, and still reserving more at the end
  bool out_of_memory = false;            // a request failed even after the cache was released
  std::int64_t oom_request_bytes = 0;    // that request, as the tensor asked for it
  int oom_iteration = 0;                 // in which iteration (1: the first)
  Phase oom_phase = Phase::Forward;
  std::string oom_layer;
};

/// torchsummary's four figures (torchsummary 1.5): 4 bytes per element whatever the dtype;
/// forward/backward = 2 × the outputs of every module with a forward hook (layers marked
/// `functional` have none); params = the parameters of those modules.
struct TorchSummaryFigures {
  std::int64_t input_bytes = 0;
  std::int64_t forward_backward_bytes = 0;
  std::int64_t params_bytes = 0;
  std::int64_t total_bytes = 0;
};

/// One term of the training loss, `weight * kind(output, target)`: the spec's `loss:`, resolved.
/// A loss's options (`loss: {type: cross_entropy, label_smoothing: 0.1}`; docs/spec.md, "Losses").
struct LossOptions {
  std::int64_t ignore_index = -100;  // cross_entropy, nll: changes no tensor (measured)
  double label_smoothing = 0.0;      // cross_entropy: above 0 a second, smoothed term
  bool upcast = false;               // Hugging Face's logits.float(): a 16-bit output copied to float32
};

struct LossTerm {
  LossKind kind = LossKind::Mean;
  int output = -1;                // the graph value it reads
  std::string output_name;        // as the spec names it ("" for the only output)
  std::optional<double> weight;   // none: added to the sum as it is
  SourceLoc loc;                  // its kind in the spec (for errors)
  LossOptions options;
};

struct InputEstimate {
  std::string name;
  TensorType type;                 // batch included
};

struct Estimate {
  std::string model;
  std::string file;
  std::vector<std::pair<std::string, Value>> variables;  // the spec's variables, resolved
  std::vector<std::pair<std::string, std::string>> set, input_shapes;  // the --set and --input it was loaded with
  std::vector<InputEstimate> inputs;
  EstimateOptions options;
  Mode mode = Mode::Train;
  LossKind loss = LossKind::Mean;  // the first term's
  std::vector<LossTerm> losses;    // training: the terms summed into the loss
  DType float_dtype = DType::Float32;
  std::vector<LayerEstimate> layers;
  std::vector<OptimizerSlot> optimizer_slots;
  std::vector<std::string> checkpointed;  // the checkpointed segments, in order ("layer1.0")
  Totals totals;
  TorchSummaryFigures torchsummary;  // for comparison with that tool (report.hpp renders it)
  std::optional<CudaAllocatorFigures> cuda_allocator;  // on CUDA
  Timeline timeline;
};

/// Estimates one training step (or one inference pass in Mode::Eval) of a built graph. Every
/// figure an Estimate holds, and every sum a renderer shows, is computed (and checked for
/// overflow) here: a model too large for 64-bit sizes is an Error located at the spec, and
/// renderers cannot fail.
Estimate estimate(const Graph& graph, const StepOptions& options = {});
/// Builds the graph and estimates it, letting the graph go before the CUDA allocator's replay:
/// the same figures as estimate(build_graph(...)), in less memory on a deep model.
Estimate estimate(ModelSpec spec, const EstimateOptions& options);

}  // namespace nnmem
