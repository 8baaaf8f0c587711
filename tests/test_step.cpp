// nnmem's training figures against PyTorch's, measured by validation/measure.py (CPU, some runs
// under bfloat16 autocast or with the optimizers' foreach/fused implementations) and committed
// as validation/fixtures/torch-VERSION/*.json, one directory per torch version: parameters,
// buffers, gradients, optimizer state, input, target and saved-for-backward bytes exactly; the
// peak of the steady-state step exactly too, and the phase and layer where it falls. Each run is
// estimated under the profile of the version that measured it (--torch VERSION).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// The run as estimate options: the fixture's torch version, batch, optimizer and its
// implementation, zero_grad mode and autocast. Every run is one nnmem can estimate.
EstimateOptions configure(const std::string& version, const nlohmann::json& run) {
  EstimateOptions o;
  o.graph.torch = find_torch_profile(version);
  REQUIRE(o.graph.torch != nullptr);
  if (run.contains("amp") && !run["amp"].is_null()) o.graph.amp = parse_dtype(run["amp"].get<std::string>());
  o.step.foreach = run.value("foreach", false);
  o.step.fused = run.value("fused", false);
  o.graph.batch = run["batch"];
  o.graph.device = Device::Cpu;
  o.step.optimizer = *parse_optimizer(run["optimizer"].get<std::string>());
  o.step.keep_grads = !run["set_to_none"].get<bool>();
  return o;
}

// Checks every run of one version's fixtures; returns how many runs it checked.
std::size_t check_version(const std::string& version) {
  std::size_t runs = 0;
  const std::filesystem::path dir = source_path("validation/fixtures/torch-" + version);
  if (!std::filesystem::is_directory(dir)) return runs;
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
      const EstimateOptions o = configure(version, run);
      const Estimate e = estimate(load_spec_file(source_path(spec), load), o);
      const Totals& t = e.totals;
      CAPTURE(version);
      CAPTURE(network);
      CAPTURE(run["batch"].get<int>());
      CAPTURE(run["optimizer"].get<std::string>());
      CAPTURE(run["set_to_none"].get<bool>());
      CAPTURE(o.graph.amp.has_value());
      CAPTURE(o.step.foreach);
      CAPTURE(o.step.fused);
      CHECK(t.param_bytes == run["param_bytes"].get<std::int64_t>());
      CHECK(t.buffer_bytes == run["buffer_bytes"].get<std::int64_t>());
      CHECK(t.grad_bytes == run["grad_bytes"].get<std::int64_t>());
      CHECK(t.optimizer_state_bytes == run["optimizer_state_bytes"].get<std::int64_t>());
      CHECK(t.input_bytes == run["input_bytes"].get<std::int64_t>());
      CHECK(t.target_bytes == run["target_bytes"].get<std::int64_t>());
      CHECK(t.saved_bytes == run["saved_bytes"].get<std::int64_t>());
      CHECK(t.peak_bytes == run["peak_bytes"].get<std::int64_t>());
      ++runs;
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
  return runs;
}

}  // namespace

TEST_CASE("training memory matches PyTorch 1.13 on every validation fixture") {
  REQUIRE(check_version("1.13") >= 100);
}

TEST_CASE("training memory matches PyTorch 2.13 on every validation fixture") {
  REQUIRE(check_version("2.13") >= 200);
}
