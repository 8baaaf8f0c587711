// The replay's state hash (src/memory/allocator_state.hpp) is kept per segment and updated
// from the segments the allocator reports changed: after any run of requests and frees it must
// equal the hash taken afresh of every block. Random runs, in every allocator setting that
// changes what a request touches: splits under max_split_size, releases when the capacity is
// reached (which move the segments' ranks), expandable segments (mapped and unmapped).
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "../src/memory/allocator_state.hpp"

using nnmem::CudaAllocatorConfig;
using nnmem::detail::AllocatorStateHash;
using nnmem::detail::Carry;
using nnmem::detail::CudaCachingAllocator;

namespace {

// The number of updates that took the changed segments only.
int check_runs(const CudaAllocatorConfig& config, unsigned seed, int smallest_log2 = 9) {
  CudaCachingAllocator a(config);
  AllocatorStateHash kept;
  std::vector<int> live;
  std::vector<Carry> carry;  // by handle
  const auto carry_of = [&](int h) { return carry[static_cast<std::size_t>(h)]; };
  std::mt19937_64 rng(seed);
  const auto hold = [&](int h, Carry what) {
    if (carry.size() <= static_cast<std::size_t>(h)) carry.resize(static_cast<std::size_t>(h) + 1, Carry::None);
    carry[static_cast<std::size_t>(h)] = what;
  };
  // Ballast no run frees: 32 requests of 1 MiB, two to a 2 MiB segment of the small pool, so
  // that a run changes a few of many segments and the update takes the changed ones only.
  for (int i = 0; i < 32; ++i) hold(a.malloc(std::int64_t{1} << 20), Carry::Model);
  int partial = 0;
  for (int round = 0; round < 60; ++round) {
    for (int op = 0; op < 40; ++op) {
      if (live.empty() || rng() % 3 != 0) {
        // Sizes across both pools and past max_split_size: 512 B (2^smallest_log2) to 48 MiB.
        const std::int64_t bytes = std::int64_t{1} << (smallest_log2 + rng() % static_cast<unsigned>(26 - smallest_log2));
        const int h = a.malloc(bytes + static_cast<std::int64_t>(rng() % 4096));
        if (h < 0) continue;
        hold(h, rng() % 2 ? Carry::Output : Carry::Grad);
        live.push_back(h);
      } else {
        const std::size_t i = rng() % live.size();
        a.free(live[i]);
        carry[static_cast<std::size_t>(live[i])] = Carry::None;
        live[i] = live.back();
        live.pop_back();
      }
    }
    const auto h = kept.update(a, carry_of);
    AllocatorStateHash fresh;  // its first update takes every block
    CHECK(h == fresh.update(a, carry_of));
    partial += kept.took_every_block() ? 0 : 1;
  }
  return partial;
}

}  // namespace

TEST_CASE("allocator state hash: kept per segment, equal to the hash of every block after each run") {
  CudaAllocatorConfig plain;
  CudaAllocatorConfig split;
  split.max_split_size = 20 << 20;
  CudaAllocatorConfig capped = split;
  capped.capacity_bytes = std::int64_t{256} << 20;  // releases and retries, which move ranks
  CudaAllocatorConfig expandable;
  expandable.expandable_segments = true;
  CudaAllocatorConfig expandable_capped = expandable;
  expandable_capped.capacity_bytes = std::int64_t{768} << 20;  // unmapping
  for (unsigned seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    // (Where no update took part of the state, the test would compare the whole hash with itself.)
    CHECK(check_runs(plain, seed) > 0);
    CHECK(check_runs(split, seed) > 0);
    CHECK(check_runs(capped, seed) > 0);
    // An expandable segment per pool: runs of large requests only (2 MiB and up) change the large
    // pool's, and the small pool's (the ballast's) is kept.
    CHECK(check_runs(expandable, seed, 21) > 0);
    CHECK(check_runs(expandable_capped, seed, 21) > 0);
    check_runs(expandable, seed);
    check_runs(expandable_capped, seed);
  }
}
