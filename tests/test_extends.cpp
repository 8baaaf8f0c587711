// `extends:` (src/spec/extends.cpp): a spec made of another with variables, inputs, blocks and
// top-level layers overridden by name, each value placed in the file that wrote it. The error
// kinds (a cycle, an unknown layer, an unnamed override, a missing base, an error of the
// base's own) are tests/bad/extends_*.
#include <filesystem>
#include <fstream>
#include <random>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
namespace fs = std::filesystem;

// A directory of spec files for one test, removed afterwards.
struct Files {
  fs::path dir = fs::temp_directory_path() / ("nnmem_extends_" + std::to_string(std::random_device{}()));
  Files() { fs::create_directories(dir); }
  ~Files() { fs::remove_all(dir); }
  std::string put(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

const char* kBase = R"(name: base
variables:
  hidden: 32
  wide: $hidden * 2
inputs:
  x: [16]
blocks:
  Mlp:
    layers:
      - {name: fc, type: Linear, out_features: $wide}
      - {name: act, type: ReLU}
layers:
  - {name: body, block: Mlp, repeat: 2}
  - {name: drop, type: Dropout, p: 0.5}
  - {name: head, type: Linear, out_features: 10, bias: false}
)";

const LayerSpec* layer(const ModelSpec& spec, const std::string& name) {
  for (const auto& l : spec.layers)
    if (l.name == name) return &l;
  return nullptr;
}
}  // namespace

TEST_CASE("extends: variables, layers and blocks are the base's, overridden by name") {
  Files f;
  f.put("base.yaml", kBase);
  // hidden overridden: wide, computed from it in the base, follows; a new variable comes after
  // the base's, so it may use them (and the layers may use it)
  const auto child = f.put("child.yaml", R"(extends: base.yaml
variables:
  hidden: 20
  classes: $hidden / 4
layers:
  - {name: head, out_features: $classes}
  - {name: drop, when: false}
  - {name: body, repeat: 3}
)");
  const ModelSpec spec = load_spec_file(child);
  CHECK(spec.name == "child");  // the default name is the extending file's stem, not the base's name
  REQUIRE(layer(spec, "head"));
  CHECK(layer(spec, "head")->find_attr("out_features")->value.integer == 5);
  CHECK(layer(spec, "head")->find_attr("bias")->value.boolean == false);  // kept from the base
  CHECK(layer(spec, "head")->loc.file == child);                          // the layer as changed is the child's
  CHECK_FALSE(layer(spec, "drop"));
  REQUIRE(layer(spec, "body.2.fc"));
  CHECK(layer(spec, "body.2.fc")->find_attr("out_features")->value.integer == 40);  // wide = 2 * (5 * 4)
  CHECK(layer(spec, "body.0.fc")->loc.file == (f.dir / "base.yaml").string());    // untouched: the base's

  // --set applies to the merged variables; a block given again replaces the base's
  LoadOptions set;
  set.overrides = {{"hidden", "4"}};
  CHECK(layer(load_spec_file(child, set), "body.0.fc")->find_attr("out_features")->value.integer == 8);
  CHECK(layer(load_spec_file(child, set), "head")->find_attr("out_features")->value.integer == 1);
  const auto blocks = f.put("blocks.yaml", R"(extends: base.yaml
blocks:
  Mlp:
    layers:
      - {name: fc, type: Linear, out_features: 3}
)");
  const ModelSpec b = load_spec_file(blocks);
  CHECK(layer(b, "body.1.fc")->find_attr("out_features")->value.integer == 3);
  CHECK_FALSE(layer(b, "body.1.act"));
}

TEST_CASE("extends: a chain of files, each relative to the one that names it; the estimate is the variant's") {
  Files f;
  fs::create_directories(f.dir / "models");
  f.put("models/base.yaml", kBase);
  f.put("middle.yaml", "extends: models/base.yaml\nvariables:\n  hidden: 8\n");
  const auto top = f.put("top.yaml", "extends: middle.yaml\nname: top_model\nlayers:\n  - {name: head, bias: true}\n");
  const ModelSpec spec = load_spec_file(top);
  CHECK(spec.name == "top_model");
  CHECK(layer(spec, "body.0.fc")->find_attr("out_features")->value.integer == 16);
  // Linear(16, 16), Linear(16, 16), Linear(16, 10) with bias
  EstimateOptions o;
  o.graph.mode = Mode::Eval;
  CHECK(estimate(spec, o).totals.params == 2 * (16 * 16 + 16) + 16 * 10 + 10);
}

TEST_CASE("extends: from standard input, the base is relative to the working directory") {
  try {
    parse_spec("extends: no_such_base.yaml\n", "/dev/stdin");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.message() == "extends 'no_such_base.yaml' (no_such_base.yaml): cannot open the file: No such file or directory");
    CHECK(e.loc().file == "/dev/stdin");
  }
}

TEST_CASE("an extending spec's top-level register list replaces the base's for its module") {
  Files f;
  f.put("base.yaml", "inputs: {x: [4]}\nregister: {up: [1, 0]}\nlayers:\n"
                     "  - {name: up.1.fc, type: Linear, out_features: 4}\n  - {name: up.0.fc, type: Linear, out_features: 4}\n");
  const auto first = [](const std::string& path) {
    const Graph g = build_graph(load_spec_file(path));
    return g.param_name(g.parameters.front());
  };
  CHECK(first(f.put("same.yaml", "extends: base.yaml\n")) == "up.1.fc.weight");
  CHECK(first(f.put("over.yaml", "extends: base.yaml\nregister: {up: [0, 1]}\n")) == "up.0.fc.weight");
}
