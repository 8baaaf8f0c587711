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

namespace nnmem {

/// --gpus, --nodes and DDP's bucket_cap_mb.
struct ParallelOptions {
  std::int64_t gpus = 1;                 // per node
  std::int64_t nodes = 1;
  std::optional<double> bucket_cap_mb;   // nullopt: DDP's default (25, and a first bucket of 1 MiB)
  std::int64_t world_size() const;       // gpus × nodes (checked)
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

}  // namespace nnmem
