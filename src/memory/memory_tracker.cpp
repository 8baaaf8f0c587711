#include "memory_tracker.hpp"

#include <algorithm>

#include <stdexcept>

namespace nnmem::detail {

namespace {
constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = 1024 * kKiB;

std::int64_t round_up(std::int64_t value, std::int64_t unit) { return checked_mul((checked_add(value, unit - 1)) / unit, unit); }
}  // namespace

// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): requests are rounded up
// to 512 B; blocks of at most 1 MiB are carved from 2 MiB segments, blocks up to 10 MiB from
// 20 MiB segments, larger ones get their own segment rounded up to 2 MiB. The pools below pack
// the live blocks perfectly into segments: a lower bound, as fragmentation only adds to it.
void MemoryTracker::Pools::add(std::int64_t bytes, int sign) {
  if (bytes == 0) return;
  const std::int64_t rounded = round_up(bytes, 512);
  if (rounded <= kMiB) small += sign * rounded;
  else if (rounded < 10 * kMiB) medium += sign * rounded;
  else large += sign * round_up(rounded, 2 * kMiB);
}

std::int64_t MemoryTracker::Pools::reserved() const {
  return round_up(small, 2 * kMiB) + round_up(medium, 20 * kMiB) + large;
}

int MemoryTracker::alloc(MemoryKind kind, std::int64_t bytes, std::string what, int refs) {
  blocks_.push_back({bytes, refs, std::move(what), true, kind});
  live_ = checked_add(live_, bytes);
  pools_.add(bytes, +1);
  const int id = static_cast<int>(blocks_.size()) - 1;
  record(bytes, id);
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
  pools_.add(b.bytes, -1);
  record(-b.bytes, block);
}

void MemoryTracker::record(std::int64_t delta, int block) {
  const Block& b = blocks_[static_cast<std::size_t>(block)];
  const MemoryKind kind = b.kind;
  if (timeline_) events_.push_back({phase_, layer_, b.what, delta, live_, kind, block});
  auto& of_kind = by_kind_[static_cast<std::size_t>(kind)];
  of_kind += delta;
  if (phase_ == Phase::Backward && kind == MemoryKind::Transients) backward_transients_ = std::max(backward_transients_, of_kind);
  if (live_ > peak_) {
    peak_ = live_;
    peak_phase_ = phase_;
    peak_layer_ = layer_;
    reserved_at_peak_ = pools_.reserved();
    breakdown_at_peak_ = by_kind_;
  }
}

}  // namespace nnmem::detail
