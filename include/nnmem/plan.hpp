// Planning answers built on estimates: the largest batch that fits a memory budget.
#pragma once

#include <cstdint>

#include "nnmem/estimate.hpp"

namespace nnmem {

/// The largest batch whose step fits in a budget. On CUDA the compared figure is what the
/// device must hold (the simulated caching allocator's max_memory_reserved() plus --overhead),
/// and a step that runs out of memory (CudaAllocatorConfig::capacity_bytes) does not fit; on
/// the CPU it is the peak of live tensors.
struct BatchFit {
  std::int64_t budget_bytes = 0;
  std::int64_t batch = 0;              // 0: not even one sample fits
  std::int64_t needed_bytes = 0;       // the compared figure at `batch` (at 1 when nothing fits)
  std::int64_t next_needed_bytes = 0;  // at batch + 1 (0 when batch is the largest nnmem allows)
  bool next_out_of_memory = false;     // batch + 1 runs out of device memory (capacity_bytes)
  Estimate estimate;                   // at `batch` (at 1 when nothing fits)
  int estimates_made = 0;              // how many batch sizes were tried
};

/// The largest batch is this many samples at most (so that the search always ends).
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 40;

/// What a step at this estimate must fit in: device_bytes on CUDA, peak_bytes on the CPU.
std::int64_t needed_bytes(const Estimate& estimate);
/// Whether it does: the need is within the budget, and the step did not run out of memory.
bool fits(const Estimate& estimate, std::int64_t budget_bytes);

/// Searches the batch sizes (doubling, then bisecting) for a batch that fits in `budget_bytes`
/// where one more sample does not. The peak grows with the batch, so on the CPU that is the
/// largest batch that fits; the CUDA allocator's reserve does not always grow (a batch can
/// reserve less than a smaller one: docs/memory-model.md), so on CUDA a larger batch may fit
/// again. `options.graph.batch` is ignored. A batch whose sizes overflow 64 bits counts as not
/// fitting. Throws nnmem::Error for any other problem.
BatchFit fit_batch(const ModelSpec& spec, EstimateOptions options, std::int64_t budget_bytes);

}  // namespace nnmem
