// A simulation of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator, PyTorch 2.x), one device and one stream: the same rounding, pools,
// best-fit search, splitting, merging, segment sizes and release-on-failure, over simulated
// addresses instead of device memory. What is and is not modelled: docs/memory-model.md.
//
// Addresses: cudaMalloc's are not known in advance, so every new segment gets the next address
// above all earlier ones (they only break ties between equal-size cached blocks, and say which
// blocks are neighbours). Expandable segments, one per pool, live at fixed high addresses with
// address space enough for any request.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "free_blocks.hpp"
#include "nnmem/estimate.hpp"

namespace nnmem::detail {

class CudaCachingAllocator {
 public:
  static constexpr std::int64_t kMinBlockSize = 512;           // every size is rounded to this
  static constexpr std::int64_t kSmallSize = 1 << 20;          // the largest small-pool request
  static constexpr std::int64_t kSmallBuffer = 2 << 20;        // small-pool segments
  static constexpr std::int64_t kLargeBuffer = 20 << 20;       // segments for 1-10 MiB requests
  static constexpr std::int64_t kMinLargeAlloc = 10 << 20;     // from here, a segment of its own
  static constexpr std::int64_t kRoundLarge = 2 << 20;         // ... rounded up to 2 MiB
  static constexpr std::int64_t kMaxRequest = std::int64_t{1} << 60;  // "more than 1EB": refused
  static constexpr std::int64_t kMinMaxSplitSize = 20 << 20;   // max_split_size_mb's minimum

  /// What PyTorch would refuse in these settings ("" if nothing): max_split_size below 20 MiB,
  /// divisions that are not powers of two, a negative capacity.
  static std::string problem(const CudaAllocatorConfig& config);
  /// Throws std::invalid_argument with problem(config) if there is one.
  explicit CudaCachingAllocator(const CudaAllocatorConfig& config);

  /// A block for a request of `bytes` (> 0), as a handle for free(); -1 when the device is out
  /// of memory (the capacity is reached even after releasing the cache, or the request is 1 EiB
  /// or more).
  int malloc(std::int64_t bytes);
  void free(int handle);
  /// Room for `blocks` blocks, taken now: a caller that knows about how many it will hold at
  /// once spares the block table's doubling (the old and the new table held together, half of
  /// the new one never used). Reserved address space no block has used is not resident.
  void reserve(std::size_t blocks) {
    blocks_.reserve(blocks);
    live_.reserve(blocks);
  }

  std::int64_t allocated() const { return allocated_; }   // memory_allocated()
  std::int64_t reserved() const { return reserved_; }     // memory_reserved()
  std::int64_t max_allocated() const { return max_allocated_; }
  std::int64_t max_reserved() const { return max_reserved_; }
  std::int64_t reserved_small_pool() const { return reserved_small_; }  // reserved_bytes.small_pool
  std::int64_t alloc_retries() const { return alloc_retries_; }        // num_alloc_retries

  /// A block as torch.cuda.memory_snapshot() would list it.
  struct BlockInfo {
    std::int64_t address = 0;
    std::int64_t size = 0;
    bool allocated = false;
    bool small = false;          // in the small pool
    bool segment_start = false;  // the first block of a segment (expandable: of a mapped range)
    bool expandable = false;     // in an expandable segment (whose address is fixed)
    int handle = -1;             // when allocated
    bool operator==(const BlockInfo&) const = default;
  };
  /// Every block of every segment (unmapped address space excluded), by address.
  std::vector<BlockInfo> snapshot() const;
  /// f(BlockInfo) for each block snapshot() lists, in its order, without building the list.
  template <class F>
  void for_each_block(F&& f) const;
  /// f(BlockInfo, segment, place) for each block snapshot() lists, in the order of the blocks'
  /// ids (memory order; snapshot()'s address order follows links from block to block): `segment`
  /// is its segment's rank among the ordinary segments by address (-1 for an expandable block),
  /// `place` its offset in that segment (an expandable block's: its address, which is fixed).
  template <class F>
  void for_each_placed_block(F&& f) const;
  /// The same with the block's segment as its index among the segments made (released ones
  /// included), the one for_each_placed_block_of and take_changed_segments take: f(BlockInfo, index,
  /// segment, place).
  template <class F>
  void for_each_placed_block_indexed(F&& f) const;
  /// f(BlockInfo, place) for each block for_each_placed_block lists of the segment made
  /// `index`-th (following links: a cache miss a block), nothing for a released one.
  template <class F>
  void for_each_placed_block_of(int index, F&& f) const;
  /// Segments made so far (released ones included), and whether the one made `index`-th is an
  /// ordinary (not expandable) segment still held.
  std::size_t segments_made() const { return segments_.size(); }
  bool ordinary_segment(std::size_t index) const { return segments_[index] >= 0 && !at(segments_[index]).expandable; }
  /// The segments whose blocks changed since the last call, each once, appended to `out`
  /// (a request's blocks all lie in the segment of the block it is given, a free's in that of the
  /// block freed); false instead when a segment was released or unmapped since, which can move
  /// the ranks of the others: every segment is then to be taken as changed.
  bool take_changed_segments(std::vector<int>& out);
  /// Segments held (expandable segments: each contiguous mapped range counts as one).
  std::int64_t segments() const;

  /// The size a request is rounded to (round_size), and the segment it would open
  /// (get_allocation_size).
  std::int64_t round_size(std::int64_t bytes) const {
    // The usual settings inline (every malloc rounds), without the interval's lookup or
    // overflow checks (none can overflow here); the rest in rounded_otherwise.
    if (plain_rounding_ && bytes >= kMinBlockSize && bytes < kMaxRequest) return (bytes + kMinBlockSize - 1) & ~(kMinBlockSize - 1);
    return rounded_otherwise(bytes);
  }
  static std::int64_t allocation_size(std::int64_t size);

 private:
  enum Pool : std::uint8_t { kSmall, kLarge };
  struct Block {
    std::int64_t address = 0;
    std::int64_t size = 0;
    int prev = -1, next = -1;      // neighbours in the same segment
    Pool pool = kLarge;
    bool allocated = false;
    bool mapped = true;            // false: an expandable segment's unmapped address space
    bool expandable = false;
    int segment = -1;              // its segment's index in segments_
  };
  using AddressKey = std::pair<std::int64_t, int>;

  Block& at(int id) { return blocks_[static_cast<std::size_t>(id)]; }
  // A mapped block as snapshot() lists it (a segment's first block, or an expandable one after
  // unmapped space, starts a segment).
  BlockInfo info(int id) const {
    const Block& b = at(id);
    return {b.address, b.size, b.allocated, b.pool == kSmall, b.prev < 0 || (b.expandable && !at(b.prev).mapped), b.expandable,
            b.allocated ? id : -1};
  }
  const Block& at(int id) const { return blocks_[static_cast<std::size_t>(id)]; }
  std::int64_t rounded_otherwise(std::int64_t bytes) const;
  int new_block(const Block& b) {  // (here, inlined into malloc's split: called, the replay ran 2 % more instructions)
    int id = static_cast<int>(blocks_.size());
    if (!unused_ids_.empty()) {
      id = unused_ids_.back();
      unused_ids_.pop_back();
      blocks_[static_cast<std::size_t>(id)] = b;
      live_[static_cast<std::size_t>(id)] = 1;
    } else {
      blocks_.push_back(b);
      live_.push_back(1);
    }
    if (b.prev < 0) segments_[static_cast<std::size_t>(b.segment)] = id;  // its segment's first block now
    return id;
  }
  void delete_block(int id);
  // Into its pool's set of free blocks (inlined where free and malloc's split call it: called,
  // the replay of a 10,000-layer step ran 4 % more instructions).
  [[gnu::always_inline]] void cache(int id) { cached_[at(id).pool].insert({at(id).size, at(id).address, id}); }
  void uncache(int id);
  Pool pool_of(std::int64_t size) const { return size <= kSmallSize ? kSmall : kLarge; }

  // malloc's and free's steps, inlined into them (cuda_allocator.cpp, the only file that calls
  // the first two): called, they made the replay of a 10,000-layer step run 12 % more
  // instructions. try_merge_blocks is merge_blocks for the expandable segments' file.
  [[gnu::always_inline]] inline int get_free_block(Pool pool, std::int64_t size);
  bool should_split(int id, std::int64_t size) const;
  [[gnu::always_inline]] inline int alloc_found_block(int id, std::int64_t size);
  [[gnu::always_inline]] inline std::int64_t merge_blocks(int dst, int src);
  std::int64_t try_merge_blocks(int dst, int src);
  int alloc_block(Pool pool, std::int64_t size, std::int64_t alloc_size);
  bool fits_capacity(std::int64_t more) const;
  void release_block(int id);
  bool release_available_cached_blocks(Pool pool, std::int64_t size);
  void release_cached_blocks();
  void add_reserved(Pool pool, std::int64_t bytes);  // negative: released

  // Expandable segments (cuda_expandable.cpp).
  std::int64_t page_size(Pool pool) const { return pool == kSmall ? kSmallBuffer : kLargeBuffer; }
  std::int64_t expandable_base(Pool pool) const;
  int try_allocate_expandable_block(Pool pool, std::int64_t size);
  int find_expandable_block(Pool pool, std::int64_t size);
  bool map_block(int id, std::int64_t size);
  void unmap_block(int id);

  CudaAllocatorConfig config_;
  bool plain_rounding_;  // no roundup_power2_divisions: every request rounds to a multiple of 512
  std::int64_t max_split_size_;
  std::vector<Block> blocks_;
  std::vector<int> unused_ids_;
  std::vector<std::uint8_t> live_;          // id -> whether blocks_[id] is a block (bytes: no bit masking)
  // Each segment's first block (-1 once the segment is released), in the order the segments
  // were made: by address, but for expandable segments, whose addresses are fixed.
  std::vector<int> segments_;
  FreeBlocks cached_[2];                    // free blocks, by size then address (BlockPool::blocks)
  std::set<AddressKey> unmapped_[2];        // expandable address space not mapped, by address
  bool expandable_open_[2] = {false, false};
  std::int64_t next_address_;
  std::int64_t allocated_ = 0, reserved_ = 0, max_allocated_ = 0, max_reserved_ = 0, reserved_small_ = 0;
  std::int64_t alloc_retries_ = 0;
  // Since the last take_changed_segments: the segments changed (and a mark per segment made),
  // and whether any was released or unmapped.
  void changed(int segment) {
    if (std::uint8_t& mark = changed_mark_[static_cast<std::size_t>(segment)]; !mark) mark = 1, changed_.push_back(segment);
  }
  int add_segment() {  // a new segment's index
    segments_.push_back(-1);
    changed_mark_.push_back(0);
    return static_cast<int>(segments_.size()) - 1;
  }
  std::vector<int> changed_;
  std::vector<std::uint8_t> changed_mark_;  // per segment made
  bool relaid_ = false;
};

template <class F>
void CudaCachingAllocator::for_each_block(F&& f) const {
  std::vector<int> firsts;
  for (const int id : segments_)
    if (id >= 0) firsts.push_back(id);
  const auto by_address = [&](int a, int b) { return at(a).address < at(b).address; };
  if (!std::is_sorted(firsts.begin(), firsts.end(), by_address)) std::sort(firsts.begin(), firsts.end(), by_address);
  for (const int first : firsts)
    for (int id = first; id >= 0; id = at(id).next)
      if (at(id).mapped) f(info(id));
}

template <class F>
void CudaCachingAllocator::for_each_placed_block(F&& f) const {
  for_each_placed_block_indexed([&](const BlockInfo& b, int, std::int64_t segment, std::int64_t place) { f(b, segment, place); });
}

template <class F>
void CudaCachingAllocator::for_each_placed_block_indexed(F&& f) const {
  std::vector<std::int64_t> base(segments_.size(), 0), rank(segments_.size(), -1);
  std::int64_t next_rank = 0;
  for (std::size_t s = 0; s < segments_.size(); ++s)  // (ordinary segments were made by address)
    if (const int first = segments_[s]; first >= 0 && !at(first).expandable) base[s] = at(first).address, rank[s] = next_rank++;
  for (std::size_t id = 0; id < blocks_.size(); ++id) {
    const Block& b = blocks_[id];
    if (!live_[id] || !b.mapped) continue;
    const auto s = static_cast<std::size_t>(b.segment);
    f(info(static_cast<int>(id)), b.segment, b.expandable ? std::int64_t{-1} : rank[s], b.expandable ? b.address : b.address - base[s]);
  }
}

template <class F>
void CudaCachingAllocator::for_each_placed_block_of(int index, F&& f) const {
  const int first = segments_[static_cast<std::size_t>(index)];
  if (first < 0) return;
  const std::int64_t base = at(first).address;
  for (int id = first; id >= 0; id = at(id).next)
    if (const Block& b = at(id); b.mapped) f(info(id), b.expandable ? b.address : b.address - base);
}

}  // namespace nnmem::detail
