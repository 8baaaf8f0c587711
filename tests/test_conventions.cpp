// The published estimators nnmem reproduces: DeepSpeed's ZeRO-2 and ZeRO-3 model-state figures
// against what DeepSpeed's own functions return (validation/deepspeed_estimates.py ran them on the
// validation networks: validation/deepspeed_estimates.json), and Megatron-LM's theoretical memory
// figures with Korthikanti et al.'s activation formulas.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "nnmem/parallel.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("--convention deepspeed: DeepSpeed's ZeRO-2 and ZeRO-3 estimates, exactly, for 4 models x 6 GPU setups") {
  const nlohmann::json ds = nlohmann::json::parse(std::ifstream(source_path("validation/deepspeed_estimates.json")));
  std::size_t checked = 0;
  for (const auto& m : ds["models"]) {
    const std::string network = m["network"];
    CAPTURE(network);
    const Estimate e = estimate_file("examples/" + network + ".yaml");
    std::map<std::pair<std::int64_t, std::int64_t>, DeepSpeedConvention> by_setup;
    const auto convention = [&](std::int64_t gpus, std::int64_t nodes) -> const DeepSpeedConvention& {
      auto it = by_setup.find({gpus, nodes});
      if (it != by_setup.end()) return it->second;
      ParallelOptions p;
      p.gpus = gpus;
      p.nodes = nodes;
      return by_setup[{gpus, nodes}] = deepspeed_convention(e, p);
    };
    const DeepSpeedConvention& one = convention(1, 1);
    CHECK(one.total_params == m["total_params"].get<std::int64_t>());
    CHECK(one.largest_layer_params == m["largest_layer_params"].get<std::int64_t>());
    for (const char* stage : {"zero2", "zero3"})
      for (const auto& want : m[stage]) {
        const std::int64_t gpus = want["gpus"], nodes = want["nodes"];
        CAPTURE(stage);
        CAPTURE(gpus);
        CAPTURE(nodes);
        CAPTURE(want.dump());
        const DeepSpeedConvention& c = convention(gpus, nodes);
        const bool zero3 = std::string(stage) == "zero3";
        const auto got = std::find_if(c.figures.begin(), c.figures.end(), [&](const DeepSpeedFigure& f) {
          return f.stage == (zero3 ? 3 : 2) && f.offload_optimizer == want["offload_optimizer"].get<bool>() &&
                 (!zero3 || (f.offload_param == want["offload_param"].get<bool>() && f.zero_init == want["zero_init"].get<bool>()));
        });
        REQUIRE(got != c.figures.end());
        CHECK(got->cpu_bytes == want["cpu_bytes"].get<std::int64_t>());
        CHECK(got->gpu_bytes == want["gpu_bytes"].get<std::int64_t>());
        ++checked;
      }
  }
  CHECK(checked == 4 * 6 * (2 + 6));
}

TEST_CASE("DeepSpeed's options read as it prints them") {
  CHECK(deepspeed_zero2(1000, 1, 1, true).options() == "offload_optimizer=cpu");
  CHECK(deepspeed_zero3(1000, 10, 1, 1, true, false, true).options() == "offload_param=none, offload_optimizer=cpu, zero_init=1");
  // A billion parameters on 8 GPUs: ZeRO-2 without offload, 2 + 18/8 bytes per parameter.
  CHECK(deepspeed_zero2(1'000'000'000, 8, 1, false).gpu_bytes == 4'250'000'000);
  CHECK_THROWS_AS(deepspeed_zero2(std::int64_t{1} << 50, 8, 1, false), SizeError);
}
