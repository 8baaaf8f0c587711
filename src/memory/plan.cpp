// `fit`: the largest batch that fits a budget. The compared figure (what the device holds on
// CUDA) need not grow monotonically with the batch — the allocator rounds blocks into segments —
// so the search runs on a bound that does: the peak of live tensors, below what the device
// holds, and non-decreasing in the batch because every tensor's size is and the step allocates
// in the same order at every batch. No batch above the largest the bound allows can fit; from
// there down, the compared figure itself is checked until one fits.
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "batch_curve.hpp"
#include "first_true.hpp"

namespace nnmem {

std::int64_t needed_bytes(const Estimate& estimate) {
  return estimate.options.graph.device == Device::Cuda ? estimate.totals.device_bytes : estimate.totals.peak_bytes;
}

bool fits(const Estimate& estimate, std::int64_t budget_bytes) {
  return needed_bytes(estimate) <= budget_bytes && !(estimate.cuda_allocator && estimate.cuda_allocator->out_of_memory);
}

namespace {

// The largest batch size tried when looking for the first one the model accepts.
constexpr std::int64_t kValidSearchLimit = 1024;

// What the search asks of a model at a batch: the bound, and the compared figure.
class BatchModel {
 public:
  virtual ~BatchModel() = default;
  /// The largest multiple of `step` in [first, kMaxBatch] whose lower bound is at most `usable`;
  /// below `first` when there is none.
  virtual std::int64_t bound(std::int64_t usable, std::int64_t first, std::int64_t step) = 0;
  /// The compared figure at `batch`; nullopt when its sizes do not fit in 64 bits. Unless
  /// `in_full`, a figure over the budget bound() was asked for may stop short (still over it).
  virtual std::optional<BatchCurve::Need> needed(std::int64_t batch, bool in_full = false) = 0;
  /// Whether needed(batch) may run on several threads at once (for different batches).
  virtual bool concurrent(std::int64_t) const { return false; }
};

// On full estimates, for a model whose allocations the curve cannot describe: the bound by
// doubling, then bisecting.
class EstimateModel final : public BatchModel {
 public:
  EstimateModel(const ModelSpec& spec, EstimateOptions options, int& estimates)
      : spec_(spec), options_(std::move(options)), estimates_(estimates) {}

  std::int64_t bound(std::int64_t usable, std::int64_t first, std::int64_t step) override {
    usable_ = usable;
    const auto fits = [&](std::int64_t b) { return at(b) && at(b)->first <= usable; };
    if (!fits(first)) return 0;
    std::int64_t lo = first, hi = 0;  // lo fits; hi (when not 0) does not
    while (hi == 0 && lo < kMaxBatch / step * step) {
      const std::int64_t next = lo > kMaxBatch / 2 ? kMaxBatch / step * step : lo * 2 / step * step;
      (fits(next) ? lo : hi) = next;
    }
    while (hi != 0 && hi - lo > step) {
      const std::int64_t mid = lo + (hi - lo) / 2 / step * step;
      (fits(mid) ? lo : hi) = mid;
    }
    return lo;
  }
  std::optional<BatchCurve::Need> needed(std::int64_t batch, bool in_full) override {
    const auto& f = at(batch, in_full);
    return f ? std::optional(f->second) : std::nullopt;
  }

 private:
  // (lower bound, compared figure) at `batch`, or nothing when its sizes overflow. Unless
  // `in_full`, the allocator's replay stops once what the device holds is over the budget
  // bound() was asked for (a cache that never settles replays 4,000 iterations in full: 14 ms a
  // batch for bow_sparse, whose search checks 4,096 of them); such a figure is made again in
  // full when asked for so.
  const std::optional<std::pair<std::int64_t, BatchCurve::Need>>& at(std::int64_t batch, bool in_full = false) {
    auto [it, fresh] = figures_.try_emplace(batch);
    if (!fresh && !(in_full && stopped_short_.contains(batch))) return it->second;
    ++estimates_;
    options_.graph.batch = batch;
    const bool cuda = options_.graph.device == Device::Cuda;
    const std::int64_t give_up = in_full || !cuda || usable_ == kUnlimited ? kUnlimited : usable_ - options_.step.overhead_bytes;
    try {
      const Estimate e = detail::estimate_giving_up_above(spec_, options_, give_up);
      const bool oom = e.cuda_allocator && e.cuda_allocator->out_of_memory;
      it->second.emplace(cuda ? checked_add(e.totals.peak_bytes, e.totals.overhead_bytes) : e.totals.peak_bytes,
                         BatchCurve::Need{needed_bytes(e), oom});
      // (Over the budget, the replay may have stopped short; within it, it ran to the end.)
      if (give_up != kUnlimited && needed_bytes(e) > usable_) stopped_short_.insert(batch);
      else stopped_short_.erase(batch);
    } catch (const SizeError&) {
    }
    return it->second;
  }

  const ModelSpec& spec_;
  EstimateOptions options_;
  int& estimates_;
  std::map<std::int64_t, std::optional<std::pair<std::int64_t, BatchCurve::Need>>> figures_;
  std::set<std::int64_t> stopped_short_;  // batches whose figure is over the budget, perhaps not whole
  static constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
  std::int64_t usable_ = kUnlimited;  // the budget bound() was asked for
};

// On a BatchCurve: the bound in closed form on the peak, then tightened by bisection on the
// peak of rounded blocks (also monotone, also at most what the device holds); each batch
// checked by a replay of the allocations, which stops once it is over the budget. Batches below
// the curve's first (`from`) by full estimates.
class CurveModel final : public BatchModel {
 public:
  CurveModel(BatchCurve curve, std::int64_t lower_offset, std::int64_t from, EstimateModel below)
      : curve_(std::move(curve)), offset_(lower_offset), from_(from), below_(std::move(below)) {}
  std::int64_t bound(std::int64_t usable, std::int64_t first, std::int64_t step) override {
    if (usable < offset_) return 0;
    usable_ = usable;
    std::int64_t hi = curve_.largest_batch_with_peak_at_most(usable - offset_) / step * step;
    if (hi < from_ && first < from_) return first;  // below the curve: checked in full
    const auto allows = [&](std::int64_t b) {
      const auto rounded = curve_.rounded_peak_bytes(b);
      return rounded && *rounded <= usable - offset_;
    };
    if (hi < first || allows(hi)) return hi;
    std::int64_t lo = first - step;  // allows(lo) or below the first valid batch; !allows(hi)
    while (hi - lo > step) {
      const std::int64_t mid = lo + (hi - lo) / step / 2 * step;
      (mid < from_ || allows(mid) ? lo : hi) = mid;
    }
    return lo;
  }
  std::optional<BatchCurve::Need> needed(std::int64_t batch, bool in_full) override {
    if (batch < from_) return below_.needed(batch, in_full);
    return in_full ? curve_.needed(batch) : curve_.needed(batch, usable_ - offset_);
  }
  bool concurrent(std::int64_t batch) const override { return batch >= from_; }  // the curve's replays share nothing

 private:
  BatchCurve curve_;
  std::int64_t offset_;  // what the device holds beyond the peak, at the least: --overhead on CUDA
  std::int64_t from_;
  EstimateModel below_;
  std::int64_t usable_ = std::numeric_limits<std::int64_t>::max();  // the budget bound() was asked for
};

// The smallest multiple of `step` the model accepts: `step`, else the first of 2, 4, 8, …
// times it (up to kValidSearchLimit), then bisected (a batch above a valid one is valid: batch
// norm's one-value-per-channel rule is the kind of limit a model has). Returns its graph.
Graph first_valid_graph(const ModelSpec& spec, GraphOptions options, std::int64_t step, BatchFit& fit) {
  std::optional<Error> first_error;
  const auto build = [&](std::int64_t batch) -> std::optional<Graph> {
    ++fit.graphs_built;
    options.batch = batch;
    try {
      return build_graph(spec, options);
    } catch (const SizeError&) {
      if (!first_error) throw;  // the smallest batch's own sizes overflow: the spec's error
      throw *first_error;
    } catch (const Error& e) {
      if (!first_error) first_error = e;
      return std::nullopt;
    }
  };
  std::int64_t valid = step;
  std::optional<Graph> graph = build(valid);
  std::int64_t invalid = 0;
  while (!graph) {
    invalid = valid;
    if (valid >= kValidSearchLimit * step) throw *first_error;
    graph = build(valid *= 2);
  }
  while (valid - invalid > step) {
    const std::int64_t mid = invalid + (valid - invalid) / 2 / step * step;
    if (auto g = build(mid)) graph = std::move(g), valid = mid;
    else invalid = mid;
  }
  fit.first_valid_batch = valid;
  if (first_error) fit.smaller_batches_error = first_error->message();
  return std::move(*graph);
}

// The search itself: the bound, then down from it until the compared figure fits — every batch
// for the first kExhaustiveChecks, then a bisection below them (which trusts the figure to be
// monotone there, and says so: BatchFit::checked_down_to).
constexpr int kExhaustiveChecks = 4096;

void answer(BatchModel& model, BatchFit& fit, std::int64_t b, std::int64_t bytes) {
  const std::int64_t step = fit.options.multiple_of;
  fit.batch = b;
  fit.needed_bytes = bytes;
  const auto next = b <= kMaxBatch - step ? model.needed(b + step, true) : std::nullopt;
  fit.next_needed_bytes = next ? next->bytes : 0;
  fit.next_out_of_memory = next && next->out_of_memory;
}

void search(BatchModel& model, BatchFit& fit) {
  const std::int64_t step = fit.options.multiple_of, first = fit.first_valid_batch, usable = fit.usable_bytes();
  fit.bound_batch = model.bound(usable, first, step);
  std::int64_t b = fit.bound_batch;
  std::vector<std::int64_t> batches;  // checked one by one, from the bound down
  for (; b >= first && batches.size() < static_cast<std::size_t>(kExhaustiveChecks); b -= step) batches.push_back(b);
  // Those the model can check at once first (the curve's), on every core, then the rest.
  std::vector<std::optional<BatchCurve::Need>> needs(batches.size());
  const auto test = [&](std::size_t i) {
    needs[i] = model.needed(batches[i]);
    return needs[i] && needs[i]->fits(usable);
  };
  const auto together = static_cast<std::size_t>(
      std::find_if(batches.begin(), batches.end(), [&](std::int64_t batch) { return !model.concurrent(batch); }) - batches.begin());
  const unsigned threads = fit.options.threads > 0 ? fit.options.threads : std::thread::hardware_concurrency();
  std::size_t i = detail::first_true(together, threads, test);
  if (i == together) i += detail::first_true(batches.size() - together, 1, [&](std::size_t k) { return test(together + k); });
  fit.batches_checked = static_cast<int>(std::min(i + 1, batches.size()));
  if (!batches.empty()) fit.checked_down_to = batches[static_cast<std::size_t>(fit.batches_checked) - 1];
  if (i < batches.size()) return answer(model, fit, batches[i], needs[i]->bytes);
  fit.batch = 0;
  const auto at_first = model.needed(first, true);
  fit.needed_bytes = at_first ? at_first->bytes : 0;
  fit.next_needed_bytes = 0;
  if (b < first || !at_first || !at_first->fits(usable)) return;
  // first fits and b + step does not: bisect between them, in multiples of step.
  std::int64_t lo = first, hi = b + step;
  while (hi - lo > step) {
    const std::int64_t mid = lo + (hi - lo) / step / 2 * step;
    ++fit.batches_checked;
    const auto need = model.needed(mid);
    (need && need->fits(usable) ? lo : hi) = mid;
  }
  answer(model, fit, lo, model.needed(lo)->bytes);
}

// The search on a BatchCurve when the model has one (and `use_curve`), else on full estimates.
BatchFit fit_with(const ModelSpec& spec, EstimateOptions options, const FitOptions& fit_options, bool use_curve) {
  BatchFit fit;
  fit.options = fit_options;
  fit.estimate_options = options;
  fit.model = spec.name;
  fit.file = spec.file;
  Graph first = first_valid_graph(spec, options.graph, fit_options.multiple_of, fit);
  std::optional<BatchCurve> curve = use_curve ? BatchCurve::probe(std::move(first), options.step) : std::nullopt;
  fit.curve_from = fit.first_valid_batch;
  if (use_curve && !curve) {  // maybe only the first batch allocates differently (a broadcast tensor's sum)
    fit.curve_from += fit_options.multiple_of;
    GraphOptions next = options.graph;
    next.batch = fit.curve_from;
    ++fit.graphs_built;
    try {
      curve = BatchCurve::probe(build_graph(spec, next), options.step);
    } catch (const Error&) {  // the next batch's sizes overflow: full estimates
    }
  }
  if (!curve) fit.curve_from = 0;
  if (curve) {
    ++fit.estimates_made;
    fit.closed_form = true;
    fit.probe_batch = curve->probe_batch();
    const bool cuda = options.graph.device == Device::Cuda;
    CurveModel model(std::move(*curve), cuda ? options.step.overhead_bytes : 0, fit.curve_from,
                     EstimateModel(spec, options, fit.estimates_made));
    search(model, fit);
  } else {
    EstimateModel model(spec, options, fit.estimates_made);
    search(model, fit);
  }
  if (fit_options.with_estimate) {
    options.graph.batch = fit.batch > 0 ? fit.batch : fit.first_valid_batch;
    ++fit.estimates_made;
    fit.estimate = estimate(spec, options);
    // A full estimate that disagrees with the curve (the curve's reading of the model was
    // wrong): the search is made again on full estimates.
    if (fit.closed_form && needed_bytes(*fit.estimate) != fit.needed_bytes) return fit_with(spec, options, fit_options, false);
  }
  return fit;
}

}  // namespace

BatchFit fit_batch(const ModelSpec& spec, EstimateOptions options, const FitOptions& fit_options) {
  if (fit_options.budget_bytes < 1) throw Error(spec.loc, "the memory budget must be at least 1 byte");
  if (fit_options.headroom_bytes < 0 || fit_options.headroom_bytes >= fit_options.budget_bytes)
    throw Error(spec.loc, "the headroom must be below the budget, leaving something to fit in");
  if (fit_options.multiple_of < 1 || fit_options.multiple_of > kMaxBatch)
    throw Error(spec.loc, "batches must be multiples of a number from 1 to " + with_commas(kMaxBatch));
  return fit_with(spec, std::move(options), fit_options, true);
}

}  // namespace nnmem
