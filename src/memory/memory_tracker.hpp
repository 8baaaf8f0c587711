// A reference-counted model of the allocator, used to simulate one training step tensor by
// tensor: every allocation and release becomes a TimelineEvent, and the peak is remembered.
#pragma once

#include <string>
#include <vector>

#include "nnmem/estimate.hpp"

namespace nnmem::detail {

class MemoryTracker {
 public:
  /// `timeline`: record every event (take_timeline()); without it, only the figures are kept
  /// (a replay of known allocations at another batch size needs no timeline).
  explicit MemoryTracker(bool timeline = true) : timeline_(timeline) {}

  /// Where subsequent events are attributed.
  void at(Phase phase, std::string layer) {
    phase_ = phase;
    layer_ = std::move(layer);
  }

  /// Allocates a block of `kind` held by `refs` references.
  int alloc(MemoryKind kind, std::int64_t bytes, std::string what, int refs = 1);
  void hold(int block, int refs = 1);
  /// Drops one reference; the block is freed when none is left.
  void release(int block);
  int refs(int block) const { return blocks_[static_cast<std::size_t>(block)].refs; }
  std::int64_t bytes(int block) const { return blocks_[static_cast<std::size_t>(block)].bytes; }
  MemoryKind kind(int block) const { return blocks_[static_cast<std::size_t>(block)].kind; }

  Phase phase() const { return phase_; }
  std::int64_t live() const { return live_; }
  std::int64_t peak() const { return peak_; }
  Phase peak_phase() const { return peak_phase_; }
  const std::string& peak_layer() const { return peak_layer_; }
  /// CUDA caching-allocator view of the blocks live at the peak (see estimate.cpp).
  std::int64_t reserved_at_peak() const { return reserved_at_peak_; }
  /// The live bytes of each MemoryKind at the peak.
  const std::array<std::int64_t, kMemoryKinds>& breakdown_at_peak() const { return breakdown_at_peak_; }
  /// The most Transients live at once during the backward pass.
  std::int64_t backward_transients() const { return backward_transients_; }

  std::vector<TimelineEvent> take_timeline() { return std::move(events_); }

 private:
  struct Block {
    std::int64_t bytes;
    int refs;
    std::string what;
    bool live;
    MemoryKind kind;
  };
  struct Pools {
    std::int64_t small = 0, medium = 0, large = 0;  // live bytes by CUDA allocator pool, rounded
    void add(std::int64_t bytes, int sign);
    std::int64_t reserved() const;
  };
  void record(std::int64_t delta, int block);

  std::vector<Block> blocks_;
  std::vector<TimelineEvent> events_;
  Phase phase_ = Phase::Forward;
  std::string layer_;
  std::int64_t live_ = 0;
  std::int64_t peak_ = 0;
  Phase peak_phase_ = Phase::Forward;
  std::string peak_layer_;
  std::int64_t reserved_at_peak_ = 0;
  Pools pools_;
  std::array<std::int64_t, kMemoryKinds> by_kind_{};
  std::array<std::int64_t, kMemoryKinds> breakdown_at_peak_{};
  std::int64_t backward_transients_ = 0;
  bool timeline_ = true;
};

}  // namespace nnmem::detail
