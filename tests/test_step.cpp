// nnmem's training figures against PyTorch's, measured by validation/measure.py (CPU, some runs
// under bfloat16 autocast or with the optimizers' foreach/fused implementations) and committed
// as validation/fixtures/torch-VERSION/*.json, one directory per torch version: parameters,
// buffers, gradients, optimizer state, input, target and saved-for-backward bytes exactly; the
// peak of the steady-state step within 5% each, and 2% in the median (so far every 1.13 run is
// exact to the byte), and the phase and layer where it falls.
//
// nnmem models torch 1.13. The torch 2.13 fixtures are read too, but checked only once nnmem
// can model 2.13: then flip kTorch213Modelled and make select_torch() set the option
// (validation/torch2-differences.md lists what 2.13 does differently).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// >>> The switch: true once EstimateOptions can select torch 2.13's behaviour. <<<
constexpr bool kTorch213Modelled = false;

// Makes the options follow torch `version`'s behaviour; false when this build cannot (the run
// is then skipped, not failed).
bool select_torch(EstimateOptions& o, const std::string& version) {
  if (version == "1.13") {  // nnmem's behaviour today, and TorchProfile's 1.13 fields
    o.graph.torch = find_torch_profile("1.13");
    return true;
  }
  if (version == "2.13" && kTorch213Modelled) {
    // o.<profile> = torch 2.13;  <- one line here when the option lands
    (void)o;
    return true;
  }
  return false;
}

// The fixture's run as estimate options; false for a run nnmem has no option for yet (the
// optimizers' fused kernels, torch 2.x only).
bool configure(EstimateOptions& o, const nlohmann::json& run) {
  if (run.value("fused", false)) return false;
  if (run.contains("amp") && !run["amp"].is_null()) o.graph.amp = parse_dtype(run["amp"].get<std::string>());
  o.step.foreach = run.value("foreach", false);
  o.graph.batch = run["batch"];
  o.graph.device = Device::Cpu;
  o.step.optimizer = *parse_optimizer(run["optimizer"].get<std::string>());
  o.step.keep_grads = !run["set_to_none"].get<bool>();
  return true;
}

// Checks every run of one version's fixtures; returns the peak errors of the runs checked.
std::vector<double> check_version(const std::string& version) {
  std::vector<double> errors;
  const std::filesystem::path dir = source_path("validation/fixtures/torch-" + version);
  if (!std::filesystem::is_directory(dir)) return errors;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
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
      if (!select_torch(o, version) || !configure(o, run)) continue;
      const Estimate e = estimate(load_spec_file(source_path(spec), load), o);
      const Totals& t = e.totals;
      CAPTURE(version);
      CAPTURE(network);
      CAPTURE(run["batch"].get<int>());
      CAPTURE(run["optimizer"].get<std::string>());
      CAPTURE(run["set_to_none"].get<bool>());
      CAPTURE(o.graph.amp.has_value());
      CAPTURE(o.step.foreach);
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
      // layer whenever PyTorch's peak falls inside a module (not in the root's functional
      // code). An op in a container module's own forward (SqueezeExcitation's `scale * input`)
      // is a functional layer named inside it (features.7.0.block.2.scale).
      const std::string phase = run["peak_phase"];
      CHECK(std::string(name_of(t.peak_phase)) == (phase == "step" ? "optimizer" : phase));
      const std::string module = run["peak_module"].is_string() ? run["peak_module"].get<std::string>() : "";
      if (phase == "backward" && module != "<functional>") {
        const auto layer = std::find_if(e.layers.begin(), e.layers.end(), [&](const auto& l) { return l.name == t.peak_layer; });
        const bool inside = layer != e.layers.end() && layer->functional && t.peak_layer.rfind(module + ".", 0) == 0 &&
                            t.peak_layer.find('.', module.size() + 1) == std::string::npos;
        CHECK_MESSAGE((t.peak_layer == module || inside), t.peak_layer << " vs " << module);
      }
    }
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2];
    MESSAGE("torch " << version << ": peak error over " << errors.size() << " runs: median " << median * 100
                     << "%, worst " << errors.back() * 100 << "%");
    CHECK(median <= 0.02);
    CHECK(errors.back() <= 0.05);
  }
  return errors;
}

}  // namespace

TEST_CASE("training memory matches PyTorch 1.13 on every validation fixture") {
  REQUIRE(check_version("1.13").size() >= 100);
}

TEST_CASE("training memory matches PyTorch 2.13 on every validation fixture (once modelled)") {
  const std::size_t checked = check_version("2.13").size();
  if (kTorch213Modelled) CHECK(checked >= 100);
  else CHECK(checked == 0);
}
