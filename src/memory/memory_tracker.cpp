#include "memory_tracker.hpp"

#include <algorithm>
#include <stdexcept>

namespace nnmem::detail {

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
  events_.push_back({phase_, layer_, b.what, delta, live_, kind, block, micro_step_});
  auto& of_kind = by_kind_[static_cast<std::size_t>(kind)];
  of_kind += delta;
  if (phase_ == Phase::Backward && kind == MemoryKind::Transients) backward_transients_ = std::max(backward_transients_, of_kind);
  if (live_ > peak_) {
    peak_ = live_;
    peak_phase_ = phase_;
    peak_layer_ = layer_;
    peak_micro_step_ = micro_step_;
    breakdown_at_peak_ = by_kind_;
  }
}

}  // namespace nnmem::detail
