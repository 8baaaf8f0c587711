// nnmem's training figures against PyTorch's, measured by validation/measure.py (torch 1.13,
// CPU, some runs under bfloat16 autocast) and committed as validation/fixtures/*.json: parameters, buffers, gradients, optimizer
// state, input, target and saved-for-backward bytes exactly; the peak of the steady-state step
// within 5% each, and 2% in the median (so far every one is exact to the byte), and the phase
// and layer where it falls.
#include <algorithm>
#include <map>
#include <set>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("training memory matches PyTorch on every validation fixture") {
  std::vector<double> errors;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("validation/fixtures"))) {
    const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(entry.path()));
    const std::string network = fixture["network"];
    LoadOptions load;
    std::string spec = "examples/" + network + ".yaml";
    if (network == "seed_conv_256") {
      spec = "examples/seed_conv.yaml";
      load.overrides = {{"size", "256"}};
    }
    for (const auto& run : fixture["runs"]) {
      EstimateOptions o;
      if (run.contains("amp") && !run["amp"].is_null()) o.graph.amp = parse_dtype(run["amp"].get<std::string>());
      o.step.foreach = run.value("foreach", false);
      o.graph.batch = run["batch"];
      o.graph.device = Device::Cpu;
      o.step.optimizer = *parse_optimizer(run["optimizer"].get<std::string>());
      o.step.keep_grads = !run["set_to_none"].get<bool>();
      const Estimate e = estimate(load_spec_file(source_path(spec), load), o);
      const Totals& t = e.totals;
      CAPTURE(network);
      CAPTURE(run["batch"].get<int>());
      CAPTURE(run["optimizer"].get<std::string>());
      CAPTURE(run["set_to_none"].get<bool>());
      CAPTURE(o.graph.amp.has_value());
      CHECK(t.param_bytes == run["param_bytes"].get<std::int64_t>());
      CHECK(t.buffer_bytes == run["buffer_bytes"].get<std::int64_t>());
      CHECK(t.grad_bytes == run["grad_bytes"].get<std::int64_t>());
      CHECK(t.optimizer_state_bytes == run["optimizer_state_bytes"].get<std::int64_t>());
      CHECK(t.input_bytes == run["input_bytes"].get<std::int64_t>());
      CHECK(t.target_bytes == run["target_bytes"].get<std::int64_t>());
      CHECK(t.saved_bytes == run["saved_bytes"].get<std::int64_t>());
      const double measured = run["peak_bytes"].get<double>();
      const double error = std::fabs(static_cast<double>(t.peak_bytes) - measured) / measured;
      CHECK(error <= 0.05);
      errors.push_back(error);
      // ... and when: the phase always (the harness calls the optimizer's phase "step"), the
      // layer whenever PyTorch's peak falls inside a module (not in a functional op).
      const std::string phase = run["peak_phase"];
      CHECK(std::string(name_of(t.peak_phase)) == (phase == "step" ? "optimizer" : phase));
      const std::string module = run["peak_module"].is_string() ? run["peak_module"].get<std::string>() : "";
      if (phase == "backward" && module != "<functional>") CHECK(t.peak_layer == module);
    }
  }
  REQUIRE(errors.size() >= 100);
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  MESSAGE("peak error over " << errors.size() << " runs: median " << median * 100 << "%, worst " << errors.back() * 100 << "%");
  CHECK(median <= 0.02);
  CHECK(errors.back() <= 0.05);
}

TEST_CASE("the timeline names each event's block and kind: a tensor is one allocation and at most one release") {
  for (const char* spec : {"examples/resnet18.yaml", "examples/unet_small.yaml", "examples/frozen_backbone.yaml"}) {
    EstimateOptions o;
    o.graph.batch = 3;
    const Estimate e = estimate_file(spec, o);
    CAPTURE(spec);
    std::map<int, const TimelineEvent*> allocated;
    std::set<int> released;
    std::array<std::int64_t, kMemoryKinds> by_kind{};
    bool peak_seen = false;
    for (const TimelineEvent& ev : e.timeline) {
      by_kind[static_cast<std::size_t>(ev.kind)] += ev.delta;
      if (!peak_seen && ev.live == e.totals.peak_bytes) {
        CHECK(by_kind == e.totals.peak_breakdown);  // the first moment the peak is reached
        peak_seen = true;
      }
      const auto [first, fresh] = allocated.emplace(ev.block, &ev);
      if (fresh) {
        CHECK(ev.delta >= 0);
        continue;
      }
      CHECK(released.insert(ev.block).second);
      CHECK(ev.delta == -first->second->delta);
      CHECK(ev.kind == first->second->kind);
      CHECK(ev.tensor == first->second->tensor);
    }
    CHECK(peak_seen);
  }
}
