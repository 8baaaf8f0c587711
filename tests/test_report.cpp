// Renderers format what estimate() computed and checked: a model too large for 64-bit sizes
// fails in estimate(), located at the spec, and the table widens its columns for huge values.
#include <limits>
#include <regex>
#include <sstream>

#include "helpers.hpp"
#include "nnmem/units.hpp"

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

TEST_CASE("readable sizes: the unit the magnitude calls for, two decimals truncated, exact bytes beside") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1536) == "1.50 KiB");
  CHECK(human_bytes(13098536) == "12.49 MiB");        // seed 003's weights
  CHECK(human_bytes(39295640) == "37.47 MiB");        // 37.4752…: truncated, never rounded up
  CHECK(human_bytes((std::int64_t{1} << 30) - 1) == "1023.99 MiB");
  CHECK(human_bytes(std::int64_t{1} << 30) == "1.00 GiB");
  CHECK(human_bytes(-(std::int64_t{13} << 28)) == "-3.25 GiB");
  CHECK(human_bytes(std::numeric_limits<std::int64_t>::max()) == "7.99 EiB");
  CHECK(human_bytes(std::numeric_limits<std::int64_t>::min()) == "-8.00 EiB");
  CHECK(human_bytes_exact(13098536) == "12.49 MiB (13,098,536 bytes)");
}
