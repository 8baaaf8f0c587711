// Ultralytics model files (src/import/ultralytics.cpp): the translation gives Ultralytics' own
// parameter counts at every scale, takes the scale as Ultralytics does, and — at the validation
// network's size — every figure measured on yolov8n, the step's peak included, on both versions.
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "nnmem/ultralytics.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

const std::string kFile = "examples/ultralytics/yolov8.yaml";
const std::string kYolo11 = "examples/ultralytics/yolo11.yaml";

ModelSpec imported(const std::string& scale, const LoadOptions& load = {}, const std::string& file = kFile) {
  return parse_spec(import_ultralytics(source_path(file), scale).text, file, load);
}

// Every run of the fixture NETWORK.json of both torch versions, estimated from `spec`: exact.
void check_fixtures(const ModelSpec& spec, const std::string& network) {
  for (const std::string version : {"2.13", "1.13"}) {
    const nlohmann::json fixture =
        nlohmann::json::parse(std::ifstream(source_path("validation/fixtures/torch-" + version + "/" + network + ".json")));
    REQUIRE(fixture["runs"].size() >= 10);
    for (const auto& run : fixture["runs"]) {
      CAPTURE(version);
      CAPTURE(run.dump());
      const Totals t = estimate(spec, fixture_run_options(version, run)).totals;
      check_measured_figures(t, run);
      CHECK(t.peak_bytes == run["peak_bytes"].get<std::int64_t>());
    }
  }
}

std::string text_of(const std::string& path) {
  std::ifstream in(source_path(path));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("Ultralytics' yolov8.yaml: the counts ultralytics 8.4.190 gives at each scale") {
  // validation/check_yolo.py counted them from ultralytics' own model (examples/yolov8.yaml's header)
  const std::vector<std::pair<std::string, std::int64_t>> counts = {
      {"n", 3'157'200}, {"s", 11'166'560}, {"m", 25'902'640}, {"l", 43'691'520}, {"x", 68'229'648}};
  for (const auto& [scale, params] : counts) {
    CAPTURE(scale);
    const Totals t = estimate(imported(scale), EstimateOptions{}).totals;
    CHECK(t.params == params);
    CHECK(t.non_trainable_params == 16);  // the DFL's frozen 1x1 convolution
  }
}

TEST_CASE("Ultralytics' scale: from --scale, else the file name, else the first of scales") {
  const std::string text = text_of(kFile);
  CHECK(import_ultralytics_text(text, "cfg/yolov8s.yaml").scale == "s");
  CHECK(import_ultralytics_text(text, "yolov8x-custom.yaml").scale == "x");
  CHECK(import_ultralytics_text(text, "yolov8s.yaml", "m").scale == "m");
  const ImportedUltralytics first = import_ultralytics_text(text, "detector.yaml");
  CHECK(first.scale == "n");
  REQUIRE(first.notes.size() == 1);
  CHECK(first.notes[0].find("the first, 'n'") != std::string::npos);
  CHECK(is_ultralytics_model(source_path(kFile)));
  CHECK_FALSE(is_ultralytics_model(source_path("examples/yolov8.yaml")));
}

TEST_CASE("the imported yolov8 is the example's model, and exact against the measured yolov8n") {
  EstimateOptions o;
  o.graph.batch = 2;
  const Estimate example = estimate_file("examples/yolov8.yaml", o);
  const Estimate ours = estimate(imported("n"), o);
  CHECK(ours.totals.peak_bytes == example.totals.peak_bytes);
  CHECK(ours.totals.saved_bytes == example.totals.saved_bytes);
  CHECK(ours.totals.macs == example.totals.macs);
  // validation/specs.json's yolov8n: the example at image_size 64
  LoadOptions small;
  small.overrides.emplace_back("image_size", "64");
  check_fixtures(imported("n", small), "yolov8n");
}

TEST_CASE("Ultralytics' yolo11.yaml: the counts ultralytics 8.4.190 gives at each scale") {
  // validation/check_yolo.py counted them from ultralytics' own DetectionModel("yolo11S.yaml")
  // (c3k at scales m, l, x; Detect's class branch with DWConv: legacy is false after a C3k2)
  const std::vector<std::pair<std::string, std::int64_t>> counts = {
      {"n", 2'624'080}, {"s", 9'458'752}, {"m", 20'114'688}, {"l", 25'372'160}, {"x", 56'966'176}};
  for (const auto& [scale, params] : counts) {
    CAPTURE(scale);
    const Totals t = estimate(imported(scale, {}, kYolo11), EstimateOptions{}).totals;
    CHECK(t.params == params);
    CHECK(t.non_trainable_params == 16);
  }
  const std::string text = import_ultralytics(source_path(kYolo11), "m").text;
  CHECK(text.find("block: C3k2, c2: \"$ceil(min(256, max_channels) * width_multiple / 8) * 8\", c: \"$floor(ceil(min(256, "
                  "max_channels) * width_multiple / 8) * 8 * 0.25)\", n: \"$max(round(2 * depth_multiple), 1)\", c3k: true}") !=
        std::string::npos);
  CHECK(text.find("legacy: false") != std::string::npos);
  CHECK(import_ultralytics_text(text_of(kYolo11), "yolo11l.yaml").scale == "l");
}

TEST_CASE("the imported yolo11n is exact against the measured yolo11n, on both versions") {
  // validation/specs.json's yolo11n: Ultralytics' own file at image_size 64 (C2PSA's map is 2x2)
  LoadOptions small;
  small.overrides.emplace_back("image_size", "64");
  check_fixtures(imported("", small, kYolo11), "yolo11n");
}

TEST_CASE("a C2f of 1 to 6 Bottlenecks, and no more") {
  // The file's repeats times depth_multiple: 15 x 0.33 rounds to 5, a torch.cat of 2 + 5 maps
  // (16 channels each at n); 30,000 would be 9,900, refused where the file says so, and a
  // --set that raises the depth past 6 is refused by the block.
  std::string text = text_of(kFile);
  const std::string three = "- [-1, 3, C2f, [128, True]]";
  REQUIRE(text.find(three) != std::string::npos);
  const auto with_repeats = [&](const std::string& n) {
    std::string t = text;
    return t.replace(t.find(three), three.size(), "- [-1, " + n + ", C2f, [128, True]]");
  };
  const ModelSpec five = parse_spec(import_ultralytics_text(with_repeats("15"), "yolov8n.yaml").text, "yolov8n.yaml");
  const Graph g = build_graph(five, GraphOptions{});
  bool found = false;
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    if (g.layer(g.nodes[n]).name == "model.2.cat5") {
      found = true;
      CHECK(g.layer(g.nodes[n]).inputs.size() == 7);
      CHECK(g.values[static_cast<std::size_t>(g.nodes[n].outputs[0])].type.shape == Shape{1, 112, 160, 160});
    }
  CHECK(found);
  CHECK_THROWS_WITH_AS(import_ultralytics_text(with_repeats("30000"), "yolov8n.yaml"),
                       doctest::Contains("C2f: 30000 repeats at depth_multiple 0.33 are 9,900 Bottlenecks; nnmem's C2f runs 1 to 6"), Error);
  LoadOptions deeper;
  deeper.overrides = {{"depth_multiple", "3"}};
  CHECK_THROWS_WITH_AS(build_graph(imported("n", deeper), GraphOptions{}), doctest::Contains("C2f of more than 6 Bottlenecks"), Error);
  // YOLO11's C3k2 and C2PSA run 1 or 2 units: a deeper --set is refused, not cut to 2
  CHECK_THROWS_WITH_AS(build_graph(imported("n", deeper, kYolo11), GraphOptions{}), doctest::Contains("C3k2 of more than 2 units"), Error);
  std::string once = text_of(kYolo11);  // each C3k2 once: the C2PSA's 2 repeats are the first to pass 2
  for (std::size_t at; (at = once.find(", 2, C3k2")) != std::string::npos;) once.replace(at, 9, ", 1, C3k2");
  CHECK_THROWS_WITH_AS(build_graph(parse_spec(import_ultralytics_text(once, "yolo11n.yaml").text, "yolo11n.yaml", deeper), GraphOptions{}),
                       doctest::Contains("C2PSA of more than 2 PSABlocks"), Error);
}
