// nnmem's inference peak (--mode eval) against PyTorch's: the activation peak of one
// torch.no_grad() forward in eval() mode, above parameters, buffers and input, that
// validation/measure.py records in every fixture run (eval_peak_bytes - eval_start_bytes), once
// per network and batch, exactly — the Python references forward()'s code holds included
// (docs/memory-model.md, "Python references"). Networks not modelled exactly yet are listed,
// with the reason, in validation/eval_not_modelled.json (NETWORK or NETWORK@VERSION).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// One inference forward on the CPU (batch 1).
EstimateOptions eval_on_cpu() {
  EstimateOptions o;
  o.graph.mode = Mode::Eval;
  o.graph.device = Device::Cpu;
  return o;
}

// Checks the first run of each batch of every fixture of one version (compare.py's eval_rows),
// and of each batch and dtype of its 16-bit model runs (`--dtype`: the 16-bit model's own
// inference, which measure.py records in those runs); returns how many it checked exactly.
std::size_t check_eval(const std::string& version) {
  static const std::set<std::string> approximate = listed_networks("validation/eval_not_modelled.json");
  std::size_t checked = 0;
  const std::filesystem::path dir = source_path("validation/fixtures/torch-" + version);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(entry.path()));
    const std::string network = fixture["network"];
    if (approximate.count(network) || approximate.count(network + "@" + version)) continue;
    const ModelSpec spec = validation_network(network);
    std::set<std::pair<std::int64_t, std::string>> batches;
    for (const auto& run : fixture["runs"]) {
      const std::string dtype = run.value("dtype", nlohmann::json()).is_string() ? run["dtype"].get<std::string>() : "";
      if (!batches.insert({run["batch"].get<std::int64_t>(), dtype}).second) continue;
      EstimateOptions o = eval_on_cpu();
      o.graph.torch = find_torch_profile(version);
      REQUIRE(o.graph.torch != nullptr);
      o.graph.batch = run["batch"];
      if (!dtype.empty()) o.graph.float_dtype = parse_dtype(dtype);
      const Totals t = estimate(spec, o).totals;
      CAPTURE(version);
      CAPTURE(network);
      CAPTURE(o.graph.batch);
      CAPTURE(dtype);
      CHECK(t.peak_bytes - t.param_bytes - t.buffer_bytes - t.input_bytes ==
            run["eval_peak_bytes"].get<std::int64_t>() - run["eval_start_bytes"].get<std::int64_t>());
      ++checked;
    }
  }
  return checked;
}

}  // namespace

TEST_CASE("the inference peak matches PyTorch 1.13 on every validation fixture") {
  REQUIRE(check_eval("1.13") >= 35 + 12);
}

TEST_CASE("the inference peak matches PyTorch 2.13 on every validation fixture") {
  REQUIRE(check_eval("2.13") >= 40 + 40);
}

// The references the spec declares, one by one, on a chain of Linear layers (float32, batch 1,
// 256 features: 1 KiB per activation). Without any, a tensor lives until its last reader.
TEST_CASE("var and held_until keep a tensor as long as forward()'s Python code refers to it") {
  const auto activations = [](const std::string& layers) {
    const Totals t = estimate_from("inputs: {x: [256]}\nlayers:\n" + layers, eval_on_cpu()).totals;
    return (t.peak_bytes - t.param_bytes - t.input_bytes) / 1024;
  };
  const std::string plain =
      "  - {name: fc1, type: Linear, out_features: 256}\n"
      "  - {name: act1, type: ReLU}\n"
      "  - {name: fc2, type: Linear, out_features: 256}\n"
      "  - {name: act2, type: ReLU}\n"
      "  - {name: fc3, type: Linear, out_features: 256}\n";
  CHECK(activations(plain) == 2);  // one layer's input and output
  // x = act(fc(x)): the old x lives through both calls, until x is assigned again.
  CHECK(activations("  - {name: fc1, type: Linear, out_features: 256}\n"
                    "  - {name: act1, type: ReLU, var: x}\n"
                    "  - {name: fc2, type: Linear, out_features: 256}\n"
                    "  - {name: act2, type: ReLU, var: x}\n"
                    "  - {name: fc3, type: Linear, out_features: 256}\n") == 3);
  // s = fc1(x) used once, but s lives until forward() returns: through fc2, act2 and fc3.
  CHECK(activations("  - {name: fc1, type: Linear, out_features: 256, var: s}\n"
                    "  - {name: act1, type: ReLU}\n"
                    "  - {name: fc2, type: Linear, out_features: 256}\n"
                    "  - {name: act2, type: ReLU}\n"
                    "  - {name: fc3, type: Linear, out_features: 256}\n") == 3);
  // f(act1(...)) where f runs fc2 and act2: the argument lives until f returns, not past it.
  CHECK(activations("  - {name: fc1, type: Linear, out_features: 256}\n"
                    "  - {name: act1, type: ReLU, held_until: act2}\n"
                    "  - {name: fc2, type: Linear, out_features: 256}\n"
                    "  - {name: act2, type: ReLU}\n"
                    "  - {name: fc3, type: Linear, out_features: 256}\n") == 3);
  CHECK(activations("  - {name: fc1, type: Linear, out_features: 256}\n"
                    "  - {name: act1, type: ReLU, held_until: fc2}\n"
                    "  - {name: fc2, type: Linear, out_features: 256}\n"
                    "  - {name: act2, type: ReLU}\n"
                    "  - {name: fc3, type: Linear, out_features: 256}\n") == 2);
}

// `held_until: model` and `held_until: caller` from inside a block: a DynamicCache the model
// makes holds each layer's key copy until the model returns; `attn_output, _ = self.attn(x)`
// holds the weights attention returns until the caller returns. Blocks of fc + act on 256
// float32 features (1 KiB each), batch 1: without any, two activations live at a time.
TEST_CASE("held_until: model and caller hold a block's result until the model or its caller returns") {
  const auto activations = [](const std::string& inner, const std::string& when = "true") {
    const std::string spec =
        "inputs: {x: [256]}\n"
        "blocks:\n"
        "  Attn:\n"
        "    layers:\n"
        "      - {name: fc, type: Linear, out_features: 256}\n"
        "      - {name: act, type: ReLU, when: " + when + inner + "}\n"
        "      - {name: out, type: Linear, out_features: 256}\n"
        "  Layer:\n"
        "    layers:\n"
        "      - {name: attn, block: Attn}\n"
        "      - {name: proj, type: Linear, out_features: 256}\n"
        "layers:\n"
        "  - {name: layers, block: Layer, repeat: 3}\n"
        "  - {name: head, type: Linear, out_features: 256}\n";
    const Totals t = estimate_from(spec, eval_on_cpu()).totals;
    return (t.peak_bytes - t.param_bytes - t.input_bytes) / 1024;
  };
  // The block arguments: the layer's input, the attention's input, then fc's and act's results.
  CHECK(activations("") == 3);
  // Each layer's act result held to the end: at the third layer's proj, the two earlier ones
  // beside its input, act's and out's results and proj's.
  CHECK(activations(", held_until: model") == 6);
  // Held until its Layer returns (through proj): one more than without, never two.
  CHECK(activations(", held_until: caller") == 4);
  // A skipped entry makes no result: nothing is held (not the input its name stands for).
  CHECK(activations(", held_until: model", "false") == activations("", "false"));
}

// A block instance is a module call: its caller holds the arguments until it returns, though no
// layer inside reads them after the first.
TEST_CASE("a block instance's inputs live until its last layer has run") {
  const EstimateOptions o = eval_on_cpu();
  const std::string spec =
      "inputs: {x: [256]}\n"
      "blocks:\n"
      "  Mlp:\n"
      "    layers:\n"
      "      - {name: fc1, type: Linear, out_features: 256}\n"
      "      - {name: act, type: ReLU}\n"
      "      - {name: fc2, type: Linear, out_features: 256}\n"
      "layers:\n"
      "  - {name: stem, type: Linear, out_features: 256}\n"
      "  - {name: mlp, block: Mlp}\n"
      "  - {name: head, type: Linear, out_features: 256}\n";
  const Totals t = estimate_from(spec, o).totals;
  CHECK((t.peak_bytes - t.param_bytes - t.input_bytes) / 1024 == 3);  // stem's output beside act's input and output
}

TEST_CASE("an inference pass is the same whatever --loop says, and replays on CUDA with it") {
  // --loop function is a train_step() returning loss.item(): it once left inference's output
  // unmarked, and the CUDA replay refused the pass as one leaving a tensor of its own behind.
  EstimateOptions plain = eval_on_cpu(), function = eval_on_cpu();
  function.step.loop = Loop::Function;
  for (const char* example : {"examples/residual_net.yaml", "examples/gpt2.yaml"}) {
    CAPTURE(example);
    for (Device device : {Device::Cpu, Device::Cuda}) {
      plain.graph.device = function.graph.device = device;
      const Estimate p = estimate_file(example, plain), f = estimate_file(example, function);
      CHECK(f.totals.peak_bytes == p.totals.peak_bytes);
      CHECK(f.totals.reserved_bytes == p.totals.reserved_bytes);
      CHECK(f.totals.max_allocated_bytes == p.totals.max_allocated_bytes);
    }
  }
}
