// The step's allocations as functions of the batch (batch_curve.hpp): one estimate at a prime
// probe batch, each allocation read as c + k × batch, then any batch re-estimated by arithmetic
// (the peak of live tensors) or by replaying the allocations through the CUDA allocator model
// (what the device holds), without building the graph again.
#include "batch_curve.hpp"

#include <algorithm>

#include "cuda_allocator.hpp"

namespace nnmem {

namespace {

bool is_prime(std::int64_t n) {
  if (n < 2) return false;
  for (std::int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

// Every size a graph holds that is not a tensor's batch dimension: shapes of values (but their
// dimension 0), of kept tensors, parameters and buffers. The probe batch must exceed them all.
std::int64_t largest_dimension(const Graph& g) {
  std::int64_t most = g.options.batch;
  const auto each = [&](const Shape& s, std::size_t from) {
    for (std::size_t d = from; d < s.size(); ++d) most = std::max(most, s[d]);
  };
  for (const TensorValue& v : g.values) each(v.type.shape, 0);
  for (const Node& n : g.nodes) {
    for (const Saved& s : n.result->saved) each(s.type.shape, 0);
    for (const ParamDecl& p : n.result->params) each(p.shape, 0);
    for (const ParamDecl& b : n.result->buffers) each(b.shape, 0);
  }
  return most;
}

// Whether `big` is `small` with only the batch changed: the batch is one dimension of every value
// (or a factor of it) but those made without it (autocast's copies of parameters, constants such as positions and
// masks, a parameter read as a tensor: the same shape at both batches, which a shape computed
// from the batch cannot have, the probe batch being a prime above every other size), and no
// other size, nor anything the step simulation reads, differs. Kept tensors that a layer makes
// (indices, masks, statistics) either scale the same way or do not change at all.
bool same_but_batch(const Shape& a, const Shape& b, std::int64_t batch_a, std::int64_t batch_b) {
  if (a == b) return true;
  if (a.size() != b.size()) return false;
  // One dimension is the batch or a multiple of it: dimension 0 mostly (a language model's
  // [B * T, vocab] logits too), dimension 1 of a recurrent layer's h_n and of a sequence-first
  // tensor. The sizes, all the curve reads, are then linear in the batch.
  std::size_t differ = 0, d = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k]) ++differ, d = k;
  return differ == 1 && a[d] % batch_a == 0 && b[d] % batch_b == 0 && a[d] / batch_a == b[d] / batch_b;
}

bool same_but_batch(const Graph& small, const Graph& big) {
  const std::int64_t s = small.options.batch, b = big.options.batch;
  if (small.values.size() != big.values.size() || small.nodes.size() != big.nodes.size() ||
      small.storages.size() != big.storages.size())
    return false;
  for (std::size_t i = 0; i < small.values.size(); ++i) {
    const TensorValue &x = small.values[i], &y = big.values[i];
    if (x.type.dtype != y.type.dtype || x.storage != y.storage || x.requires_grad != y.requires_grad ||
        !same_but_batch(x.type.shape, y.type.shape, s, b))
      return false;
  }
  // A tensor made without the batch and broadcast to it (a class token expanded) has the
  // output's shape at batch 1 only: its gradient then needs no sum, an allocation fewer.
  const auto same_shape = [](const Graph& g, int a, int b) { return g.values[a].type.shape == g.values[b].type.shape; };
  for (std::size_t i = 0; i < small.nodes.size(); ++i)
    for (const int in : small.nodes[i].inputs)
      for (const int out : small.nodes[i].outputs)
        if (same_shape(small, in, out) != same_shape(big, in, out)) return false;
  for (std::size_t i = 0; i < small.nodes.size(); ++i) {
    const LayerResult &x = *small.nodes[i].result, &y = *big.nodes[i].result;
    if (x.saved.size() != y.saved.size() || x.alias != y.alias || x.grad_passthrough != y.grad_passthrough ||
        x.broadcasts != y.broadcasts || small.nodes[i].param_bytes != big.nodes[i].param_bytes ||
        small.nodes[i].buffer_bytes != big.nodes[i].buffer_bytes)
      return false;
    for (std::size_t k = 0; k < x.saved.size(); ++k)
      if (x.saved[k].of != y.saved[k].of || x.saved[k].index != y.saved[k].index || x.saved[k].type.dtype != y.saved[k].type.dtype ||
          !same_but_batch(x.saved[k].type.shape, y.saved[k].type.shape, s, b))
        return false;
  }
  return true;
}

// Memory that by its nature does not depend on the batch: the model's state and the optimizer's
// work, whatever sums of tensors the simulation allocates for them.
bool batch_independent(MemoryKind kind, Phase phase) {
  return phase == Phase::Optimizer || kind == MemoryKind::Parameters || kind == MemoryKind::Buffers ||
         kind == MemoryKind::OptimizerState || kind == MemoryKind::Gradients || kind == MemoryKind::WeightCopies ||
         kind == MemoryKind::CommBuffers || kind == MemoryKind::Gathered;
}

}  // namespace

std::optional<BatchCurve> BatchCurve::probe(Graph small, const StepOptions& step) {
  // A sparse gradient (Embedding's `sparse: true`) holds a row per id looked up: the model's
  // state that batch_independent takes for constant grows with the batch. Estimated in full.
  for (const Parameter& param : small.parameters)
    if (param.sparse_rows > 0) return std::nullopt;
  std::int64_t p = std::max<std::int64_t>(largest_dimension(small), 64) + 1;
  while (!is_prime(p)) ++p;
  const std::int64_t s = small.options.batch;
  GraphOptions at_p = small.options;
  at_p.batch = p;
  BatchCurve curve;
  detail::StepResult result;
  std::vector<std::int64_t> at_s;  // each event's size at the small batch
  try {
    {
      detail::StepResult first;
      (void)detail::estimate_with_step(small, step, first, detail::Keep::Events);
      at_s.reserve(first.timeline.size());
      for (const TimelineEvent& ev : first.timeline) at_s.push_back(ev.delta);
    }
    Graph big = build_graph(std::move(small.spec), at_p);  // `small` needs its shapes only, now
    if (!same_but_batch(small, big)) return std::nullopt;
    detail::let_go_of_build_inputs(big);
    (void)detail::estimate_with_step(big, step, result, detail::Keep::Events);  // its allocations only: the fit replays them
  } catch (const Error&) {
    return std::nullopt;  // the probe's sizes overflow, or the model refuses its batch: re-estimated in full instead
  }
  if (at_s.size() != result.timeline.size()) return std::nullopt;
  curve.probe_batch_ = p;
  curve.device_ = small.options.device;
  curve.step_ = step;
  curve.blocks_.resize(result.trace.block_bytes.size());
  curve.live_.reserve(result.timeline.size());
  Line live;
  for (std::size_t e = 0; e < result.timeline.size(); ++e) {
    const TimelineEvent& ev = result.timeline[e];
    if (ev.block < 0 || static_cast<std::size_t>(ev.block) >= curve.blocks_.size()) return std::nullopt;
    Line& block = curve.blocks_[static_cast<std::size_t>(ev.block)];
    if ((ev.delta > 0) != (at_s[e] > 0) || (ev.delta < 0) != (at_s[e] < 0)) return std::nullopt;
    if (ev.delta > 0) {
      // The line through (s, at_s) and (p, delta), in whole bytes: a size that does not grow
      // with the batch (a gradient of 256 x 257 parameters, which the prime 257 divides) is
      // its constant, whatever P divides.
      const std::int64_t rise = ev.delta - at_s[e];
      if (rise % (p - s) != 0) return std::nullopt;
      block.per_sample = batch_independent(ev.kind, ev.phase) ? 0 : rise / (p - s);
      block.constant = ev.delta - block.per_sample * p;
      if (block.per_sample < 0 || block.constant < 0 || (block.per_sample == 0 && rise != 0)) return std::nullopt;
      live.constant += block.constant;
      live.per_sample += block.per_sample;
    } else {
      live.constant -= block.constant;
      live.per_sample -= block.per_sample;
    }
    curve.live_.push_back(live);
  }
  curve.events_ = std::move(result.timeline);
  curve.trace_ = std::move(result.trace);
  if (curve.device_ == Device::Cuda) curve.script_.emplace(curve.events_, curve.trace_, step);
  return curve;
}

std::optional<std::int64_t> BatchCurve::peak_bytes(std::int64_t batch) const {
  try {
    std::int64_t peak = 0;
    for (const Line& l : live_) peak = std::max(peak, l.at(batch));
    return peak;
  } catch (const OverflowError&) {
    return std::nullopt;
  }
}

std::int64_t BatchCurve::largest_batch_with_peak_at_most(std::int64_t bytes) const {
  std::int64_t largest = kMaxBatch;
  for (const Line& l : live_) {
    if (l.constant > bytes) return 0;
    if (l.per_sample > 0) largest = std::min(largest, (bytes - l.constant) / l.per_sample);
  }
  return largest;
}

std::optional<std::int64_t> BatchCurve::rounded_peak_bytes(std::int64_t batch) const {
  if (device_ == Device::Cpu) return peak_bytes(batch);
  try {
    const detail::CudaCachingAllocator allocator(step_.allocator);
    std::vector<std::int64_t> rounded(blocks_.size());
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      const std::int64_t bytes = blocks_[k].at(batch);
      rounded[k] = bytes == 0 ? 0 : allocator.round_size(bytes);  // an empty tensor allocates nothing
    }
    std::int64_t live = 0, peak = 0;
    for (const TimelineEvent& ev : events_) {
      const std::int64_t r = rounded[static_cast<std::size_t>(ev.block)];
      live = ev.delta > 0 ? checked_add(live, r) : live - r;
      peak = std::max(peak, live);
    }
    return peak;
  } catch (const OverflowError&) {
    return std::nullopt;
  }
}

std::optional<BatchCurve::Need> BatchCurve::needed(std::int64_t batch, std::int64_t give_up_above) const {
  if (device_ == Device::Cpu) {
    const auto peak = peak_bytes(batch);
    return peak ? std::optional(Need{*peak, false}) : std::nullopt;
  }
  try {
    detail::BlockSizes bytes;
    for (const Line& block : blocks_) bytes.push_back(block.at(batch));
    const CudaAllocatorFigures f = detail::replay_cuda_allocator(*script_, events_.layers, trace_, bytes, step_, give_up_above);
    return Need{checked_add(f.max_reserved_bytes, step_.overhead_bytes), f.out_of_memory};
  } catch (const OverflowError&) {
    return std::nullopt;
  }
}

}  // namespace nnmem
