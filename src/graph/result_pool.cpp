#include "result_pool.hpp"

#include <algorithm>

namespace nnmem::detail {

std::shared_ptr<const LayerResult> ResultPool::share(const LayerDef* def, LayerResult&& result) {
  if (result.backward_program) return std::make_shared<const LayerResult>(std::move(result));
  Recent& recent = recent_[def];
  const auto same = std::find_if(recent.results.begin(), recent.results.end(),
                                 [&](const std::shared_ptr<const LayerResult>& r) { return *r == result; });
  if (same != recent.results.end()) return *same;
  auto pooled = std::make_shared<const LayerResult>(std::move(result));
  if (recent.results.size() < kRecent) {
    recent.results.push_back(pooled);
  } else {
    recent.results[recent.next] = pooled;
    recent.next = (recent.next + 1) % kRecent;
  }
  return pooled;
}

}  // namespace nnmem::detail
