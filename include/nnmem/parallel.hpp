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

}  // namespace nnmem
