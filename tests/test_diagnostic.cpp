// The shared vocabulary's helpers (src/diagnostic.cpp): "did you mean" suggestions, source paths.
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace nnmem;

TEST_CASE("did you mean: the nearest name within a third of the word's letters, the first of the closest") {
  CHECK(nearest_name("conv", {"conv1", "conv2", "fc"}) == "conv1");
  CHECK(nearest_name("Conv1", {"xconv1", "conv1"}) == "conv1");  // case-insensitive, closest wins
  CHECK(nearest_name("fc", {"fc1", "fx"}) == "fc1");              // ties: the first
  CHECK(nearest_name("a", {"b", "ab"}).empty());                  // a one-letter word: exact matches only
  CHECK(nearest_name("", {"a"}).empty());
  CHECK(nearest_name("layer4.0.conv1", {"layer4.0.conv2", "layer4.0.conv1x"}) == "layer4.0.conv2");
  CHECK(nearest_name("abcdefghij", {"abcxyzghij"}) == "abcxyzghij");  // 3 changes of 10: allowed
  CHECK(nearest_name("abcdefghij", {"abwxyzghij"}).empty());          // 4: not
  // A word far longer than every candidate is compared with none of them (once, 16 s here).
  const std::vector<std::string> names(10000, "layer");
  CHECK(nearest_name(std::string(100000, 'q'), names).empty());
  // Long names: the distance is only computed within the band the best so far allows.
  std::vector<std::string> long_names;
  for (int i = 0; i < 100; ++i) long_names.push_back(std::string(995, 'n') + std::to_string(10000 + i));
  CHECK(nearest_name(std::string(995, 'n') + "10042", long_names) == long_names[42]);
  CHECK(nearest_name(std::string(990, 'n') + "zzzzzzzzzz", long_names) == long_names[0]);
}

TEST_CASE("a source path is one string shared by every location in its file") {
  const SourcePath none;
  CHECK(none.empty());
  CHECK(none == "");
  const SourcePath path(std::string("examples/a path longer than a string's inline buffer.yaml"));
  const SourcePath copy = path;
  CHECK(&copy.string() == &path.string());  // a copy allocates nothing
  CHECK(copy == "examples/a path longer than a string's inline buffer.yaml");
  CHECK(std::string("examples/a path longer than a string's inline buffer.yaml") == copy);
  CHECK(path == SourcePath("examples/a path longer than a string's inline buffer.yaml"));  // by content
  CHECK(path != std::string_view("other.yaml"));
  CHECK(SourceLoc{path, 3, 7}.str() == "examples/a path longer than a string's inline buffer.yaml:3:7");
  CHECK(SourceLoc{path, 0, 0}.str() == "examples/a path longer than a string's inline buffer.yaml");

  // The loader makes the handle once: the expanded layers' locations all share it.
  const ModelSpec spec = parse_spec(R"(inputs: {x: {shape: [8]}}
blocks:
  mlp:
    layers:
      - {name: fc, type: Linear, out_features: 8}
      - {name: act, type: ReLU}
layers:
  - {name: body, block: mlp, repeat: 3}
)", "a directory with a long name/spec.yaml");
  REQUIRE(spec.layers.size() == 6);
  const std::string* shared = &spec.loc.file.string();
  CHECK(*shared == "a directory with a long name/spec.yaml");
  for (const LayerSpec& layer : spec.layers) {
    CHECK(&layer.loc.file.string() == shared);
    CHECK(&layer.type_loc.file.string() == shared);
    for (const SourceLoc& in : layer.input_locs) CHECK(&in.file.string() == shared);
    for (const Attribute& a : layer.attrs) CHECK(&a.key_loc.file.string() == shared);
  }
}
