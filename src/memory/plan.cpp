#include "nnmem/plan.hpp"

namespace nnmem {

std::int64_t needed_bytes(const Estimate& estimate) {
  return estimate.options.graph.device == Device::Cuda ? estimate.totals.device_bytes : estimate.totals.peak_bytes;
}

bool fits(const Estimate& estimate, std::int64_t budget_bytes) {
  return needed_bytes(estimate) <= budget_bytes && !(estimate.cuda_allocator && estimate.cuda_allocator->out_of_memory);
}

namespace {

class BatchSearch {
 public:
  BatchSearch(const ModelSpec& spec, EstimateOptions options, std::int64_t budget)
      : spec_(spec), options_(std::move(options)), budget_(budget) {}

  BatchFit run() {
    BatchFit fit;
    fit.budget_bytes = budget_;
    std::optional<Estimate> one = at(1);
    if (!nnmem::fits(*one, budget_)) {
      fit.needed_bytes = needed_bytes(*one);
      fit.estimate = std::move(*one);
      fit.estimates_made = made_;
      return fit;
    }
    // Double until the need exceeds the budget (or the largest batch is reached), then bisect
    // between the last batch that fits and the first that does not.
    std::int64_t fits = 1, fails = 0;
    Estimate best = std::move(*one);
    while (fails == 0) {
      const std::int64_t next = fits >= kMaxBatch / 2 ? kMaxBatch : fits * 2;
      if (next == fits) break;
      auto e = at(next);
      if (e && nnmem::fits(*e, budget_)) fits = next, best = std::move(*e);
      else fails = next;
    }
    while (fails != 0 && fails - fits > 1) {
      const std::int64_t mid = fits + (fails - fits) / 2;
      auto e = at(mid);
      if (e && nnmem::fits(*e, budget_)) fits = mid, best = std::move(*e);
      else fails = mid;
    }
    fit.batch = fits;
    fit.needed_bytes = needed_bytes(best);
    if (fits < kMaxBatch) {
      auto next = at(fits + 1);
      fit.next_needed_bytes = next ? needed_bytes(*next) : 0;
      fit.next_out_of_memory = next && next->cuda_allocator && next->cuda_allocator->out_of_memory;
    }
    fit.estimate = std::move(best);
    fit.estimates_made = made_;
    return fit;
  }

 private:
  // The estimate at a batch size, or nothing when its sizes overflow (it cannot fit anyway).
  std::optional<Estimate> at(std::int64_t batch) {
    ++made_;
    options_.graph.batch = batch;
    try {
      return estimate(spec_, options_);
    } catch (const SizeError&) {
      if (batch == 1) throw;  // the spec's own sizes overflow: its error, not the search's
      return std::nullopt;
    }
  }

  const ModelSpec& spec_;
  EstimateOptions options_;
  std::int64_t budget_;
  int made_ = 0;
};

}  // namespace

BatchFit fit_batch(const ModelSpec& spec, EstimateOptions options, std::int64_t budget_bytes) {
  if (budget_bytes < 1) throw Error(spec.loc, "the memory budget must be at least 1 byte");
  return BatchSearch(spec, std::move(options), budget_bytes).run();
}

}  // namespace nnmem
