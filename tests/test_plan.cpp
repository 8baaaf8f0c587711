// `fit`: the largest batch whose step fits a budget, found by search, checked against direct
// estimates at that batch and the next.
#include "helpers.hpp"
#include "nnmem/plan.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
EstimateOptions on(Device device) {
  EstimateOptions o;
  o.graph.device = device;
  o.step.optimizer = OptimizerKind::Adam;
  return o;
}

std::int64_t need_at(const std::string& spec, EstimateOptions o, std::int64_t batch) {
  o.graph.batch = batch;
  return needed_bytes(estimate(load_spec_file(source_path(spec)), o));
}
}  // namespace

TEST_CASE("fit finds the largest batch: it fits, one more does not") {
  for (const Device device : {Device::Cpu, Device::Cuda}) {
    for (const std::int64_t budget : {std::int64_t{300} << 20, std::int64_t{2} << 30, std::int64_t{7} << 30}) {
      const EstimateOptions o = on(device);
      const BatchFit fit = fit_batch(load_spec_file(source_path("examples/resnet18.yaml")), o, budget);
      CAPTURE(budget);
      REQUIRE(fit.batch >= 1);
      CHECK(fit.needed_bytes == need_at("examples/resnet18.yaml", o, fit.batch));
      CHECK(fit.needed_bytes <= budget);
      CHECK(fit.next_needed_bytes == need_at("examples/resnet18.yaml", o, fit.batch + 1));
      CHECK(fit.next_needed_bytes > budget);
      CHECK(fit.estimate.options.graph.batch == fit.batch);
      CHECK(fit.estimates_made < 64);  // doubling then bisecting
    }
  }
}

TEST_CASE("fit says when not even one sample fits, and rejects an empty budget") {
  const BatchFit fit = fit_batch(load_spec_file(source_path("examples/vgg16.yaml")), on(Device::Cuda), 1000000000);
  CHECK(fit.batch == 0);
  CHECK(fit.needed_bytes > fit.budget_bytes);
  CHECK(fit.estimate.options.graph.batch == 1);
  CHECK(render_table(fit).find("Not even one sample fits") != std::string::npos);
  CHECK_THROWS_AS(fit_batch(load_spec_file(source_path("examples/vgg16.yaml")), on(Device::Cuda), 0), Error);
}

TEST_CASE("fit with a budget beyond any batch stops at the largest batch, or where sizes overflow") {
  // A tiny model: even the largest batch nnmem allows fits a huge budget.
  const std::string tiny = "inputs: {x: [1]}\nlayers:\n  - {type: Linear, out_features: 1}\n";
  const BatchFit all = fit_batch(parse_spec(tiny, "tiny.yaml"), on(Device::Cpu), std::int64_t{1} << 62);
  CHECK(all.batch == kMaxBatch);
  CHECK(all.next_needed_bytes == 0);
  // A big input: sizes overflow 64 bits long before the budget is reached; those batches
  // simply do not fit.
  const std::string wide = "inputs: {x: [1099511627776]}\nlayers:\n  - {type: ReLU}\n";
  EstimateOptions eval = on(Device::Cpu);
  eval.graph.mode = Mode::Eval;
  const BatchFit some = fit_batch(parse_spec(wide, "wide.yaml"), eval, std::numeric_limits<std::int64_t>::max());
  CHECK(some.batch >= 1);
  CHECK(some.batch < kMaxBatch);
  CHECK(render_json(some).find("\"batch\": " + std::to_string(some.batch)) != std::string::npos);
}

TEST_CASE("fit on a device of a given size: a step that runs out of memory does not fit") {
  EstimateOptions o = on(Device::Cuda);
  const std::int64_t budget = std::int64_t{2} << 30;
  o.step.allocator.capacity_bytes = budget;
  const BatchFit fit = fit_batch(load_spec_file(source_path("examples/resnet18.yaml")), o, budget);
  REQUIRE(fit.batch >= 1);
  CHECK(!fit.estimate.cuda_allocator->out_of_memory);
  CHECK(fit.needed_bytes <= budget);
  o.graph.batch = fit.batch + 1;
  const Estimate next = estimate(load_spec_file(source_path("examples/resnet18.yaml")), o);
  CHECK(fit.next_out_of_memory == next.cuda_allocator->out_of_memory);
  CHECK((next.cuda_allocator->out_of_memory || needed_bytes(next) > budget));
  CHECK(!fits(next, budget));
}
