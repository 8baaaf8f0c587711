// One copy of each distinct layer result: the instances of a repeated block get equal results
// from their rules, and a 100,000-layer model's nodes share a handful instead of holding
// 100,000 (each with its outputs', parameters' and saved tensors' vectors).
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "nnmem/layer.hpp"

namespace nnmem::detail {

class ResultPool {
 public:
  /// The pooled result equal to `result`, else `result` itself, now pooled. A result with a
  /// backward program is never shared (a program is code, it compares equal to nothing).
  std::shared_ptr<const LayerResult> share(const LayerDef* def, LayerResult&& result);

 private:
  static constexpr std::size_t kRecent = 8;  // distinct results remembered per layer type
  struct Recent {
    std::vector<std::shared_ptr<const LayerResult>> results;
    std::size_t next = 0;  // the one a new result replaces once there are kRecent
  };
  std::unordered_map<const LayerDef*, Recent> recent_;
};

}  // namespace nnmem::detail
