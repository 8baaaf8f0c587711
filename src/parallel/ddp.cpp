// DistributedDataParallel's gradient buckets (torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size) as allocations of each rank's step.
#include <algorithm>
#include <cmath>
#include <map>

#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kDefaultCapBytes = 25 * kMiB;       // bucket_cap_mb=25
constexpr std::int64_t kDefaultFirstBucketBytes = kMiB;    // dist._DEFAULT_FIRST_BUCKET_BYTES

struct Ready {
  std::string name;
  std::int64_t bytes;
  DType dtype;
};

// The trainable parameters in the order the first backward makes their gradients ready. A tied
// or shared parameter is one tensor with one AccumulateGrad, ready once every use has added its
// gradient: at its owner, the first layer that uses it.
std::vector<Ready> ready_order(const Graph& graph) {
  std::vector<Ready> out;
  for (std::size_t i = graph.nodes.size(); i-- > 0;) {
    const Node* n = &graph.nodes[i];
    if (!n->trainable || n->result->params.empty()) continue;
    const std::string& layer = graph.layer(*n).name;
    std::vector<Ready> own;
    for (std::size_t k = 0; k < n->result->params.size(); ++k) {
      const ParamDecl& p = n->result->params[k];
      if (k < n->params.size() && graph.parameters[static_cast<std::size_t>(n->params[k])].owner != static_cast<int>(i)) continue;
      own.push_back({layer + "." + p.name, TensorType{p.shape, p.dtype}.bytes(), p.dtype});
    }
    // addmm's bias is ready before its weight, Linear's and transformers' Conv1D's alike
    // (validation/probe_transformer_ops.py --ready-order).
    if (graph.layer(*n).type == "Linear" || graph.layer(*n).type == "Conv1D") std::reverse(own.begin(), own.end());
    out.insert(out.end(), own.begin(), own.end());
  }
  return out;
}

}  // namespace

std::int64_t ParallelOptions::world_size() const { return checked_mul(gpus, nodes); }

std::vector<DdpBucket> ddp_buckets(const Graph& graph, std::int64_t first_cap_bytes, std::int64_t cap_bytes) {
  struct Open {
    DdpBucket bucket;
    std::size_t closed = 0;  // buckets of this dtype closed so far: the next one's cap
  };
  std::map<DType, Open> open;
  std::vector<DType> order;  // dtypes in the order they first appear
  std::vector<DdpBucket> out;
  for (const Ready& r : ready_order(graph)) {
    auto [it, fresh] = open.try_emplace(r.dtype);
    if (fresh) order.push_back(r.dtype);
    Open& o = it->second;
    o.bucket.dtype = r.dtype;
    o.bucket.params.push_back(r.name);
    o.bucket.bytes = checked_add(o.bucket.bytes, r.bytes);
    if (o.bucket.bytes >= (o.closed == 0 ? first_cap_bytes : cap_bytes)) {
      out.push_back(std::move(o.bucket));
      o.bucket = {};
      ++o.closed;
    }
  }
  for (DType d : order)
    if (!open[d].bucket.params.empty()) out.push_back(std::move(open[d].bucket));
  return out;
}

DataParallelStep ddp_step(const Graph& graph, const ParallelOptions& options, const TorchProfile& torch) {
  DataParallelStep step;
  step.world_size = options.world_size();
  step.nodes = options.nodes;
  if (step.world_size <= 1) return step;
  step.strategy = "ddp";
  // int(bucket_cap_mb * 1024 * 1024), as DDP sizes it.
  std::int64_t cap = kDefaultCapBytes;
  if (options.bucket_cap_mb) {
    const double bytes = std::floor(*options.bucket_cap_mb * static_cast<double>(kMiB));
    if (!(bytes >= 1.0) || bytes > 9.0e18) throw Error(SourceLoc{}, "--bucket-cap-mb: expected a size of at least one byte");
    cap = static_cast<std::int64_t>(bytes);
  }
  step.bucket_cap_bytes = cap;
  const std::int64_t first = options.bucket_cap_mb && torch.ddp_first_bucket_follows_cap ? cap : kDefaultFirstBucketBytes;
  const std::vector<DdpBucket> buckets = ddp_buckets(graph, first, cap);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const DdpBucket& b = buckets[i];
    std::string what = "DDP gradient bucket " + std::to_string(i) + " (" + b.params.front();
    if (b.params.size() > 1) what += " … " + b.params.back();
    step.buffers.push_back({what + ")", b.bytes});
  }
  return step;
}

std::function<DataParallelStep(const Graph&)> ddp_planner(const ParallelOptions& options) {
  if (options.world_size() <= 1) return {};
  return [options](const Graph& graph) { return ddp_step(graph, options, *graph.options.torch); };
}

}  // namespace nnmem
