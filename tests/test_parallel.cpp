// The parallel stage: DDP's gradient buckets (what test_step.cpp checks on the measured runs is
// their sizes one by one and every rank's peak; here, the rules behind them), and the published
// estimators nnmem reproduces under --convention deepspeed and megatron.
#include "helpers.hpp"
#include "nnmem/parallel.hpp"
#include "nnmem/plan.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// Three Linear layers and a BatchNorm1d between them; the middle one frozen when asked.
std::string mlp(bool frozen_middle) {
  return std::string(R"(
inputs: {x: [256]}
layers:
  - {name: a, type: Linear, out_features: 512}
  - {name: bn, type: BatchNorm1d}
  - {name: b, type: Linear, out_features: 512)") +
         (frozen_middle ? ", trainable: false" : "") + R"(}
  - {name: c, type: Linear, out_features: 10}
loss: cross_entropy
)";
}

GraphOptions batch(const char* torch = "2.13") {
  GraphOptions o;
  o.batch = 8;
  o.torch = find_torch_profile(torch);
  return o;
}

std::vector<std::int64_t> sizes(const std::vector<DdpBucket>& buckets) {
  std::vector<std::int64_t> out;
  for (const auto& b : buckets) out.push_back(b.bytes);
  return out;
}

}  // namespace

TEST_CASE("DDP's buckets: gradients in the order they become ready, a bucket closed once it reaches its cap") {
  const Graph g = graph_from(mlp(false), batch());
  // All in one bucket: the caps are above the 1,588,264 bytes of gradients.
  auto one = ddp_buckets(g, std::int64_t{1} << 20, 25 << 20);
  REQUIRE(one.size() == 2);  // the first cap (1 MiB) closes the first bucket at b.weight
  CHECK(one[0].params == std::vector<std::string>{"c.bias", "c.weight", "b.bias", "b.weight"});
  CHECK(one[1].params == std::vector<std::string>{"bn.weight", "bn.bias", "a.bias", "a.weight"});
  CHECK(sizes(one) == std::vector<std::int64_t>{40 + 20480 + 2048 + 1048576, 2048 + 2048 + 2048 + 524288});
  // A bucket may pass its cap by its last gradient, never by two.
  const auto small = ddp_buckets(g, 30000, 30000);
  CHECK(sizes(small) == std::vector<std::int64_t>{40 + 20480 + 2048 + 1048576, 2048 + 2048 + 2048 + 524288});
  const auto tiny = ddp_buckets(g, 100, 4000);
  CHECK(sizes(tiny) == std::vector<std::int64_t>{40 + 20480, 2048 + 1048576, 2048 + 2048, 2048 + 524288});
}

TEST_CASE("DDP's buckets hold a tied parameter once, ready at its owner") {
  const std::string spec = "name: t\ninputs:\n  ids: {shape: [8], dtype: int64}\nlayers:\n"
                           "  - {name: wte, type: Embedding, num_embeddings: 100, embedding_dim: 16}\n"
                           "  - {name: fc, type: Linear, out_features: 16}\n"
                           "  - {name: head, type: Linear, out_features: 100, bias: false, tie: {weight: wte.weight}}\n";
  const Graph g = graph_from(spec, batch());
  const auto buckets = ddp_buckets(g, std::int64_t{1} << 20, 25 << 20);
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].params == std::vector<std::string>{"fc.bias", "fc.weight", "wte.weight"});
  CHECK(buckets[0].bytes == 4 * (16 + 16 * 16 + 100 * 16));
}

TEST_CASE("DDP's buckets leave out frozen parameters, and add one copy of the trainable gradients to each rank's peak") {
  const Graph g = graph_from(mlp(true), batch());
  const auto buckets = ddp_buckets(g, std::int64_t{1} << 20, 25 << 20);
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].params == std::vector<std::string>{"c.bias", "c.weight", "bn.weight", "bn.bias", "a.bias", "a.weight"});

  EstimateOptions o;
  o.graph.device = Device::Cpu;
  o.graph.batch = 8;
  const Estimate single = estimate_from(mlp(true), o);
  ParallelOptions p;
  p.gpus = 4;
  p.nodes = 2;
  o.step.plan_parallel = ddp_planner(p);
  const Estimate rank = estimate_from(mlp(true), o);
  CHECK(rank.options.step.parallel.strategy == "ddp");
  CHECK(rank.options.step.parallel.world_size == 8);
  CHECK(rank.totals.grad_bytes == single.totals.grad_bytes);
  CHECK(rank.totals.peak_bytes == single.totals.peak_bytes + buckets[0].bytes);
  CHECK(rank.totals.peak_breakdown[static_cast<std::size_t>(MemoryKind::CommBuffers)] == buckets[0].bytes);
  // One GPU: no DDP, nothing added.
  CHECK_FALSE(ddp_planner(ParallelOptions{}));
}

TEST_CASE("DDP's first bucket: 1 MiB under 1.13 whatever --bucket-cap-mb says, the cap itself under 2.x") {
  ParallelOptions p;
  p.gpus = 2;
  p.bucket_cap_mb = 0.01;  // int(0.01 * 2^20) = 10,485 bytes
  const Graph old = graph_from(mlp(false), batch("1.13"));
  const DataParallelStep s1 = ddp_step(old, p, *old.options.torch);
  CHECK(s1.bucket_cap_bytes == 10485);
  REQUIRE(s1.buffers.size() == 2);
  CHECK(s1.buffers[0].bytes == 40 + 20480 + 2048 + 1048576);
  CHECK(s1.buffers[1].bytes == 2048 + 2048 + 2048 + 524288);
  const Graph now = graph_from(mlp(false), batch("2.13"));
  const DataParallelStep s2 = ddp_step(now, p, *now.options.torch);
  REQUIRE(s2.buffers.size() == 3);
  CHECK(s2.buffers[0].bytes == 40 + 20480);
  CHECK(s2.buffers[1].bytes == 2048 + 1048576);
  CHECK(s2.buffers[2].bytes == 2048 + 2048 + 2048 + 524288);
  // Without --bucket-cap-mb both take DDP's default: 25 MiB, the first bucket 1 MiB.
  p.bucket_cap_mb.reset();
  CHECK(ddp_step(now, p, *now.options.torch).buffers.size() == 2);
  CHECK(ddp_step(now, p, *now.options.torch).bucket_cap_bytes == 25 << 20);
}

TEST_CASE("fit with DDP: every batch it tries is estimated with the buckets of that rank's model") {
  for (const Device device : {Device::Cpu, Device::Cuda}) {
    EstimateOptions o;
    o.graph.device = device;
    ParallelOptions p;
    p.gpus = 4;
    p.bucket_cap_mb = 0.5;
    o.step.plan_parallel = ddp_planner(p);
    FitOptions f;
    f.budget_bytes = 64 << 20;
    const ModelSpec spec = load_spec_file(source_path("examples/resblock_mlp.yaml"));
    const BatchFit fit = fit_batch(spec, o, f);
    REQUIRE(fit.batch > 0);
    REQUIRE(fit.estimate);
    CHECK(fit.estimate->options.step.parallel.buffers.size() == 4);  // 0.5 MiB buckets of 1,717,288 bytes
    CHECK(fit.estimate->totals.peak_breakdown[static_cast<std::size_t>(MemoryKind::CommBuffers)] == 1'717'288);
    EstimateOptions at = o;
    at.graph.batch = fit.batch + 1;
    CHECK(needed_bytes(estimate(spec, at)) > f.budget_bytes);
    at.graph.batch = fit.batch;
    CHECK(needed_bytes(estimate(spec, at)) <= f.budget_bytes);
  }
}
