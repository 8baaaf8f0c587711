// The CUDA allocator model's sorted sets (chunked_set.hpp) against std::set, on random
// sequences of inserts, erases, searches and walks; the allocator's block walk (which the
// replay's state hash and snapshot() read) against its own totals after random requests; and
// the allocator's every decision on random requests against the rb-tree version's.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>
#include <tuple>

#include "../src/memory/chunked_set.hpp"
#include "../src/memory/cuda_allocator.hpp"
#include "allocator_digest.hpp"

using nnmem::detail::ChunkedSet;
using nnmem::detail::CudaCachingAllocator;

TEST_CASE("ChunkedSet keeps std::set's order, lower_bound, erase and walks in both directions") {
  for (const int range : {50, 5'000, 200'000}) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(range));
    ChunkedSet<std::pair<int, int>> chunked;
    std::set<std::pair<int, int>> reference;
    const auto key = [&] { return std::pair<int, int>(static_cast<int>(rng() % range), static_cast<int>(rng() % 3)); };
    for (int op = 0; op < 60'000; ++op) {
      const auto k = key();
      switch (rng() % 4) {
        case 0:
        case 1:
          REQUIRE(chunked.insert(k) == reference.insert(k).second);
          break;
        case 2: {
          // A random key, or the first (which erase(key) takes without a search).
          const auto e = rng() % 2 == 0 && !reference.empty() ? *reference.begin() : k;
          REQUIRE(chunked.erase(e) == reference.erase(e));
          break;
        }
        default: {
          // The first key not below k, then erased through the iterator (as get_free_block does).
          auto it = chunked.lower_bound(k);
          const auto ref = reference.lower_bound(k);
          REQUIRE((it == chunked.end()) == (ref == reference.end()));
          if (ref == reference.end()) break;
          REQUIRE(*it == *ref);
          if (it != chunked.begin()) REQUIRE(*std::prev(it) == *std::prev(ref));
          if (std::next(ref) != reference.end()) REQUIRE(*std::next(it) == *std::next(ref));
          chunked.erase(it);
          reference.erase(ref);
        }
      }
      REQUIRE(chunked.size() == reference.size());
    }
    CHECK(std::equal(chunked.begin(), chunked.end(), reference.begin(), reference.end()));
    // Walking down from the end while erasing what was passed (release_available_cached_blocks).
    auto it = chunked.end();
    auto ref = reference.end();
    while (it != chunked.begin()) {
      --it, --ref;
      REQUIRE(*it == *ref);
      if (rng() % 2 == 0) {
        const auto passed = *it;
        if (it == chunked.begin()) break;
        --it, --ref;
        chunked.erase(passed);
        reference.erase(passed);
        ++it, ++ref;
      }
    }
    CHECK(std::equal(chunked.begin(), chunked.end(), reference.begin(), reference.end()));
  }
}

TEST_CASE("the allocator's block walk covers every mapped byte, by address, after random requests") {
  for (const bool expandable : {false, true})
    for (const std::int64_t capacity : {std::int64_t{0}, std::int64_t{300} << 20}) {
      nnmem::CudaAllocatorConfig config;
      config.expandable_segments = expandable;
      config.capacity_bytes = capacity;
      if (capacity) config.max_split_size = std::int64_t{40} << 20;
      CudaCachingAllocator a(config);
      std::mt19937_64 rng(capacity + expandable);
      std::vector<int> held;
      for (int op = 0; op < 4'000; ++op) {
        if (held.empty() || rng() % 5 < 3) {
          const std::int64_t bytes = rng() % 4 == 0 ? 1 + static_cast<std::int64_t>(rng() % (std::int64_t{30} << 20))
                                                    : 1 + static_cast<std::int64_t>(rng() % (std::int64_t{1} << 20));
          if (const int h = a.malloc(bytes); h >= 0) held.push_back(h);
        } else {
          const std::size_t i = rng() % held.size();
          a.free(held[i]);
          held[i] = held.back();
          held.pop_back();
        }
        std::int64_t mapped = 0, allocated = 0, last = -1, handles = 0;
        for (const auto& b : a.snapshot()) {
          REQUIRE(b.address > last);
          last = b.address;
          mapped += b.size;
          if (b.allocated) allocated += b.size, ++handles;
        }
        REQUIRE(mapped == a.reserved());
        REQUIRE(allocated == a.allocated());
        REQUIRE(handles == static_cast<std::int64_t>(held.size()));
        // The walk in id order (the replay's state hash) lists the same blocks, each with its
        // ordinary segment's rank by address and its offset in it (an expandable one: its address).
        if (op % 97 != 0) continue;
        std::map<std::int64_t, std::tuple<CudaCachingAllocator::BlockInfo, std::int64_t, std::int64_t>> by_address, placed;
        std::int64_t rank = -1, base = 0;
        for (const auto& b : a.snapshot()) {
          if (b.segment_start && !b.expandable) ++rank, base = b.address;
          by_address.emplace(b.address, std::tuple(b, b.expandable ? -1 : rank, b.expandable ? b.address : b.address - base));
        }
        a.for_each_placed_block([&](const CudaCachingAllocator::BlockInfo& b, std::int64_t segment, std::int64_t place) {
          placed.emplace(b.address, std::tuple(b, segment, place));
        });
        REQUIRE(placed == by_address);
      }
    }
}

TEST_CASE("the allocator decides as the version on rb-trees and sorted snapshots did (d039e1c), in four configurations") {
  // tests/allocator_digest_of.sh d039e1c printed these; for the current sources it prints the same.
  const std::uint64_t expected[] = {0x187f1af20b250228ULL, 0x727c808454237a67ULL, 0xefa998f044d4cb13ULL, 0x71faa81e3c8c84f1ULL};
  for (int which = 0; which < 4; ++which) {
    CAPTURE(which);
    CHECK(nnmem::test::allocator_digest<CudaCachingAllocator>(which, 20000) == expected[which]);
  }
}
