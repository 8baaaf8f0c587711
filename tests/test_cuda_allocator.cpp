// The simulated CUDA caching allocator, against allocation sequences worked out by hand from
// PyTorch's c10/cuda/CUDACachingAllocator.cpp (2.x). Each case says, step by step, which rule of
// the source decides where a request goes; addresses are offsets from the first segment (the
// simulation gives each new segment the next address above all earlier ones).
#include <doctest/doctest.h>

#include "../src/memory/cuda_allocator.hpp"

using nnmem::CudaAllocatorConfig;
using nnmem::detail::CudaCachingAllocator;

namespace {

// The allocator's blocks as (offset from the first block, size, allocated), by address.
struct BlockLayout {
  std::int64_t offset, size;
  bool allocated;
  bool operator==(const BlockLayout&) const = default;
};
std::vector<BlockLayout> layout(const CudaCachingAllocator& a) {
  std::vector<BlockLayout> out;
  const auto blocks = a.snapshot();
  for (const auto& b : blocks) out.push_back({b.address - blocks.front().address, b.size, b.allocated});
  return out;
}
std::int64_t offset_of(const CudaCachingAllocator& a, int handle) {
  const auto blocks = a.snapshot();
  for (const auto& b : blocks)
    if (b.handle == handle) return b.address - blocks.front().address;
  FAIL("no such block");
  return -1;
}

}  // namespace

TEST_CASE("round_size: 512-byte granularity, or the next of roundup_power2_divisions' steps") {
  CudaCachingAllocator plain{CudaAllocatorConfig{}};
  CHECK(plain.round_size(1) == 512);          // size < kMinBlockSize -> kMinBlockSize
  CHECK(plain.round_size(512) == 512);
  CHECK(plain.round_size(513) == 1024);       // kMinBlockSize * ceil(size / kMinBlockSize)
  CHECK(plain.round_size(2500) == 2560);
  CHECK(plain.round_size(11 * MiB + 1) == 11 * MiB + 512);

  CudaAllocatorConfig four;
  four.roundup_power2_divisions.fill(4);
  CudaCachingAllocator quarters{four};
  // Divisions apply only when size > kMinBlockSize * divisions (2048 here): PyTorch's own
  // example, 1200 -> 1280, is of roundup_power2_next_division alone; round_size gives 1536.
  CHECK(quarters.round_size(1200) == 1536);
  // 2500 lies in [2048, 4096): steps of 512 -> 2560, the same as plain rounding.
  CHECK(quarters.round_size(2500) == 2560);
  // 5 MiB + 1 lies in [4 MiB, 8 MiB) (interval index 2): steps of 1 MiB -> 6 MiB.
  CHECK(quarters.round_size(5 * MiB + 1) == 6 * MiB);
  CHECK(quarters.round_size(4 * MiB) == 4 * MiB);  // a power of two stays

  CudaAllocatorConfig two;
  two.roundup_power2_divisions.fill(2);
  CHECK(CudaCachingAllocator{two}.round_size(2500) == 3072);  // [2048, 4096) in halves
  CHECK(CudaCachingAllocator{two}.round_size(5 * MiB + 1) == 6 * MiB);
  CHECK(CudaCachingAllocator{two}.round_size(7 * MiB) == 8 * MiB);
}

TEST_CASE("get_allocation_size: 2 MiB segments up to 1 MiB, 20 MiB up to 10 MiB, then rounded to 2 MiB") {
  CHECK(CudaCachingAllocator::allocation_size(512) == 2 * MiB);
  CHECK(CudaCachingAllocator::allocation_size(1 * MiB) == 2 * MiB);           // size <= kSmallSize
  CHECK(CudaCachingAllocator::allocation_size(1 * MiB + 512) == 20 * MiB);    // size < kMinLargeAlloc
  CHECK(CudaCachingAllocator::allocation_size(10 * MiB - 512) == 20 * MiB);
  CHECK(CudaCachingAllocator::allocation_size(10 * MiB) == 10 * MiB);          // kRoundLarge multiples
  CHECK(CudaCachingAllocator::allocation_size(11 * MiB + 512) == 12 * MiB);
}

TEST_CASE("small requests share a 2 MiB segment of the small pool") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  // 1000 -> 1024: no cached block, so a 2 MiB segment; the remainder (2 MiB - 1024 >= 512)
  // is split off and cached.
  const int x = a.malloc(1000);
  // 3000 -> 3072: best fit is that remainder, split again.
  const int y = a.malloc(3000);
  CHECK(a.reserved() == 2 * MiB);
  CHECK(a.allocated() == 1024 + 3072);
  CHECK(a.segments() == 1);
  CHECK(layout(a) == std::vector<BlockLayout>{{0, 1024, true}, {1024, 3072, true}, {4096, 2 * MiB - 4096, false}});
  CHECK(offset_of(a, x) == 0);
  CHECK(offset_of(a, y) == 1024);
}

TEST_CASE("a freed block is reused best-fit: the smallest that fits, the lowest address among equals") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  // In one small segment: 4 KiB, a 512-byte guard, 8 KiB, a guard, 4 KiB, a guard, so that
  // the three are not neighbours once freed.
  const int x1 = a.malloc(4 * KiB);
  a.malloc(512);
  const int x2 = a.malloc(8 * KiB);
  a.malloc(512);
  const int x3 = a.malloc(4 * KiB);
  a.malloc(512);
  a.free(x1), a.free(x2), a.free(x3);
  // Cached: 4 KiB at 0, 8 KiB at 4.5 KiB, 4 KiB at 13 KiB, and the segment's tail.
  const int p = a.malloc(3000);  // 3072: both 4 KiB blocks fit; the lower address wins; split
  CHECK(offset_of(a, p) == 0);
  const int q = a.malloc(4000);  // 4096: the 4 KiB at 13 KiB, exactly (the 1 KiB left at 3 KiB is too small)
  CHECK(offset_of(a, q) == 13 * KiB);
  const int r = a.malloc(6000);  // 6144: the 8 KiB block; 2 KiB remain (>= 512) and are split off
  CHECK(offset_of(a, r) == 4 * KiB + 512);
  CHECK(a.reserved() == 2 * MiB);
  CHECK(layout(a)[0] == BlockLayout{0, 3072, true});
  CHECK(layout(a)[1] == BlockLayout{3072, 1024, false});
  CHECK(layout(a)[3] == BlockLayout{4 * KiB + 512, 6144, true});
  CHECK(layout(a)[4] == BlockLayout{4 * KiB + 512 + 6144, 2048, false});
}

TEST_CASE("a 1.5 MiB request opens a 20 MiB segment; a later 9 MiB request fits in its remainder") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  // 1.5 MiB > kSmallSize: the large pool; < kMinLargeAlloc: a kLargeBuffer (20 MiB) segment,
  // split since 18.5 MiB remain (> kSmallSize).
  const int x = a.malloc(3 * MiB / 2);
  CHECK(a.reserved() == 20 * MiB);
  // 9 MiB: best fit is the 18.5 MiB remainder; 9.5 MiB remain, split off.
  const int y = a.malloc(9 * MiB);
  CHECK(a.reserved() == 20 * MiB);
  CHECK(a.segments() == 1);
  CHECK(offset_of(a, x) == 0);
  CHECK(offset_of(a, y) == 3 * MiB / 2);
  CHECK(a.allocated() == 21 * MiB / 2);
  // 9.2 MiB: the 9.5 MiB block fits, and 0.3 MiB left is not > 1 MiB, so the whole block is
  // handed out: memory_allocated() counts 9.5 MiB, not 9.2.
  a.malloc(9 * MiB + MiB / 5);
  CHECK(a.allocated() == 20 * MiB);
  CHECK(a.max_allocated() == 20 * MiB);
  // Nothing is left cached: another 1.5 MiB needs a second 20 MiB segment.
  a.malloc(3 * MiB / 2);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.segments() == 2);
}

TEST_CASE("a large request gets a segment rounded up to 2 MiB, split only if more than 1 MiB remains") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  // 11 MiB + 1 -> 11 MiB + 512 -> a 12 MiB segment; 1 MiB - 512 remain: not split.
  const int x = a.malloc(11 * MiB + 1);
  CHECK(a.reserved() == 12 * MiB);
  CHECK(a.allocated() == 12 * MiB);
  CHECK(layout(a) == std::vector<BlockLayout>{{0, 12 * MiB, true}});
  a.free(x);
  // 10.5 MiB: the cached 12 MiB block fits; 1.5 MiB remain (> 1 MiB): split.
  const int y = a.malloc(21 * MiB / 2);
  CHECK(a.reserved() == 12 * MiB);
  CHECK(a.allocated() == 21 * MiB / 2);
  CHECK(layout(a) == std::vector<BlockLayout>{{0, 21 * MiB / 2, true}, {21 * MiB / 2, 3 * MiB / 2, false}});
  CHECK(offset_of(a, y) == 0);
}

TEST_CASE("should_split's edges: a large-pool remainder must exceed 1 MiB, a small-pool one be 512 bytes or more") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  // 19 MiB (>= kMinLargeAlloc) -> a 20 MiB segment; exactly 1 MiB remains: not > kSmallSize,
  // so the whole segment is the block.
  a.malloc(19 * MiB);
  CHECK(a.allocated() == 20 * MiB);
  CHECK(layout(a).size() == 1);
  // The small pool: 1 MiB, then 1 MiB - 512 from the 1 MiB remainder; exactly 512 bytes remain,
  // >= kMinBlockSize, so they are split off, and a 512-byte request later takes them.
  CudaCachingAllocator b{CudaAllocatorConfig{}};
  b.malloc(1 * MiB), b.malloc(1 * MiB - 512);
  CHECK(b.allocated() == 2 * MiB - 512);
  CHECK(layout(b).back() == BlockLayout{2 * MiB - 512, 512, false});
  b.malloc(100);
  CHECK(b.reserved() == 2 * MiB);
  CHECK(b.allocated() == 2 * MiB);
}

TEST_CASE("freed neighbours merge back into one block; the segment stays reserved") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  // Three 2 MiB requests carve one 20 MiB segment: [a 2][b 2][c 2][14 free].
  const int x = a.malloc(2 * MiB), y = a.malloc(2 * MiB), z = a.malloc(2 * MiB);
  CHECK(layout(a).size() == 4);
  a.free(x);  // its neighbour y is allocated: cached alone
  CHECK(layout(a) == std::vector<BlockLayout>{{0, 2 * MiB, false}, {2 * MiB, 2 * MiB, true}, {4 * MiB, 2 * MiB, true},
                                         {6 * MiB, 14 * MiB, false}});
  a.free(z);  // merges with the free tail: 16 MiB
  CHECK(layout(a).back() == BlockLayout{4 * MiB, 16 * MiB, false});
  a.free(y);  // merges with both: the whole segment, one block, still held
  CHECK(layout(a) == std::vector<BlockLayout>{{0, 20 * MiB, false}});
  CHECK(a.reserved() == 20 * MiB);
  CHECK(a.allocated() == 0);
  CHECK(a.max_allocated() == 6 * MiB);
}

TEST_CASE("max_split_size: oversize blocks are not split, nor used for smaller requests") {
  CudaAllocatorConfig config;
  config.max_split_size = 40 * MiB;
  CudaCachingAllocator a{config};
  a.free(a.malloc(50 * MiB));  // a 50 MiB segment, cached: oversize (>= 40 MiB)
  // 30 MiB < max_split_size, and the best fit (50 MiB) is oversize: refused, a new segment.
  const int x = a.malloc(30 * MiB);
  CHECK(a.reserved() == 80 * MiB);
  a.free(x);
  // 45 MiB >= max_split_size may take an oversize block less than 20 MiB larger: the 50 MiB
  // one, whole (never split for a request >= max_split_size).
  const int y = a.malloc(45 * MiB);
  CHECK(a.reserved() == 80 * MiB);
  CHECK(a.allocated() == 50 * MiB);
  a.free(y);
  a.free(a.malloc(60 * MiB));  // no cached block fits: a 60 MiB segment, cached
  // 40 MiB: the 50 MiB block fits (50 < 40 + 20); the 60 MiB one would not (60 >= 40 + 20).
  a.malloc(40 * MiB);
  CHECK(a.allocated() == 50 * MiB);
  CHECK(a.reserved() == 140 * MiB);

  // PyTorch's default (no max_split_size): the 30 MiB request splits the cached 50 MiB block.
  CudaCachingAllocator b{CudaAllocatorConfig{}};
  b.free(b.malloc(50 * MiB));
  b.malloc(30 * MiB);
  CHECK(b.reserved() == 50 * MiB);
  CHECK(layout(b) == std::vector<BlockLayout>{{0, 30 * MiB, true}, {30 * MiB, 20 * MiB, false}});
}

TEST_CASE("at the capacity, cached unsplit segments are released and the request retried") {
  CudaAllocatorConfig config;
  config.capacity_bytes = 44 * MiB;
  CudaCachingAllocator a{config};
  // x opens a 20 MiB segment; y splits its remainder; y freed merges back into an 18 MiB block,
  // but the segment stays split (x lives in it).
  const int x = a.malloc(2 * MiB);
  a.free(a.malloc(4 * MiB));
  // 30 MiB: nothing cached fits; 20 + 30 > 44; release_cached_blocks frees only unsplit
  // segments (none), the retry fails: out of memory.
  CHECK(a.malloc(30 * MiB) == -1);
  CHECK(a.reserved() == 20 * MiB);
  CHECK(a.alloc_retries() == 1);
  // With x freed the segment is one unsplit cached block: released, and the retry succeeds.
  a.free(x);
  CHECK(a.malloc(30 * MiB) >= 0);
  CHECK(a.reserved() == 30 * MiB);
  CHECK(a.max_reserved() == 30 * MiB);  // the 20 MiB went before the 30 MiB came
  CHECK(a.segments() == 1);
  CHECK(a.alloc_retries() == 2);
}

TEST_CASE("with max_split_size, an out-of-memory retry first frees one oversize block large enough") {
  CudaAllocatorConfig config;
  config.max_split_size = 40 * MiB;
  config.capacity_bytes = 100 * MiB;
  CudaCachingAllocator a{config};
  const int x = a.malloc(50 * MiB), y = a.malloc(45 * MiB);
  a.free(x), a.free(y);  // cached: 45 and 50 MiB segments, both oversize
  // 30 MiB: the cached blocks are oversize, refused; 95 + 30 > 100. release_available_cached_
  // blocks frees the smallest oversize block >= max(30, 40) MiB, the 45 MiB one; the retry fits.
  CHECK(a.malloc(30 * MiB) >= 0);
  CHECK(a.reserved() == 80 * MiB);
  CHECK(layout(a).front() == BlockLayout{0, 50 * MiB, false});  // the 50 MiB segment is still cached
  CHECK(a.alloc_retries() == 0);  // freeing one oversize block was enough: no full release
}

TEST_CASE("requests of 1 EiB or more run out of memory at once") {
  CudaCachingAllocator a{CudaAllocatorConfig{}};
  CHECK(a.malloc(std::int64_t{1} << 60) == -1);
  CHECK(a.reserved() == 0);
}

TEST_CASE("expandable segments: one segment per pool, mapped in pages as requests need them") {
  CudaAllocatorConfig config;
  config.expandable_segments = true;
  CudaCachingAllocator a{config};
  // 1.5 MiB: the large pool's segment maps one 20 MiB page; the block is split (with
  // expandable segments any remainder >= 512 is).
  const int x = a.malloc(3 * MiB / 2);
  CHECK(a.reserved() == 20 * MiB);
  // 30 MiB: the 18.5 MiB free block runs on into unmapped space; 11.5 MiB more are needed:
  // one more page, which merges with it into 38.5 MiB, split for the request.
  const int y = a.malloc(30 * MiB);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.segments() == 1);  // one contiguous mapped range (without expandable segments: 50 MiB in 2)
  CHECK(offset_of(a, y) == 3 * MiB / 2);
  CHECK(layout(a) == std::vector<BlockLayout>{{0, 3 * MiB / 2, true}, {3 * MiB / 2, 30 * MiB, true},
                                         {63 * MiB / 2, 17 * MiB / 2, false}});
  // The small pool has its own segment, in 2 MiB pages.
  a.malloc(1000);
  CHECK(a.reserved() == 42 * MiB);
  CHECK(a.segments() == 2);
  a.free(x);

  CudaCachingAllocator plain{CudaAllocatorConfig{}};
  plain.malloc(3 * MiB / 2), plain.malloc(30 * MiB);
  CHECK(plain.reserved() == 50 * MiB);
  CHECK(plain.segments() == 2);
}

TEST_CASE("expandable segments at the capacity: free whole pages are unmapped, then the request retried") {
  CudaAllocatorConfig config;
  config.expandable_segments = true;
  config.capacity_bytes = 80 * MiB;
  CudaCachingAllocator a{config};
  // [x 1.5][y 40][z 1.5][17 free] over three mapped pages (60 MiB).
  a.malloc(3 * MiB / 2);
  const int y = a.malloc(40 * MiB);
  a.malloc(3 * MiB / 2);
  CHECK(a.reserved() == 60 * MiB);
  a.free(y);  // a hole [1.5, 41.5) MiB, which holds the whole page [20, 40)
  // 45 MiB: no free block is that large; the tail (17 MiB free + unmapped space) needs 28 MiB
  // more, two pages: 60 + 40 > 80. release_cached_blocks unmaps the hole's whole page
  // (reserved 40); the hole no longer has room (18.5 + unmapped 20 + 1.5 < 45), the tail does,
  // and 40 + 40 <= 80.
  const int w = a.malloc(45 * MiB);
  CHECK(w >= 0);
  CHECK(a.reserved() == 80 * MiB);
  CHECK(a.max_reserved() == 80 * MiB);
  CHECK(offset_of(a, w) == 43 * MiB);
  CHECK(a.segments() == 2);  // mapped: [0, 20) and [40, 100) MiB
}

TEST_CASE("settings PyTorch refuses are refused") {
  CudaAllocatorConfig small_split;
  small_split.max_split_size = 19 * MiB;
  CHECK(CudaCachingAllocator::problem(small_split).find("at least 20 MiB") != std::string::npos);
  CHECK_THROWS_AS(CudaCachingAllocator{small_split}, std::invalid_argument);
  CudaAllocatorConfig three;
  three.roundup_power2_divisions[3] = 3;
  CHECK(CudaCachingAllocator::problem(three).find("power of two") != std::string::npos);
  CHECK(CudaCachingAllocator::problem(CudaAllocatorConfig{}).empty());
}
