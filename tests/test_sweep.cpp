// Sweeps: the grid's values, each point the estimate it names, and the least-squares formula
// that reproduces every point within its largest residual.
#include <cmath>

#include "helpers.hpp"
#include "nnmem/plan.hpp"
#include "nnmem/sweep.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("sweep values: lists, doubling ranges, stepped ranges") {
  const SourceLoc at{"--vary", 0, 0};
  CHECK(parse_sweep_values("1,2,4..512", at) == std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64", "128", "256", "512"});
  CHECK(parse_sweep_values("8..32+8", at) == std::vector<std::string>{"8", "16", "24", "32"});
  CHECK(parse_sweep_values("3..5", at) == std::vector<std::string>{"3"});
  CHECK(parse_sweep_values("512,1024,0.5", at) == std::vector<std::string>{"512", "1024", "0.5"});
  CHECK_THROWS_WITH_AS(parse_sweep_values("8..2", at), doctest::Contains("'8..2': expected A..B"), Error);
  CHECK_THROWS_WITH_AS(parse_sweep_values("1,,2", at), doctest::Contains("an empty value"), Error);
  CHECK_THROWS_WITH_AS(parse_sweep_values("1..100000+1", at), doctest::Contains("more than 10,000 values"), Error);
}

TEST_CASE("a sweep of too many points is refused before its grid is made") {
  const auto load = [](const LoadOptions& o) { return load_spec_file(source_path("examples/mlp.yaml"), o); };
  std::vector<std::string> many;
  for (int i = 1; i <= 10000; ++i) many.push_back(std::to_string(i));
  // 10^8 points: their grid was 3.4 GB before it was refused.
  CHECK_THROWS_WITH_AS(sweep(load, {}, {{"batch", many}, {"hidden", many}}, {}),
                       doctest::Contains("the sweep has 100,000,000 points; nnmem estimates at most 10,000"), Error);
  // 10^20: more than the count holds.
  CHECK_THROWS_WITH_AS(sweep(load, {}, {{"batch", many}, {"hidden", many}, {"a", many}, {"b", many}, {"c", many}}, {}),
                       doctest::Contains("the sweep has more than 9,223,372,036,854,775,807 points"), Error);
  CHECK_THROWS_WITH_AS(sweep(load, {}, {{"batch", many}, {"hidden", {"8", "16"}}}, {}),
                       doctest::Contains("the sweep has 20,000 points"), Error);
}

TEST_CASE("the polynomial fit recovers an exact formula, and says how far the rounded one is") {
  // 3 GiB + 5,000 x batch + 7 x seq_len^2 x batch + 11 x seq_len: attention's shape.
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (double b : {1, 2, 4, 8})
    for (double s : {128, 256, 512}) {
      x.push_back({b, s});
      y.push_back(3.0 * (1 << 30) + 5000 * b + 7 * s * s * b + 11 * s);
    }
  const auto f = fit_polynomial({"batch", "seq_len"}, x, y);
  REQUIRE(f);
  CHECK(f->terms.size() == 6);  // 1, s, s², b, b·s, b·s²
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(f->at(x[i]) - y[i]) <= f->max_residual);
  CHECK(f->max_residual < 1.0);
  CHECK(f->largest_batch(4LL << 30, {0, 512}) == static_cast<std::int64_t>((1.0 * (1 << 30) - 11 * 512) / (5000 + 7 * 512.0 * 512)));
  CHECK(fit_polynomial({"batch"}, {{1}}, {5})->terms.size() == 1);  // one point: a constant
  CHECK(fit_polynomial({"batch", "seq_len"}, {{1, 1}, {2, 2}}, {1, 2}).has_value() == false);  // 2 points, 4 terms
}

TEST_CASE("a sweep estimates every point as estimate() does, and its formula reproduces them within the residual") {
  const auto load = [](const LoadOptions& o) { return load_spec_file(source_path("examples/mlp.yaml"), o); };
  EstimateOptions options;
  const Sweep s = sweep(load, {}, {{"hidden", {"64", "128", "256"}}, {"batch", {"1", "8", "64"}}}, options);
  REQUIRE(s.points.size() == 9);
  CHECK(s.points[4].values == std::vector<std::string>{"128", "8"});
  LoadOptions set;
  set.overrides = {{"hidden", "128"}};
  options.graph.batch = 8;
  const Estimate e = estimate(load(set), options);
  CHECK(s.points[4].totals.peak_bytes == e.totals.peak_bytes);
  CHECK(s.points[4].needed_bytes == needed_bytes(e));
  REQUIRE(s.fit);
  for (const auto& p : s.points)
    CHECK(std::fabs(s.fit->at({std::stod(p.values[0]), std::stod(p.values[1])}) - static_cast<double>(p.totals.peak_bytes)) <=
          s.fit->max_residual);
  // A point that fails names itself.
  try {
    sweep(load, {}, {{"hidden", {"64", "-1"}}}, {});
    FAIL("hidden=-1 must fail");
  } catch (const Error& e) {
    CHECK(e.format().find("out_features must be at least 1, found -1") != std::string::npos);
    CHECK(e.format().find("note: at the sweep's point hidden=-1") != std::string::npos);
  }
}
