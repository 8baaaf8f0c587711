// Beyond one device: what data parallelism adds to each rank's training step (DDP's gradient
// buckets, simulated as allocations of the step), and the published estimators nnmem reproduces
// under --convention deepspeed and --convention megatron (docs/conventions.md). Built on the
// memory stage: a rank's step is estimate() with StepOptions::parallel filled in here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"
#include "nnmem/plan.hpp"
#include "nnmem/sweep.hpp"

namespace nnmem {

/// FSDP's sharding strategies (FSDP2's per-parameter sharding for all but NO_SHARD).
enum class FsdpStrategy { None, Full, ShardGradOp, Hybrid, NoShard };

/// --gpus, --nodes, DDP's bucket_cap_mb, and ZeRO's or FSDP's sharding.
struct ParallelOptions {
  std::int64_t gpus = 1;                 // per node
  std::int64_t nodes = 1;
  std::optional<double> bucket_cap_mb;   // nullopt: DDP's default (25, and a first bucket of 1 MiB)
  int zero = 0;                          // DeepSpeed's ZeRO stage 1, 2 or 3; 0: none
  FsdpStrategy fsdp = FsdpStrategy::None;
  bool offload_optimizer = false;        // ZeRO's offload_optimizer: device cpu
  bool offload_params = false;           // ZeRO-3's offload_param: device cpu
  std::int64_t world_size() const;       // gpus × nodes (checked)
  bool sharded() const { return zero > 0 || fsdp != FsdpStrategy::None; }
};

/// One of DDP's gradient buckets: a flat tensor its parameters' gradients are copied into and
/// all-reduced from.
struct DdpBucket {
  std::vector<std::string> params;       // qualified names, in the order their gradients become ready
  std::int64_t bytes = 0;
  DType dtype = DType::Float32;
};

/// The buckets DDP works with from its second iteration on: it rebuilds them in the order the
/// gradients became ready in the first backward (layers last to first; within a layer its
/// parameters in order, Linear's bias before its weight: addmm hands the bias its gradient
/// directly, the weight's passes through t()'s backward), one accumulator per dtype, closing a
/// bucket once it holds at least its cap — the first cap for the first bucket, `cap` after.
/// Frozen parameters get none.
std::vector<DdpBucket> ddp_buckets(const Graph& graph, std::int64_t first_cap_bytes, std::int64_t cap_bytes);

/// What DDP adds to a rank's step: StepOptions::parallel for `graph`'s model under `options`,
/// the caps as `torch` sizes them (TorchProfile::ddp_first_bucket_follows_cap). A single device
/// (world size 1) adds nothing. Throws nnmem::Error for a cap that is not a positive size.
DataParallelStep ddp_step(const Graph& graph, const ParallelOptions& options, const TorchProfile& torch);

/// StepOptions::plan_parallel for DDP under these options (ddp_step on each graph's own model and
/// profile); empty for a single device.
std::function<DataParallelStep(const Graph&)> ddp_planner(const ParallelOptions& options);

/// What ZeRO (stage 1: optimizer state sharded; 2: gradients too, reduce-scattered through a
/// bucket; 3: parameters too, gathered layer by layer) or FSDP (FULL_SHARD, SHARD_GRAD_OP,
/// HYBRID_SHARD within a node, NO_SHARD) makes of a rank's step: DataParallelStep::sharding.
/// Modelled (docs/parallel.md). Throws nnmem::Error for --offload without what it offloads.
DataParallelStep sharded_step(const ParallelOptions& options);
/// The planner for these options: sharded_step's when sharding, else ddp_planner's.
std::function<DataParallelStep(const Graph&)> parallel_planner(const ParallelOptions& options);
std::string_view name_of(FsdpStrategy strategy);
std::optional<FsdpStrategy> parse_fsdp(std::string_view name);

// --- Tensor and pipeline parallelism (Megatron-style), one rank's step simulated on the spec's own
// shapes (docs/parallel.md). Modelled: no GPU cluster here to measure them.

/// What tensor parallelism makes of a layer with parameters.
/// Experts: a mixture of experts' MoEExperts, each expert's fc1 column- and fc2 row-parallel.
enum class TpRole { Replicated, Column, Row, VocabEmbedding, Experts };
std::string_view name_of(TpRole role);
struct TpLayer {
  std::string name, type;
  TpRole role = TpRole::Replicated;
};
/// One tensor-parallel rank's model: the spec with its split layers rewritten to a rank's share.
struct TensorParallelSpec {
  ModelSpec spec;
  std::vector<TpLayer> split;  // every layer with parameters, and its role
};
/// The spec of one of `tp` tensor-parallel ranks of `full` (a training graph): column-parallel
/// Linear layers (reading a whole tensor) keep out_features / tp, row-parallel ones (reading a
/// tensor split along its last dimension) their in_features / tp through their input, an
/// Embedding ceil(num_embeddings / tp) rows, views of split tensors their share; the split is
/// followed through views, transposes, element-wise layers, matrix products and attention.
/// With `sequence_parallel` (Megatron's --sequence-parallel), the tensors between those regions
/// are the rank's shard of the sequence (dimension -2): a whole activation read by a norm or a
/// dropout scattered where it is made (ScatterToSequenceParallelRegion), a column-parallel
/// Linear reading a shard all-gathering it and keeping the shard (ColumnParallelLinear), a
/// row-parallel one reduce-scattering its output (RowParallelLinear).
/// Throws nnmem::Error located at the layer for heads that do not divide, or a layer that
/// cannot read a split tensor (a norm over it, MultiheadAttention, a convolution), a sequence
/// that does not divide, or sequence parallelism without tensor parallelism.
TensorParallelSpec tensor_parallel_rank(const Graph& full, std::int64_t tp, bool sequence_parallel = false);

enum class PipelineSchedule { GPipe, OneFOneB, Interleaved };
std::string_view name_of(PipelineSchedule schedule);
std::optional<PipelineSchedule> parse_schedule(std::string_view name);

struct ModelParallelOptions {
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  bool sequence_parallel = false;    // Megatron's --sequence-parallel (with tp > 1)
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  std::int64_t virtual_stages = 1;   // interleaved: model chunks per pipeline rank
  std::vector<std::int64_t> stages;  // pipeline layers per stage (per chunk when interleaved); empty: balanced
  bool active() const { return tp > 1 || pp > 1; }
};

/// One pipeline stage's rank (its first tensor-parallel rank: they hold the same).
struct PipelineStage {
  std::int64_t index = 0;
  std::vector<std::string> units;   // the spec's top-level entries it runs, in order
  std::int64_t layers = 0;          // of them, the pipeline's layers (block instances)
  std::int64_t in_flight = 1;       // micro-batches whose activations it holds at once (chunks / V when interleaved)
  std::int64_t in_flight_chunks = 1;// interleaved: chunk forwards in flight
  std::int64_t params = 0;          // a rank's share of its parameters
  std::int64_t state_bytes = 0;     // its parameters, gradients and optimizer state
  std::int64_t persistent_bytes = 0;// what lives across steps (Totals::persistent_bytes, over its chunks)
  std::int64_t held_bytes = 0;      // what one micro-batch's forward leaves for its backward
  std::int64_t peak_bytes = 0;      // the step's peak with in_flight micro-batches held
  /// The rank's figures: its simulated step's totals with every chunk's parameters, buffers,
  /// gradients and optimizer state, and the peak (its breakdown too) raised to peak_bytes, the
  /// other micro-batches' activations in flight counted as activations kept.
  Totals totals;
  /// One micro-batch's step of the stage's rank; interleaved, of its chunk with the most
  /// transient memory (the rank's peak: every chunk's persistent memory, that chunk's transients).
  Estimate estimate;
};

struct ModelParallelEstimate {
  ModelParallelOptions options;
  std::int64_t micro_batches = 1;   // per step: --grad-accum
  std::int64_t data_parallel = 1;   // the world's ranks / (tp × pp)
  std::vector<TpLayer> split;       // tensor parallelism's roles
  std::vector<PipelineStage> stages;
  std::size_t most_loaded() const;  // the stage with the highest peak
};

/// Tensor and pipeline parallelism: each stage's rank simulated as a step of its own (its layers,
/// tensor-parallel shares, the activations crossing into it as its inputs), its peak raised by
/// the activations of the micro-batches the schedule keeps in flight (GPipe: all; 1F1B: pp − i at
/// stage i; interleaved: Megatron's warm-up forwards of its chunks). `options.step.parallel`'s
/// data parallelism runs over the world's ranks / (tp × pp). Throws nnmem::Error located at the
/// spec for a split that cannot be made (fewer layers than stages, --stages not adding up).
ModelParallelEstimate estimate_model_parallel(const ModelSpec& spec, const EstimateOptions& options,
                                              const ModelParallelOptions& mp);

/// `fit` with tensor or pipeline parallelism: the largest micro-batch per GPU (a multiple of
/// fit.multiple_of) whose most loaded stage's peak fits fit.budget_bytes − fit.headroom_bytes.
struct ModelParallelFit {
  FitOptions options;
  std::int64_t micro_batch = 0;        // 0: none fits
  std::int64_t needed_bytes = 0;       // the most loaded stage's peak at micro_batch (at multiple_of when none fits)
  std::int64_t next_needed_bytes = 0;  // at micro_batch + multiple_of (0 past 64 bits or the largest batch)
  ModelParallelEstimate estimate;      // at micro_batch (at multiple_of when none fits)
};
ModelParallelFit fit_model_parallel(const ModelSpec& spec, EstimateOptions options, const ModelParallelOptions& mp, const FitOptions& fit);

/// `sweep --tp/--pp`: every point the most loaded stage's rank (PipelineStage::totals; the budget
/// held against its peak, as fit_model_parallel does), the batch being the micro-batch per GPU.
struct ModelParallelSweep {
  Sweep sweep;
  ModelParallelOptions options;
  std::int64_t data_parallel = 1, micro_batches = 1;
};
ModelParallelSweep sweep_model_parallel(const std::function<ModelSpec(const LoadOptions&)>& load, const LoadOptions& base,
                                        const std::vector<SweepVariable>& vary, const EstimateOptions& options,
                                        const ModelParallelOptions& mp);

/// `compare --tp/--pp`: each spec or variant's stages per GPU, and with a budget its largest micro-batch.
struct ModelParallelComparison {
  struct Column {
    std::string name;
    ModelParallelEstimate estimate;
    std::optional<ModelParallelFit> fit;  // with a budget
  };
  std::vector<Column> columns;
  std::optional<std::int64_t> budget_bytes;
};

// --- DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py), as its code
// computes them: model states only (parameters, gradients, optimizer state, with fixed bytes per
// parameter), per GPU and per node's CPU, in Python's integer and float arithmetic.

struct DeepSpeedFigure {
  int stage = 2;                   // 2 or 3
  bool offload_optimizer = false;  // cpu_offload
  bool offload_param = false;      // ZeRO-3's cpu_offload_params
  bool zero_init = false;          // ZeRO-3's zero_init
  std::int64_t cpu_bytes = 0;      // per node
  std::int64_t gpu_bytes = 0;      // per GPU
  std::string options() const;     // "offload_param=cpu, offload_optimizer=none, zero_init=1", as DeepSpeed prints them
};

/// estimate_zero2_model_states_mem_needs(total_params, gpus, nodes, cpu_offload): (cpu, gpu).
DeepSpeedFigure deepspeed_zero2(std::int64_t total_params, std::int64_t gpus_per_node, std::int64_t nodes, bool cpu_offload,
                                double additional_buffer_factor = 1.5);
/// estimate_zero3_model_states_mem_needs(total_params, largest_layer_params, gpus, nodes,
/// cpu_offload, cpu_offload_params, zero_init).
DeepSpeedFigure deepspeed_zero3(std::int64_t total_params, std::int64_t largest_layer_params, std::int64_t gpus_per_node,
                                std::int64_t nodes, bool cpu_offload, bool cpu_offload_params, bool zero_init,
                                double additional_buffer_factor = 1.5);

/// What estimate_zero2/3_model_states_mem_needs_all_live print for a model: its parameters
/// (DeepSpeed's model_to_params) and largest layer (the most parameters one module holds
/// itself), and every combination of options, ZeRO-2's then ZeRO-3's, in their order.
struct DeepSpeedConvention {
  std::int64_t total_params = 0;
  std::int64_t largest_layer_params = 0;
  std::int64_t gpus_per_node = 1, nodes = 1;
  std::vector<DeepSpeedFigure> figures;
};
DeepSpeedConvention deepspeed_convention(const Estimate& estimate, const ParallelOptions& options);

// --- Megatron-LM's theoretical memory (megatron/training/theoretical_memory_usage.py) and
// Korthikanti et al.'s activation formulas ("Reducing Activation Recomputation in Large
// Transformer Models", 2022, Table 2), for a dense transformer given by its shape. Modelled: what
// only GPUs can run is reproduced from the published formulas (docs/conventions.md).

/// A dense GPT/LLaMA-style transformer, as Megatron-LM's arguments describe it.
struct TransformerShape {
  std::int64_t hidden = 0, layers = 0, heads = 0;
  std::int64_t kv_channels = 0;    // per head; 0: hidden / heads
  std::int64_t query_groups = 0;   // grouped-query attention's KV groups; 0: one per head
  std::int64_t ffn_hidden = 0;
  std::int64_t vocab = 0;          // padded_vocab_size
  bool swiglu = false;             // a gated MLP (three matrices)
  bool rmsnorm = false;            // else LayerNorm (a bias too)
  bool untied = false;             // untie_embeddings_and_output_weights
};

/// Megatron-LM's parallelism and training arguments that its estimate reads.
struct MegatronSetup {
  std::int64_t seq = 0, micro_batch = 1;
  std::int64_t tp = 1, pp = 1, dp = 1;
  std::optional<std::int64_t> vpp;               // interleaved schedule: virtual stages per rank
  std::optional<std::int64_t> num_microbatches;  // per step (pipeline: fewer than pp in flight)
  bool distributed_optimizer = false;            // optimizer state sharded over dp (6 + 12/dp bytes a parameter)
  bool sequence_parallel = false;
  bool selective_recompute = false;
};

struct MegatronMemory {
  double weight_and_optimizer_bytes = 0;  // the most loaded rank (the first pipeline stage)
  double activation_bytes = 0;            // the first pipeline stage
  bool sequence_parallel_formula = false; // Table 2's SP + selective formula, else the one without SP
  double total_parameters = 0;
  double weight_and_optimizer_mb() const { return weight_and_optimizer_bytes / (1 << 20); }
  double activation_mb() const { return activation_bytes / (1 << 20); }
};

/// report_theoretical_memory(args) of Megatron-LM (the figures it prints, before rounding to
/// 0.01 MB), operation by operation in Python's arithmetic. Throws nnmem::Error for a shape or
/// setup it cannot describe (zero sizes; heads not divisible into query groups).
MegatronMemory megatron_theoretical_memory(const TransformerShape& shape, const MegatronSetup& setup);

enum class Recompute { None, Selective, Full };
/// Korthikanti et al.'s activation bytes of one transformer layer (16-bit activations, 1-byte
/// dropout masks): s·b·h·(34 + 5·a·s/h) without parallelism; s·b·h·(10 + 24/t + 5·a·s/(h·t))
/// with tensor parallelism t; s·b·h/t·(34 + 5·a·s/h) with sequence parallelism too; selective
/// recomputation drops the 5·a·s/h attention-core term; full recomputation keeps the layer's
/// input only, 2·s·b·h.
double korthikanti_layer_bytes(std::int64_t seq, std::int64_t batch, std::int64_t hidden, std::int64_t heads,
                               std::int64_t tp, bool sequence_parallel, Recompute recompute);

}  // namespace nnmem
