// The step's allocations as functions of the batch, so that any batch is re-estimated without
// building the graph again (plan.cpp's fit, sweep.cpp). Built from two estimates, at the graph's
// own batch and at a probe batch P, a prime larger than every other dimension of the model:
// each allocation's size is the line c + k × batch through the two (checked to be one with
// integer c and k). This holds when the batch is one dimension of every tensor that depends on
// it and no other dimension depends on it, which probe() checks against the graph at both
// batches; then the simulated step makes the same allocations in the same order at every batch,
// and only their sizes change.
#pragma once

#include <limits>
#include <optional>
#include <vector>

#include "nnmem/plan.hpp"
#include "step.hpp"

namespace nnmem {

class BatchCurve {
 public:
  /// What the device must hold at a batch, and whether the step ran out of it.
  struct Need {
    std::int64_t bytes = 0;
    bool out_of_memory = false;
    bool fits(std::int64_t budget) const { return !out_of_memory && bytes <= budget; }
    bool operator==(const Need&) const = default;
  };

  /// The curve of `small`'s model (`small` is its graph at some batch below the probe's), or
  /// nullopt when the model does not scale that way (the batch moves to another dimension, a
  /// size depends on it otherwise, or the probe's sizes overflow). Throws nnmem::Error as
  /// estimate() does.
  static std::optional<BatchCurve> probe(Graph small, const StepOptions& step);

  std::int64_t probe_batch() const { return probe_batch_; }
  /// The peak of live tensors at `batch` (peak_bytes); nullopt when it does not fit in 64 bits.
  std::optional<std::int64_t> peak_bytes(std::int64_t batch) const;
  /// The largest batch (at most kMaxBatch) whose peak of live tensors is at most `bytes`, in
  /// closed form: the peak is the largest of the live totals after each event, each c + k × batch.
  /// 0 when not even batch 1's is.
  std::int64_t largest_batch_with_peak_at_most(std::int64_t bytes) const;
  /// On CUDA, the most bytes of blocks in use at once as the allocator rounds each request
  /// (round_size), which never decreases with the batch and is at most max_memory_allocated()
  /// (a block may be handed out larger than its rounded request), so at most what the device
  /// holds: a tighter bound than peak_bytes() for the same purpose. On the CPU, peak_bytes().
  std::optional<std::int64_t> rounded_peak_bytes(std::int64_t batch) const;
  /// needed_bytes() at `batch`: on CUDA the allocations replayed through the allocator model
  /// (and whether it ran out of memory), on the CPU the peak. nullopt when a size does not fit
  /// in 64 bits. A replay that passes `give_up_above` stops there (its bytes are then over it).
  std::optional<Need> needed(std::int64_t batch,
                             std::int64_t give_up_above = std::numeric_limits<std::int64_t>::max()) const;

 private:
  struct Line {
    std::int64_t constant = 0, per_sample = 0;  // bytes = constant + per_sample × batch
    std::int64_t at(std::int64_t batch) const { return checked_add(constant, checked_mul(per_sample, batch)); }
  };
  std::vector<Line> blocks_;            // each block's size
  std::vector<Line> live_;              // the live total after each event
  Timeline events_;                     // the probe's events: their order, phases and blocks hold at every batch
  detail::AllocationTrace trace_;       // the probe's blocks (their sizes are replaced at each batch)
  std::optional<detail::ReplayScript> script_;  // on CUDA: the events as each replay reads them, made once
  StepOptions step_;
  std::int64_t probe_batch_ = 0;
  Device device_ = Device::Cuda;
};

}  // namespace nnmem
