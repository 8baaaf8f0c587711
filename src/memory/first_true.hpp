// The first of n independent tests that passes, the tests run on several threads at once: what
// fit does with the batches below its bound (each one's check a replay of the step through the
// CUDA allocator model, independent of the others'). The answer, and which tests were run below
// it, are those of the loop that runs them one after another: every test before the answer is
// run (some after it may be too, and their results are ignored), and an exception is rethrown
// where that loop would have met it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace nnmem::detail {

/// The smallest i in [0, n) with test(i) true, n if none; test(i) for each i below it. `test`
/// must be safe to call from several threads at once (for different i).
template <class Test>
std::size_t first_true(std::size_t n, unsigned threads, Test&& test) {
  threads = static_cast<unsigned>(std::min<std::size_t>(std::max(threads, 1U), n));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i)
      if (test(i)) return i;
    return n;
  }
  std::atomic<std::size_t> next{0}, answer{n};  // answer: the smallest i known to pass or throw
  std::vector<std::exception_ptr> failed(n);
  const auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < answer.load();) {
      bool stop = false;
      try {
        stop = test(i);
      } catch (...) {
        failed[i] = std::current_exception();
        stop = true;
      }
      for (std::size_t known = answer.load(); stop && i < known && !answer.compare_exchange_weak(known, i);) {
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }  // joined
  const std::size_t i = answer.load();
  if (i < n && failed[i]) std::rethrow_exception(failed[i]);
  return i;
}

}  // namespace nnmem::detail
