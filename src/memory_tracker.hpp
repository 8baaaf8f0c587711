// A reference-counted model of the allocator, used to simulate one training step tensor by
// tensor: every allocation and release becomes a TimelineEvent, and the peak is remembered.
#pragma once

#include <string>
#include <vector>

#include "nnmem/estimate.hpp"

namespace nnmem::detail {

class MemoryTracker {
 public:
  /// Where subsequent events are attributed.
  void at(Phase phase, std::string layer) {
    phase_ = phase;
    layer_ = std::move(layer);
  }

  /// Allocates a block held by `refs` references (0 frees it at the next settle()).
  int alloc(std::int64_t bytes, std::string what, int refs = 1);
  void hold(int block, int refs = 1);
  /// Drops one reference; the block is freed when none is left.
  void release(int block);
  int refs(int block) const { return blocks_[static_cast<std::size_t>(block)].refs; }
  std::int64_t bytes(int block) const { return blocks_[static_cast<std::size_t>(block)].bytes; }

  Phase phase() const { return phase_; }
  std::int64_t live() const { return live_; }
  std::int64_t peak() const { return peak_; }
  Phase peak_phase() const { return peak_phase_; }
  const std::string& peak_layer() const { return peak_layer_; }
  /// CUDA caching-allocator view of the blocks live at the peak (see estimate.cpp).
  std::int64_t reserved_at_peak() const { return reserved_at_peak_; }

  std::vector<TimelineEvent> take_timeline() { return std::move(events_); }

 private:
  struct Block {
    std::int64_t bytes;
    int refs;
    std::string what;
    bool live;
  };
  struct Pools {
    std::int64_t small = 0, medium = 0, large = 0;  // live bytes by CUDA allocator pool, rounded
    void add(std::int64_t bytes, int sign);
    std::int64_t reserved() const;
  };
  void record(std::int64_t delta, const std::string& what);

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
};

}  // namespace nnmem::detail
