// libFuzzer target over the whole pipeline, from bytes to reports: load the bytes as a spec,
// build the graph, estimate a training step and an inference pass, render every report. A
// located nnmem::Error is the expected outcome for bad input; anything else that escapes —
// another exception, a crash, a sanitizer report, a hang — is a bug. See tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnmem/estimate.hpp"
#include "nnmem/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nnmem::LoadOptions load;
  load.max_layers = 256;  // keeps each run fast (ResNet-50 has 175 layers); tests/bad exercises the limit
  nnmem::ModelSpec spec;
  try {
    spec = nnmem::parse_spec(text, "fuzz.yaml", load);
  } catch (const nnmem::Error&) {
    return 0;
  }
  for (const nnmem::Mode mode : {nnmem::Mode::Train, nnmem::Mode::Eval}) {
    nnmem::EstimateOptions options;
    options.graph.mode = mode;
    options.graph.batch = 3;
    options.step.optimizer = mode == nnmem::Mode::Train ? nnmem::OptimizerKind::Adam : nnmem::OptimizerKind::None;
    try {
      const nnmem::Estimate e = nnmem::estimate(spec, options);
      (void)nnmem::render_table(e);
      (void)nnmem::render_json(e);
      (void)nnmem::render_torchsummary(e);
    } catch (const nnmem::Error&) {
    }
  }
  return 0;
}
