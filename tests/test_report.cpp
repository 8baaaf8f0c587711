// Renderers format what estimate() computed and checked: a model too large for 64-bit sizes
// fails in estimate(), located at the spec, and the table widens its columns for huge values.
#include <limits>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../src/report/json_out.hpp"
#include "helpers.hpp"
#include "nnmem/plan.hpp"
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
  const std::regex row(R"( *\S.*\S  +[0-9,]+  +[0-9]+(\.[0-9]{2} [KMGTPE]i| )B.*)");
  int rows = 0;
  bool memory = false;
  for (std::string line; std::getline(table, line);)
    if ((memory = memory || line.rfind("Memory", 0) == 0) && line.rfind("Memory", 0) != 0 && line[0] != '-') {
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

TEST_CASE("the answer comes first: peak, where, what the device holds; a budget gets a verdict") {
  EstimateOptions o;
  o.graph.batch = 32;
  const Estimate e = estimate_file("examples/resnet18.yaml", o);
  const std::string table = render_table(e);
  const std::string first = table.substr(0, table.find('\n'));
  CHECK(first == "resnet18, batch 32: peak " + human_bytes_exact(e.totals.peak_bytes) + " in backward at " +
                     e.totals.peak_layer + "; the device holds " + human_bytes_exact(e.totals.device_bytes) + " (modelled)");
  ReportOptions r;
  r.budget_bytes = e.totals.device_bytes;
  CHECK(verdict(e, e.totals.device_bytes) == "Budget " + human_bytes_exact(e.totals.device_bytes) + ": fits, with 0 B (0.0 %) to spare");
  CHECK(verdict(e, e.totals.device_bytes - 1048576).find(": does not fit, 1.00 MiB (0.1 %) over") != std::string::npos);
  CHECK(render_table(e, r).find("\nBudget ") != std::string::npos);
  // --summary: no layer rows; --depth 1 folds each stage into one row, summing its figures.
  r.summary = true;
  CHECK(render_table(e, r).find("layer1.0.conv1") == std::string::npos);
  CHECK(render_table(e, r).find("total on the device") != std::string::npos);
  ReportOptions folded;
  folded.depth = 1;
  const std::string csv = render_csv(e, folded);
  CHECK(csv.rfind("Layer (type),Output shape,Params,MACs,Saved bytes\n", 0) == 0);
  std::int64_t layer1_params = 0;
  for (const auto& l : e.layers)
    if (l.name.rfind("layer1.", 0) == 0) layer1_params += l.params;
  CHECK(csv.find("\nlayer1 (14 layers),\"[32, 64, 56, 56]\"," + std::to_string(layer1_params) + ",") != std::string::npos);
  CHECK(csv.find("\nfc (Linear),\"[32, 1000]\",513000,16384000,") != std::string::npos);
  folded.depth = 2;
  CHECK(render_table(e, folded).find("layer1.0 (7 layers)") != std::string::npos);
  // Markdown tables; CSV of the memory components, each part naming its whole.
  const std::string md = render_markdown(e, {});
  CHECK(md.find("| Layer (type) | Output shape | Params | MACs | Saved |\n|---|---|---:|---:|---:|\n") != std::string::npos);
  ReportOptions summary;
  summary.summary = true;
  const std::string parts = render_csv(e, summary);
  CHECK(parts.find("component,part of,bytes\nparameters,," + std::to_string(e.totals.param_bytes) + "\n") == 0);
  CHECK(parts.find("\nexp_avg,optimizer state (adam)," + std::to_string(e.totals.param_bytes) + "\n") != std::string::npos);
}

TEST_CASE("the JSON records the --set and --input a spec was loaded with, and its variables; the timeline on request") {
  LoadOptions load;
  load.overrides = {{"hidden", "256"}};
  load.input_shapes = {{"pixels", "[196]"}};
  const Estimate e = estimate(load_spec_file(source_path("examples/mlp.yaml"), load), {});
  const std::string json = render_json(e, {}, -1);
  CHECK(json.find(R"("load":{"set":{"hidden":"256"},"input":{"pixels":"[196]"},"variables":{"hidden":256}})") != std::string::npos);
  CHECK(json.find(R"("inputs":[{"shape":[1,196])") != std::string::npos);
  CHECK(json.find(R"("timeline":[)") != std::string::npos);
  ReportOptions quiet;
  quiet.timeline = false;
  CHECK(render_json(e, quiet, -1).find("timeline") == std::string::npos);
}

TEST_CASE("JSON is streamed exactly as nlohmann's dump would lay out the same document") {
  // Names that need escaping, a timeline (with gradient accumulation: its micro-steps), fit's
  // nesting; indented and compact.
  const std::string yaml = "name: \"q\\\"uo\\\\te\\ttab\"\ninputs: {x: [8]}\n"
                           "layers:\n  - {name: \"fc\\u0001\", type: Linear, out_features: 4}\n  - {type: ReLU}\n";
  const Estimate e = estimate_from(yaml);
  EstimateOptions accum;
  accum.step.grad_accum = 3;
  for (const Estimate& each : {e, estimate_from(yaml, accum)})
    for (const int indent : {0, 2, 4, -1}) {
      CAPTURE(indent);
      const std::string text = render_json(each, {}, indent);
      CHECK(text == nlohmann::ordered_json::parse(text).dump(indent));
      CHECK(text.find("\"timeline\"") != std::string::npos);
      CHECK((text.find("\"micro_step\"") != std::string::npos) == (each.options.step.grad_accum > 1));
    }
  ReportOptions no_timeline;
  no_timeline.timeline = false;
  CHECK(nlohmann::ordered_json::parse(render_json(e, no_timeline)).contains("timeline") == false);
  const ModelSpec spec = load_spec_file(source_path("examples/mlp.yaml"));
  FitOptions f;
  f.budget_bytes = 64LL << 20;
  const BatchFit fit = fit_batch(spec, {}, f);
  const std::string text = render_json(fit);
  CHECK(text == nlohmann::ordered_json::parse(text).dump(2));
  CHECK(nlohmann::ordered_json::parse(text)["estimate"]["options"]["batch"] == fit.batch);
}

TEST_CASE("the JSON writer escapes a string as nlohmann's dump() does, wherever the escaped byte falls") {
  // append_string tests eight bytes at a time: every byte value at every position of a word,
  // after and before text that needs no escape, and UTF-8 (bytes of 0x80 and above) beside them.
  for (int byte = 0; byte < 256; ++byte)
    for (std::size_t at = 0; at < 20; ++at) {
      std::string text = "layer1.0.conv1 output \xc3\xa9";
      text.insert(at, 1, static_cast<char>(byte));
      if (byte >= 0x80) text.insert(at, 1, '\xc3'), text[at + 1] = static_cast<char>(0x80 + byte % 0x40);  // stays UTF-8
      std::string out;
      append_string(out, text);
      CHECK(out == nlohmann::json(text).dump());
      CHECK(plain_string(text) == (out == '"' + text + '"'));  // read eight bytes at a time too
    }
}

TEST_CASE("a cell too long for its column overflows it, and a long list of shapes shows runs: a table grows as its cells") {
  // A Chunk of 100 outputs: its shapes would be 800 characters; each run of equal shapes once.
  std::string spec = "inputs: {x: [200]}\nlayers:\n  - {name: c, type: Chunk, chunks: 100, dim: -1}\n"
                     "  - {name: r0, type: ReLU, inputs: [c]}\n";
  for (int i = 1; i < 100; ++i) spec += "  - {name: r" + std::to_string(i) + ", type: ReLU, inputs: ['c:" + std::to_string(i) + "']}\n";
  spec += "  - {name: cat, type: Concat, dim: -1, inputs: [r0";
  for (int i = 1; i < 100; ++i) spec += ", r" + std::to_string(i);
  spec += "]}\n";
  const Estimate chunks = estimate_from(spec, eval_mode());
  const std::string table = render_table(chunks);
  CHECK(table.find("c (Chunk)     [1, 2] x100  ") != std::string::npos);
  CHECK(table.find("\nr7 (ReLU)     [1, 2]  ") != std::string::npos);
  // CSV keeps every shape, as it keeps every figure whole.
  std::string all = "[1, 2]";
  for (int i = 1; i < 100; ++i) all += " [1, 2]";
  CHECK(render_csv(chunks).find("c (Chunk),\"" + all + "\",") != std::string::npos);
  // Runs apart, and a list short enough left as it is.
  const Estimate split = estimate_from("inputs: {x: [251]}\nlayers:\n  - {name: c, type: Chunk, chunks: 26, dim: -1}\n", eval_mode());
  CHECK(render_table(split).find("c (Chunk)     [1, 10] x25 [1, 1]") != std::string::npos);
  const Estimate two = estimate_from("inputs: {x: [4]}\nlayers:\n  - {name: c, type: Chunk, chunks: 2, dim: -1}\n", eval_mode());
  CHECK(render_table(two).find("c (Chunk)     [1, 2] [1, 2]") != std::string::npos);

  // One name of 300 characters: its row overflows; the other rows are padded to the rest.
  const std::string name(300, 'n');
  const Estimate named = estimate_from("inputs: {x: [8]}\nlayers:\n  - {name: " + name + ", type: Linear, out_features: 8}\n"
                                       "  - {name: act, type: ReLU}\n", eval_mode());
  const std::string text = render_table(named);
  CHECK(text.find(name + " (Linear)  [1, 8]") != std::string::npos);
  CHECK(text.find("\nact (ReLU)    [1, 8]") != std::string::npos);
}

TEST_CASE("the trace is written as ordered_json's dump() writes it, without building a tree") {
  const Estimate e = estimate_from("name: \"a \\\"quoted\\\" net\\tnamed \\u00e9\"\ninputs: {x: [8]}\nlayers:\n"
                                   "  - {name: fc, type: Linear, out_features: 4}\n  - {name: act, type: ReLU}\n");
  const std::string trace = render_trace_json(e);
  const auto parsed = nlohmann::ordered_json::parse(trace);
  CHECK(parsed.dump() == trace);
  CHECK(parsed["otherData"]["model"] == "a \"quoted\" net\tnamed \u00e9");
  CHECK(parsed["traceEvents"][0]["args"]["name"].get<std::string>().rfind("nnmem: ", 0) == 0);
  CHECK(parsed["traceEvents"].back()["ph"] == "X");
}
