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

/// The step's allocations as functions of the batch, so that any batch is re-estimated without
/// building the graph again. Built from one estimate at a probe batch P, a prime larger than
/// every other dimension of the model: a size that P divides scales with the batch (k × batch),
/// any other is a constant (a product of dimensions below the prime P is never a multiple of it).
/// This holds when the batch is dimension 0 of every tensor and no other dimension depends on it,
/// which probe() checks against the graph at a second batch; then the simulated step makes the
/// same allocations in the same order at every batch, and only their sizes change.
class BatchCurve {
 public:
  /// The curve of `small`'s model (`small` is its graph at some batch below the probe's), or
  /// nullopt when the model does not scale that way (the batch moves to another dimension, a size
  /// depends on it otherwise, or the probe's sizes overflow). Throws nnmem::Error as estimate() does.
  static std::optional<BatchCurve> probe(Graph small, const StepOptions& step);

  std::int64_t probe_batch() const { return probe_batch_; }
  /// The peak of live tensors at `batch` (peak_bytes); nullopt when it does not fit in 64 bits.
  std::optional<std::int64_t> peak_bytes(std::int64_t batch) const;
  /// The largest batch (at most kMaxBatch) whose peak of live tensors is at most `bytes`, in
  /// closed form: the peak is the largest of the live totals after each event, each c + k × batch.
  /// 0 when not even batch 1's is.
  std::int64_t largest_batch_with_peak_at_most(std::int64_t bytes) const;
  /// needed_bytes() at `batch`: on CUDA the allocations replayed through the allocator model, on
  /// the CPU the peak. nullopt when a size does not fit in 64 bits.
  std::optional<std::int64_t> needed_bytes(std::int64_t batch) const;

 private:
  struct Event {
    std::int64_t constant = 0;  // bytes that do not depend on the batch
    std::int64_t per_sample = 0;  // bytes per sample of the batch
    int block = -1;
    bool alloc = false;
    Phase phase = Phase::Forward;
    MemoryKind kind = MemoryKind::Activations;
  };
  struct Line {
    std::int64_t constant = 0, per_sample = 0;  // the live total after an event
  };
  std::vector<Event> events_;
  std::vector<Line> live_;
  std::int64_t probe_batch_ = 0;
  Device device_ = Device::Cuda;
  std::int64_t overhead_bytes_ = 0;
};

/// What `fit` searches for.
struct FitOptions {
  std::int64_t budget_bytes = 0;
  std::int64_t headroom_bytes = 0;   // kept free: the step must fit in budget - headroom
  std::int64_t multiple_of = 1;      // only batches that are multiples of this
  bool with_estimate = true;         // the full estimate at the answer (checked against the search)
};

/// The largest batch whose step fits in a budget. On CUDA the compared figure is what the
/// device must hold (the caching allocator's segments at the peak plus --overhead); on the CPU
/// it is the peak of live tensors.
struct BatchFit {
  FitOptions options;
  EstimateOptions estimate_options;      // the step searched (options.graph.batch aside)
  std::string model, file;
  std::int64_t batch = 0;                // 0: no batch fits
  std::int64_t first_valid_batch = 1;    // the smallest batch (a multiple of multiple_of) the model accepts
  std::string smaller_batches_error;     // why smaller batches are refused ("" when 1 is valid)
  std::int64_t needed_bytes = 0;         // the compared figure at `batch` (at first_valid_batch when none fits)
  std::int64_t next_needed_bytes = 0;    // at batch + multiple_of (0 past kMaxBatch or 64 bits)
  std::optional<Estimate> estimate;      // at `batch` (first_valid_batch when none fits), if asked for

  // How it searched.
  bool closed_form = false;              // true: on a BatchCurve; false: on full estimates
  std::int64_t probe_batch = 0;          // the curve's probe batch
  std::int64_t bound_batch = 0;          // no batch above it can fit: the monotone lower bound says so
  int graphs_built = 0;                  // graphs built to find the first valid batch
  int estimates_made = 0;                // full estimates (the probe, the answer's; each batch without a curve)
  int batches_checked = 0;               // batches whose compared figure was computed, from bound_batch down

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
