// Renderers format what estimate() computed and checked: a model too large for 64-bit sizes
// fails in estimate(), located at the spec, and the table widens its columns for huge values.
#include <regex>
#include <sstream>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

EstimateOptions eval_mode() {
  EstimateOptions o;
  o.graph.mode = Mode::Eval;
  return o;
}

}  // namespace

TEST_CASE("estimate() computes torchsummary's figures; the renderers only show them") {
  const Estimate e = estimate_from("inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: 4}\n  - {type: ReLU}\n");
  CHECK(e.torchsummary.input_bytes == 8 * 4);
  CHECK(e.torchsummary.forward_backward_bytes == (4 + 4) * 4 * 2);
  CHECK(e.torchsummary.params_bytes == (8 * 4 + 4) * 4);
  CHECK(&torchsummary_figures(e) == &e.torchsummary);
  CHECK(e.totals.device_bytes == e.totals.reserved_bytes + e.totals.overhead_bytes);
}

TEST_CASE("the CUDA allocator's figures are in the JSON, labelled modelled in the table, absent on the CPU") {
  const std::string spec = "inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: 4}\n";
  const Estimate cuda = estimate_from(spec);
  const std::string json = render_json(cuda);
  CHECK(json.find("\"max_allocated_bytes\": " + std::to_string(cuda.totals.max_allocated_bytes)) != std::string::npos);
  CHECK(json.find("\"cuda_allocator\": {") != std::string::npos);
  CHECK(json.find("\"expandable_segments\": false") != std::string::npos);
  CHECK(render_table(cuda).find("CUDA max_memory_reserved(), modelled") != std::string::npos);
  EstimateOptions cpu;
  cpu.graph.device = Device::Cpu;
  const Estimate on_cpu = estimate_from(spec, cpu);
  CHECK(!on_cpu.cuda_allocator);
  CHECK(render_json(on_cpu).find("\"cuda_allocator\": null") != std::string::npos);
  CHECK(render_table(on_cpu).find("CUDA") == std::string::npos);
}

TEST_CASE("figures that overflow fail in estimate(), never in a renderer") {
  // Views cost nothing, but torchsummary counts each module's output twice at 4 bytes.
  const std::string views = "inputs: {x: [576460752303423488]}\nlayers:\n  - {type: Identity}\n  - {type: Identity}\n"
                            "  - {type: Identity}\n  - {type: Identity}\n";
  CHECK(error_from(views, eval_mode()) ==
        "test.yaml:1:1: error: the model's memory does not fit in 64 bits: size overflow: 2305843009213693952 * 4 does "
        "not fit in 64 bits");
  EstimateOptions overhead = eval_mode();
  overhead.step.overhead_bytes = std::int64_t{9190000000000000000};
  CHECK(error_from("inputs: {x: [9007199254740992]}\nlayers:\n  - {type: ReLU}\n", overhead)
            .find("the model's memory does not fit in 64 bits: size overflow: 72057594037927936 + 9190000000000000000") !=
        std::string::npos);
}

TEST_CASE("the memory table widens its columns rather than run values together") {
  const Estimate e = estimate_from("inputs: {x: [500000000000000000]}\nlayers:\n  - {type: ReLU}\n", eval_mode());
  std::istringstream table(render_table(e));
  const std::regex row(R"(  +\S.*\S  +[0-9,]+  +[0-9]+\.[0-9]{4} MiB.*)");
  int rows = 0;
  for (std::string line; std::getline(table, line);)
    if (line.find(" MiB") != std::string::npos && line.rfind("Memory", 0) != 0) {
      CAPTURE(line);
      CHECK(std::regex_match(line, row));
      ++rows;
    }
  CHECK(rows >= 6);
}

TEST_CASE("the PyTorch version modelled is chosen by name, defaults to the newest, and is reported") {
  REQUIRE(torch_profiles().size() >= 2);
  CHECK(&default_torch_profile() == &torch_profiles().front());
  CHECK(default_torch_profile().version == "2.13");
  REQUIRE(find_torch_profile("1.13") != nullptr);
  CHECK(find_torch_profile("1.13")->version == "1.13");
  CHECK(find_torch_profile("2.1") == nullptr);
  CHECK(find_torch_profile("") == nullptr);
  CHECK(torch_versions() == "2.13, 1.13");

  EstimateOptions o = eval_mode();
  o.graph.torch = find_torch_profile("1.13");
  const Estimate e = estimate(parse_spec("inputs: {x: [4]}\nlayers:\n  - {type: Linear, out_features: 2}\n", "m.yaml"), o);
  CHECK(render_json(e).find("\"torch\": \"1.13\"") != std::string::npos);
  CHECK(render_table(e).find(", PyTorch 1.13\n") != std::string::npos);
}
