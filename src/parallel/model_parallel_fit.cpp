// `fit` with tensor or pipeline parallelism: the largest micro-batch per GPU whose most loaded
// stage fits the budget. A stage's peak (its simulated step's, raised by the micro-batches in
// flight) grows with the micro-batch, every tensor's size does: the search doubles, then
// bisects. And `sweep`'s points: the most loaded stage's. Modelled, as every model-parallel
// figure (docs/parallel.md).
#include <map>

#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem {

ModelParallelFit fit_model_parallel(const ModelSpec& spec, EstimateOptions options, const ModelParallelOptions& mp, const FitOptions& fit) {
  if (fit.multiple_of < 1 || fit.budget_bytes <= fit.headroom_bytes)
    throw Error(spec.loc, "fit: expected a budget above the headroom and a multiple of at least 1");
  const std::int64_t usable = fit.budget_bytes - fit.headroom_bytes, step = fit.multiple_of;
  std::map<std::int64_t, std::optional<std::int64_t>> peaks;  // per micro-batch; nullopt past 64 bits
  const auto at = [&](std::int64_t b) -> ModelParallelEstimate {
    options.graph.batch = b;
    return estimate_model_parallel(spec, options, mp);
  };
  const auto peak = [&](std::int64_t b) -> std::optional<std::int64_t> {
    if (const auto p = peaks.find(b); p != peaks.end()) return p->second;
    std::optional<std::int64_t> p;
    try {
      const ModelParallelEstimate e = at(b);
      p = e.stages[e.most_loaded()].peak_bytes;
    } catch (const SizeError&) {
    }
    return peaks[b] = p;
  };
  const auto fits = [&](std::int64_t b) { return peak(b) && *peak(b) <= usable; };
  ModelParallelFit out;
  out.options = fit;
  const std::int64_t limit = kMaxBatch / step * step;
  std::int64_t lo = step, hi = 0;  // lo fits; hi (when not 0) does not
  if (fits(lo)) {
    while (hi == 0 && lo < limit) {
      const std::int64_t next = lo > limit / 2 ? limit : lo * 2;
      (fits(next) ? lo : hi) = next;
    }
    while (hi != 0 && hi - lo > step) {
      const std::int64_t mid = lo + (hi - lo) / 2 / step * step;
      (fits(mid) ? lo : hi) = mid;
    }
    out.micro_batch = lo;
    if (lo < limit) out.next_needed_bytes = peak(lo + step).value_or(0);
  }
  out.estimate = at(lo);  // the answer's, or the smallest tried when none fits
  out.needed_bytes = out.estimate.stages[out.estimate.most_loaded()].peak_bytes;
  return out;
}

ModelParallelSweep sweep_model_parallel(const std::function<ModelSpec(const LoadOptions&)>& load, const LoadOptions& base,
                                        const std::vector<SweepVariable>& vary, const EstimateOptions& options,
                                        const ModelParallelOptions& mp) {
  ModelParallelSweep out;
  out.options = mp;
  out.sweep = sweep(load, base, vary, options, [&](ModelSpec spec, const EstimateOptions& o) {
    const ModelParallelEstimate e = estimate_model_parallel(spec, o, mp);
    const PipelineStage& worst = e.stages[e.most_loaded()];
    out.data_parallel = e.data_parallel;
    out.micro_batches = e.micro_batches;
    return SweepPoint{{}, worst.totals, worst.peak_bytes, worst.index, worst.in_flight};
  });
  return out;
}

}  // namespace nnmem
