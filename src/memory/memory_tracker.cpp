#include "memory_tracker.hpp"

#include <algorithm>
#include <stdexcept>

namespace nnmem::detail {

MemoryTracker::MemoryTracker() {  // events are attributed to no layer until at() names one
  timeline_.layers.emplace_back();
  layer_ids_.emplace("", 0);
}

void MemoryTracker::at(Phase phase, std::string_view layer) {
  phase_ = phase;
  if (timeline_.layers[layer_] == layer) return;
  const auto [it, fresh] = layer_ids_.try_emplace(std::string(layer), static_cast<std::uint32_t>(timeline_.layers.size()));
  if (fresh) timeline_.layers.push_back(it->first);
  layer_ = it->second;
}

void MemoryTracker::micro_step(std::int64_t m) {
  timeline_.micro_steps.push_back(m);
  micro_ = static_cast<std::uint16_t>(timeline_.micro_steps.size() - 1);
}

int MemoryTracker::alloc(MemoryKind kind, std::int64_t bytes, std::string what, int refs) {
  blocks_.push_back({bytes, refs, std::move(what), true, kind});
  live_ = checked_add(live_, bytes);
  const int id = static_cast<int>(blocks_.size()) - 1;
  record(id, bytes);
  if (refs == 0) release(id), ++blocks_.back().refs;  // never held: freed at once
  return id;
}

void MemoryTracker::hold(int block, int refs) {
  Block& b = blocks_.at(static_cast<std::size_t>(block));
  if (!b.live) throw std::logic_error("simulation holds a freed block: " + b.what);
  b.refs += refs;
}

void MemoryTracker::release(int block) {
  Block& b = blocks_.at(static_cast<std::size_t>(block));
  if (!b.live || b.refs <= 0) throw std::logic_error("simulation releases a block twice: " + b.what);
  if (--b.refs > 0) return;
  b.live = false;
  live_ -= b.bytes;
  record(block, -b.bytes);
}

Timeline MemoryTracker::take_timeline() {
  timeline_.tensors.reserve(blocks_.size());
  for (Block& b : blocks_) timeline_.tensors.push_back(std::move(b.what));
  return std::move(timeline_);
}

AllocationTrace MemoryTracker::take_trace() {
  AllocationTrace trace;
  for (const Block& b : blocks_) {
    trace.block_bytes.push_back(b.bytes);
    trace.block_carry.push_back(b.carry);
  }
  return trace;
}

void MemoryTracker::record(int block, std::int64_t delta) {
  const Block& b = blocks_[static_cast<std::size_t>(block)];
  const MemoryKind kind = b.kind;
  timeline_.events.push_back({delta, live_, block, layer_, phase_, kind, micro_});
  auto& of_kind = by_kind_[static_cast<std::size_t>(kind)];
  of_kind += delta;
  if (phase_ == Phase::Backward && kind == MemoryKind::Transients) backward_transients_ = std::max(backward_transients_, of_kind);
  if (live_ > peak_) {
    peak_ = live_;
    peak_phase_ = phase_;
    peak_layer_ = layer_;
    peak_micro_step_ = timeline_.micro_steps[micro_];
    breakdown_at_peak_ = by_kind_;
  }
}

}  // namespace nnmem::detail
