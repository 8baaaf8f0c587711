// Planning answers built on estimates: the step's memory as a function of the batch, and the
// largest batch that fits a memory budget.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"

namespace nnmem {

/// The largest batch is this many samples at most (so that a search always ends).
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 40;

/// What a step at this estimate must fit in: device_bytes on CUDA, peak_bytes on the CPU.
std::int64_t needed_bytes(const Estimate& estimate);
/// Whether it does: the need is within the budget, and the step did not run out of device
/// memory (CudaAllocatorConfig::capacity_bytes).
bool fits(const Estimate& estimate, std::int64_t budget_bytes);

/// What `fit` searches for.
struct FitOptions {
  std::int64_t budget_bytes = 0;
  std::int64_t headroom_bytes = 0;   // kept free: the step must fit in budget - headroom
  std::int64_t multiple_of = 1;      // only batches that are multiples of this
  bool with_estimate = true;         // the full estimate at the answer (checked against the search)
  unsigned threads = 0;              // batches checked at once (0: as many as the machine has cores);
                                     // the answer and every figure are the same whatever it is
};

/// The largest batch whose step fits in a budget. On CUDA the compared figure is what the
/// device must hold (the simulated caching allocator's max_memory_reserved() plus --overhead),
/// and a step that runs out of memory (CudaAllocatorConfig::capacity_bytes) does not fit; on
/// the CPU it is the peak of live tensors.
struct BatchFit {
  FitOptions options;
  EstimateOptions estimate_options;      // the step searched (options.graph.batch aside)
  std::string model, file;
  std::int64_t batch = 0;                // 0: no batch fits
  std::int64_t first_valid_batch = 1;    // the smallest batch (a multiple of multiple_of) the model accepts
  std::string smaller_batches_error;     // why smaller batches are refused ("" when 1 is valid)
  std::int64_t needed_bytes = 0;         // the compared figure at `batch` (at first_valid_batch when none fits)
  std::int64_t next_needed_bytes = 0;    // at batch + multiple_of (0 past kMaxBatch or 64 bits)
  bool next_out_of_memory = false;       // batch + multiple_of runs out of device memory
  std::optional<Estimate> estimate;      // at `batch` (first_valid_batch when none fits), if asked for

  // How it searched.
  bool closed_form = false;              // true: on the step's allocations as lines in the batch (one
                                         // probe estimate, then arithmetic); false: on full estimates
  std::int64_t probe_batch = 0;          // the curve's probe batch
  std::int64_t curve_from = 0;           // the curve describes batches from it; those below it (the
                                         // first valid one, when a tensor made without the batch is
                                         // broadcast to it and needs no gradient sum there) by full estimates
  std::int64_t bound_batch = 0;          // no batch above it can fit: the monotone lower bound says so
  int graphs_built = 0;                  // graphs built to find the first valid batch
  int estimates_made = 0;                // full estimates (the probe, the answer's; each batch without a curve)
  int batches_checked = 0;               // batches whose compared figure was computed, from bound_batch down
  std::int64_t checked_down_to = 0;      // every batch from bound_batch down to it was checked; below it
                                         // (after 4,096 checks) a bisection that trusts the figure to be
                                         // monotone. batch >= checked_down_to: the answer is the largest
  /// Whether every batch above the answer was checked (the answer is then the largest that fits).
  bool exhaustive() const {
    return batch >= checked_down_to || bound_batch < first_valid_batch || checked_down_to <= first_valid_batch;
  }

  /// The budget the step must fit in: budget - headroom.
  std::int64_t usable_bytes() const { return options.budget_bytes - options.headroom_bytes; }
};

/// Searches for the largest batch that fits: on the peak of live tensors, a lower bound of what
/// is compared that never decreases with the batch (every tensor's size grows with it, and the
/// step's order of allocations does not depend on it), for the largest batch it allows; then down
/// from there until the compared figure fits, which need not be monotone (the allocator rounds).
/// Starts at the smallest batch the model accepts (batch norm refuses 1 value per channel).
/// `options.graph.batch` is ignored. Throws nnmem::Error when no batch up to 1,024 is valid, or
/// for a budget below 1 byte or a headroom that leaves nothing.
BatchFit fit_batch(const ModelSpec& spec, EstimateOptions options, const FitOptions& fit);

/// Design variants side by side: each spec, or one spec under named overrides, a column; with
/// a budget, each column's largest batch.
struct Comparison {
  struct Column {
    std::string name;              // the spec's name, or the variant's
    Estimate estimate;
    std::optional<BatchFit> fit;   // with a budget (no estimate inside: the column has one)
  };
  std::vector<Column> columns;
  std::optional<std::int64_t> budget_bytes;
};

}  // namespace nnmem
