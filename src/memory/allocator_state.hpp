// The CUDA allocator replay's state after an iteration, hashed (cuda_replay.cpp compares them to
// find the cycle the loop settles into): every block's place, size, whether it is allocated,
// its pool, whether it starts a segment, and for an allocated block what it holds (the Carry of
// the tensor in it), hashed twice into 128 bits (states of growing caches are large, and a
// thousand of them are kept). A block's place is its segment's rank among the segments by
// address and its offset in it: what the algorithm depends on (best fit compares addresses only
// to order blocks), and unlike the addresses themselves it repeats when a released segment is
// replaced by a new one (which the simulation puts above all the others).
//
// The hash is a sum over the blocks, kept per segment: after an iteration only the segments it
// changed are hashed again. A cache that never settles grows by segments no later iteration
// touches; hashing all of them after every iteration made such a replay quadratic (GPT-2 with
// --max-split-size 64 at batch 42: 1.5 million segments after 4,000 iterations, 57 s, nine
// tenths of it hashing).
#pragma once

#include <cassert>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cuda_allocator.hpp"
#include "memory_tracker.hpp"

namespace nnmem::detail {

class AllocatorStateHash {
 public:
  using Hash = std::pair<std::uint64_t, std::uint64_t>;

  /// The state's hash now; `carry(handle)` is what the allocated block `handle` holds.
  template <class CarryOf>
  Hash update(CudaCachingAllocator& allocator, const CarryOf& carry) {
    changed_.clear();
    const std::size_t made = allocator.segments_made();
    // (Following a segment's links is a cache miss a block; the whole state is taken in the
    // order of the blocks' ids, which follows memory, when most segments changed.)
    whole_ = !allocator.take_changed_segments(changed_) || segment_hash_.empty() || 2 * changed_.size() > made;
    if (whole_) {
      sum_ = all(allocator, carry, &segment_hash_, &segment_rank_);
      next_rank_ = 0;
      for (const std::int64_t r : segment_rank_) next_rank_ = std::max(next_rank_, r + 1);
    } else {
      for (std::size_t s = segment_rank_.size(); s < made; ++s) {  // segments made since: above the others
        segment_rank_.push_back(allocator.ordinary_segment(s) ? next_rank_++ : -1);
        segment_hash_.emplace_back(0, 0);
      }
      for (const int s : changed_) {
        Hash& h = segment_hash_[static_cast<std::size_t>(s)];
        sum_.first -= h.first, sum_.second -= h.second;
        h = {0, 0};
        const std::int64_t rank = segment_rank_[static_cast<std::size_t>(s)];
        allocator.for_each_placed_block_of(s, [&](const CudaCachingAllocator::BlockInfo& b, std::int64_t place) {
          add(h, b, rank, place, carry);
        });
        sum_.first += h.first, sum_.second += h.second;
      }
      assert(sum_ == all(allocator, carry, nullptr, nullptr));  // (the sanitized build's tests check every update)
    }
    return {sum_.first + 0x243f6a8885a308d3ULL, sum_.second + 0x13198a2e03707344ULL};
  }
  /// Whether the last update took every block (else only the changed segments').
  bool took_every_block() const { return whole_; }

 private:
  // One 64 x 64 -> 128-bit multiply per lane and block (wyhash's mum), the block's segment and
  // place in one operand, its size and flags in the other. The two lanes take the operands with
  // different constants, so a collision needs both to collide. (A block's place is unique in its
  // segment: the sum is over a set, and no order of the blocks changes it.)
  template <class CarryOf>
  static void add(Hash& hash, const CudaCachingAllocator::BlockInfo& b, std::int64_t segment, std::int64_t place,
                  const CarryOf& carry) {
    __extension__ using Wide = unsigned __int128;
    const auto mum = [](std::uint64_t a, std::uint64_t x) {
      const Wide r = static_cast<Wide>(a) * x;
      return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
    };
    Carry what = Carry::None;
    if (b.allocated && (what = carry(b.handle)) == Carry::None)
      throw std::logic_error("a tensor of the step outlives it in the CUDA allocator replay");
    const std::uint64_t flags = std::uint64_t{b.allocated} | std::uint64_t{b.small} << 1 |
                                std::uint64_t{b.segment_start} << 2 | static_cast<std::uint64_t>(what) << 3;
    // (The flags take 9 bits: the size, shifted past them, and the flags in one word; the
    // segment's rank mixed into the place first.)
    const std::uint64_t u = static_cast<std::uint64_t>(place) ^ mum(static_cast<std::uint64_t>(segment) ^ 0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL);
    const std::uint64_t v = static_cast<std::uint64_t>(b.size) << 9 ^ flags;
    hash.first += mum(u ^ 0xa0761d6478bd642fULL, v ^ 0xe7037ed1a0b428dbULL);
    hash.second += mum(v ^ 0x8ebc6af09c88c6e3ULL, u ^ 0x589965cc75374cc3ULL);
  }

  // Every block's terms summed, and with `per_segment` each segment's sum and rank.
  template <class CarryOf>
  static Hash all(const CudaCachingAllocator& allocator, const CarryOf& carry, std::vector<Hash>* per_segment,
                  std::vector<std::int64_t>* ranks) {
    if (per_segment) per_segment->assign(allocator.segments_made(), {0, 0}), ranks->assign(allocator.segments_made(), -1);
    Hash sum{0, 0};
    allocator.for_each_placed_block_indexed(
        [&](const CudaCachingAllocator::BlockInfo& b, int index, std::int64_t segment, std::int64_t place) {
          if (!per_segment) return add(sum, b, segment, place, carry);
          add((*per_segment)[static_cast<std::size_t>(index)], b, segment, place, carry);
          (*ranks)[static_cast<std::size_t>(index)] = segment;
        });
    if (per_segment)
      for (const Hash& h : *per_segment) sum.first += h.first, sum.second += h.second;
    return sum;
  }

  std::vector<Hash> segment_hash_;          // per segment made: its blocks' terms summed
  std::vector<std::int64_t> segment_rank_;  // per segment made: its rank (-1: expandable or released)
  std::int64_t next_rank_ = 0;              // the rank of the next ordinary segment
  std::vector<int> changed_;
  Hash sum_{0, 0};
  bool whole_ = true;
};

}  // namespace nnmem::detail
