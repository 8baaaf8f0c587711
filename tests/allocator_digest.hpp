// A digest of what the simulated CUDA caching allocator does with a seeded random sequence of
// requests and frees: every handle, the reserved, allocated and peak figures after each
// operation, and its blocks (snapshot()) and segments every 64 operations. Written against the
// allocator's public interface only, so that allocator_digest_of.sh can compile it against an
// earlier version of src/memory/ and give the digests test_chunked_set.cpp expects: a change of
// the allocator's data structures must not change one decision.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace nnmem::test {

// The configurations digested: plain; expandable segments; a 300 MiB device with
// max_split_size 40 MiB (releases, oversize blocks); roundup_power2_divisions of 4 everywhere.
inline CudaAllocatorConfig digest_config(int which) {
  CudaAllocatorConfig c;
  if (which == 1) c.expandable_segments = true;
  if (which == 2) c.capacity_bytes = std::int64_t{300} << 20, c.max_split_size = std::int64_t{40} << 20;
  if (which == 3) c.roundup_power2_divisions.fill(4);
  return c;
}

template <class Allocator>
std::uint64_t allocator_digest(int which, int operations) {
  Allocator a(digest_config(which));
  std::mt19937_64 rng(static_cast<std::uint64_t>(which) * 7919 + 17);
  std::uint64_t digest = 0xcbf29ce484222325ULL;
  const auto fold = [&](std::int64_t v) {
    digest ^= static_cast<std::uint64_t>(v);
    digest *= 0x100000001b3ULL;
    digest ^= digest >> 29;
  };
  std::vector<int> held;
  for (int op = 0; op < operations; ++op) {
    if (held.empty() || rng() % 5 < 3) {
      // Mostly small-pool sizes (a few of them repeating, as a network's are), some large.
      const std::uint64_t kind = rng() % 8;
      const std::int64_t bytes = kind < 3   ? std::int64_t{1} << (9 + rng() % 11)
                                 : kind < 6 ? 1 + static_cast<std::int64_t>(rng() % (std::int64_t{1} << 20))
                                            : 1 + static_cast<std::int64_t>(rng() % (std::int64_t{48} << 20));
      const int h = a.malloc(bytes);
      fold(h);
      if (h >= 0) held.push_back(h);
    } else {
      const std::size_t i = rng() % held.size();
      a.free(held[i]);
      held[i] = held.back();
      held.pop_back();
    }
    fold(a.reserved()), fold(a.allocated()), fold(a.max_reserved()), fold(a.alloc_retries());
    if (op % 64 == 0) {
      fold(a.segments());
      for (const auto& b : a.snapshot()) fold(b.address), fold(b.size), fold(b.allocated), fold(b.handle);
    }
  }
  return digest;
}

}  // namespace nnmem::test
