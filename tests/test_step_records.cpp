// The step's records for the CUDA allocator replay (src/memory/step_records.hpp), against plain
// vectors of what was recorded: every block size read back exactly, narrow and widened, and every
// event, its phase and its layer, read back in order, on random sequences with empty tensors,
// out-of-order allocations and frees of blocks near and far.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "../src/memory/step_records.hpp"

using nnmem::Phase;
using nnmem::detail::BlockSizes;
using nnmem::detail::ReplaySteps;

TEST_CASE("BlockSizes reads back every size exactly, before and after it runs out of narrow ids") {
  std::mt19937_64 rng(16);
  for (const std::size_t distinct : {std::size_t{1}, std::size_t{9}, std::size_t{65'536}, std::size_t{70'000}}) {
    std::vector<std::int64_t> pool;
    for (std::size_t k = 0; k < distinct; ++k) {
      switch (k % 5) {
        case 0: pool.push_back(static_cast<std::int64_t>(4 * k)); break;                     // small
        case 1: pool.push_back((std::int64_t{1} << 31) + static_cast<std::int64_t>(k)); break;  // 2 GiB and more
        case 2: pool.push_back(std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(k)); break;
        case 3: pool.push_back(-static_cast<std::int64_t>(k)); break;  // (none is, but it must come back)
        default: pool.push_back(static_cast<std::int64_t>(rng() >> 33)); break;  // under 2 GiB
      }
    }
    BlockSizes sizes;
    std::vector<std::int64_t> want;
    for (const std::int64_t b : pool) want.push_back(b), sizes.push_back(b);  // each once, then repeated at random
    for (int k = 0; k < 200'000; ++k) {
      want.push_back(pool[static_cast<std::size_t>(rng() % pool.size())]);
      sizes.push_back(want.back());
    }
    REQUIRE(sizes.size() == want.size());
    bool same = true;
    for (std::size_t k = 0; k < want.size(); ++k) same = same && sizes[k] == want[k];
    CHECK_MESSAGE(same, distinct << " distinct sizes");
  }
}

TEST_CASE("ReplaySteps gives back each event, its block, phase and layer, in order") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    ReplaySteps steps;
    struct Step {
      int block;
      bool allocates;
    };
    struct Want {
      Step step;
      Phase phase;
      std::uint32_t layer;
    };
    std::vector<Want> want;
    std::vector<int> live;
    int next = trial % 3 == 0 ? 5 : 0;  // the first block need not be 0
    auto phase = Phase::Forward;
    std::uint32_t layer = 0;
    const int events = trial < 5 ? trial : 20'000;
    for (int e = 0; e < events; ++e) {
      if (rng() % 50 == 0) phase = static_cast<Phase>(rng() % 3);
      if (rng() % 7 == 0) layer = static_cast<std::uint32_t>(rng() % ((std::uint32_t{1} << 30) - 1));
      if (live.empty() || rng() % 2 == 0) {
        const int block = next;
        next += rng() % 10 == 0 ? 2 + static_cast<int>(rng() % 1000) : 1;  // empty tensors' ids skipped
        if (rng() % 20 == 0) {
          steps.push_back(block, 0, phase, layer);  // an empty tensor: no event
          continue;
        }
        steps.push_back(block, 1 + static_cast<std::int64_t>(rng() % 4096), phase, layer);
        want.push_back({{block, true}, phase, layer});
        live.push_back(block);
      } else {
        // the newest, the oldest or any live block
        const std::size_t k = rng() % 3 == 0 ? live.size() - 1 : rng() % 3 == 0 ? 0 : rng() % live.size();
        const int block = live[k];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        steps.push_back(block, -1, phase, layer);
        want.push_back({{block, false}, phase, layer});
      }
    }
    REQUIRE(steps.size() == want.size());
    std::size_t k = 0, wrong = 0;
    steps.for_each([&](std::size_t e, int block, bool allocates) {
      wrong += e != k || block != want[k].step.block || allocates != want[k].step.allocates ||
               steps.phase(k) != want[k].phase || steps.layer(k) != want[k].layer;
      ++k;
      return true;
    });
    CHECK(k == want.size());
    CHECK_MESSAGE(wrong == 0, "trial " << trial);
    std::size_t first_backward = want.size();
    for (std::size_t j = 0; j < want.size() && first_backward == want.size(); ++j)
      if (want[j].phase == Phase::Backward) first_backward = j;
    CHECK(steps.first_of(Phase::Backward) == first_backward);
    if (want.size() > 100) {  // f says stop: no step after it
      std::size_t seen = 0;
      CHECK_FALSE(steps.for_each([&](std::size_t, int, bool) { return ++seen < 100; }));
      CHECK(seen == 100);
    }
  }
}
