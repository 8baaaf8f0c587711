// What the step simulation records for the CUDA allocator's replay, kept small: a deep model's
// step has millions of blocks and events (100,000 Linear layers under Adam: 1.9 million blocks,
// 3.8 million events), and these records are what the simulation and the replay hold at their
// heap peaks (bench/README.md, "Sizes in 2 bytes, allocations by count").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "nnmem/estimate.hpp"
#include "pieces.hpp"

namespace nnmem::detail {

/// Each block's bytes, by block id, in 2 bytes while the step has at most 65,536 distinct sizes
/// (a deep model repeats a few: 100,000 Linear layers have 9), an index into them; past that, in
/// 4 bytes for a block under 2 GiB, a larger (or negative) size kept whole beside with the 4
/// bytes its index there. Exact for every int64.
class BlockSizes {
 public:
  std::int64_t operator[](std::size_t k) const { return wide_ ? wide(wide_ids_[k]) : distinct_[narrow_[k]]; }
  void push_back(std::int64_t bytes);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr std::size_t kMaxDistinct = std::size_t{1} << 16;
  static constexpr std::uint32_t kWhole = std::uint32_t{1} << 31;  // from here: an index into whole_
  std::int64_t wide(std::uint32_t v) const { return v < kWhole ? std::int64_t{v} : whole_[v - kWhole]; }
  void push_wide(std::int64_t bytes);
  void widen();  // the narrow ids made wide, once the distinct sizes are too many
  // A size's first slot (Fibonacci hashing: sizes are multiples of 4 and of powers of two, the
  // product's top bits mix them).
  static std::size_t slot_of(std::int64_t bytes, std::size_t mask) {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(bytes) * 0x9e3779b97f4a7c15ULL) >> 40) & mask;
  }
  std::size_t size_ = 0;
  bool wide_ = false;
  Pieces<std::uint16_t> narrow_;      // by block: its size's index in distinct_
  std::vector<std::int64_t> distinct_;
  std::vector<std::uint32_t> slots_;  // distinct_'s sizes hashed, open addressing: index + 1 (0: empty)
  Pieces<std::uint32_t> wide_ids_;    // once wide, by block: its size, or kWhole + its index in whole_
  Pieces<std::int64_t> whole_;
};

/// The step's events as the replay reads them, in order. An event of no bytes (an empty tensor,
/// which PyTorch allocates nothing for) is none. The simulation allocates its blocks in the
/// order of their ids, so an allocation's block is the last one's plus one, kept only where it
/// is not (after an empty tensor's): a bit an event says which it is, and a free names its
/// block by how far it is from the last free's, in 1 or 2 bytes at 100,000 layers (a block id
/// an event, 4 bytes, 15 MB there, were 8 MB of the replay's peak more). The phase and layer are
/// kept per run of events that share them.
class ReplaySteps {
 public:
  void push_back(int block, std::int64_t delta, Phase phase, std::uint32_t layer);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The layer (index in Timeline::layers) and the phase step k is in.
  std::uint32_t layer(std::size_t k) const { return run_of(k).layer(); }
  Phase phase(std::size_t k) const { return run_of(k).phase(); }
  /// The first step in `phase` (size() if none).
  std::size_t first_of(Phase phase) const;

  /// f(index, block, allocates) for each step in order, until f returns false (then false). (The
  /// replay reads every step once an iteration: the bits a word at a time, the deltas a piece at
  /// a time, the state in locals.)
  template <class F>
  bool for_each(F&& f) const {
    std::size_t allocs = 0, jump = 0, read = 0;
    std::size_t next_jump = jumps_.empty() ? kNever : jumps_[0].alloc;
    std::int64_t alloc_block = 0, last_freed = 0;
    const std::uint8_t *byte = nullptr, *end = nullptr;
    for (std::size_t word = 0; 64 * word < size_; ++word) {
      std::uint64_t bits = allocates_[word];
      const std::size_t last = std::min(size_, 64 * word + 64);
      for (std::size_t k = 64 * word; k < last; ++k, bits >>= 1) {
        if (bits & 1u) {
          if (allocs == next_jump) {
            alloc_block = jumps_[jump].block;
            next_jump = ++jump < jumps_.size() ? jumps_[jump].alloc : kNever;
          }
          ++allocs;
          if (!f(k, static_cast<int>(alloc_block++), true)) return false;
          continue;
        }
        std::uint64_t z = 0;  // the delta: zigzagged, 7 bits a byte
        for (int shift = 0;; shift += 7) {
          if (byte == end) std::tie(byte, end) = freed_.run_from(read);
          const std::uint8_t b = *byte++;
          ++read;
          z |= std::uint64_t{b & 0x7fu} << shift;
          if (b < 0x80) break;
        }
        last_freed += static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
        if (!f(k, static_cast<int>(last_freed), false)) return false;
      }
    }
    return true;
  }

 private:
  struct Run {  // where the layer or the phase changes: 8 bytes
    std::uint32_t first;          // its first step
    std::uint32_t layer_phase;    // layer << 2 | phase
    std::uint32_t layer() const { return layer_phase >> 2; }
    Phase phase() const { return static_cast<Phase>(layer_phase & 3u); }
  };
  struct Jump {  // from this allocation on, each allocates the block after the one before
    std::size_t alloc;            // its index among the allocations
    int block;
  };
  static constexpr std::size_t kNever = ~std::size_t{0};
  const Run& run_of(std::size_t k) const;
  // A free's block less the last free's, zigzagged, 7 bits a byte (consecutive frees are of
  // nearby blocks: at 100,000 layers, 1 or 2 bytes where a block id takes 4).
  void write_delta(std::int64_t delta);
  std::size_t size_ = 0;
  Pieces<std::uint64_t> allocates_;  // a bit per step: it allocates
  Pieces<std::uint8_t, 16> freed_;   // each free's block, as a delta
  std::int64_t last_freed_ = 0;
  Pieces<Jump> jumps_;               // where an allocation's block is not the last one's plus one
  std::size_t allocs_ = 0;
  std::int64_t next_block_ = -1;     // the block the next allocation is expected to be
  Pieces<Run> runs_;
};

}  // namespace nnmem::detail
