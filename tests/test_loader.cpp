// Loading a spec: the YAML reader (encodings, positions, YAML mistakes yaml-cpp words obscurely;
// reading files and FIFOs: test_loader_files.cpp)
// and the expansion (blocks, `repeat` with $index, `when: false`, names), with the located
// errors both promise.
#include <regex>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

ModelSpec load(const std::string& yaml, const LoadOptions& options = {}) { return parse_spec(yaml, "test.yaml", options); }


std::vector<std::string> names(const ModelSpec& spec) {
  std::vector<std::string> out;
  for (const auto& l : spec.layers) out.push_back(l.name);
  return out;
}


}  // namespace

TEST_CASE("blocks and repeat: qualified names, $index, parameters with defaults, the output") {
  const ModelSpec spec = load(
      "inputs: {x: [3, 32, 32]}\n"
      "blocks:\n"
      "  Down:\n"
      "    params: {c: null, k: 3}\n"
      "    layers:\n"
      "      - {name: conv, type: Conv2d, out_channels: $c, kernel_size: $k, stride: 2}\n"
      "      - {type: ReLU}\n"
      "    output: conv\n"
      "layers:\n"
      "  - {name: down, block: Down, c: \"$8 * (index + 1)\", repeat: 3}\n"  // a block sees its arguments only
      "  - {name: head, type: Flatten}\n");
  CHECK(names(spec) == std::vector<std::string>{"down.0.conv", "down.0.1", "down.1.conv", "down.1.1", "down.2.conv",
                                                "down.2.1", "head"});
  CHECK(spec.layers[2].find_attr("out_channels")->value.integer == 16);
  CHECK(spec.layers[4].find_attr("out_channels")->value.integer == 24);
  CHECK(spec.layers[4].find_attr("kernel_size")->value.integer == 3);
  CHECK(spec.layers[2].inputs == std::vector<std::string>{"down.0.conv"});  // the block's output, not its last layer
  CHECK(spec.layers[6].inputs == std::vector<std::string>{"down.2.conv"});
  CHECK(spec.outputs == std::vector<std::string>{"head"});
}

TEST_CASE("repeat: each instance reads the previous one in place of its first input; repeat: 0 is when: false") {
  const ModelSpec spec = load(
      "inputs: {x: [8], cos: [8]}\n"
      "blocks:\n  Two:\n    inputs: [p, q]\n    layers:\n      - {name: s, type: Add, inputs: [p, q]}\n"
      "layers:\n"
      "  - {name: t, block: Two, inputs: [x, cos], repeat: 2}\n"
      "  - {name: none, type: ReLU, repeat: 0}\n"
      "  - {name: u, type: Add, inputs: [none, cos], repeat: 2}\n");
  CHECK(names(spec) == std::vector<std::string>{"t.0.s", "t.1.s", "u.0", "u.1"});
  CHECK(spec.layers[1].inputs == std::vector<std::string>{"t.0.s", "cos"});
  CHECK(spec.layers[2].inputs == std::vector<std::string>{"t.1.s", "cos"});
  CHECK(spec.layers[3].inputs == std::vector<std::string>{"u.0", "cos"});
}

TEST_CASE("repeat: the layers are held at about their number, whatever the first instance makes") {
  // The list is reserved from the first instance (expand.cpp's reserve_for): exact for equal
  // instances, and given back when a first instance that makes more over-reserved it.
  const auto spare = [](const ModelSpec& s) { return s.layers.capacity() - s.layers.size(); };
  const ModelSpec equal = load("inputs: {x: [8]}\nblocks:\n  B:\n    layers:\n      - {type: Linear, out_features: 8}\n"
                               "      - {type: ReLU}\nlayers:\n  - {block: B, repeat: 1000}\n  - {name: head, type: ReLU}\n");
  CHECK(equal.layers.size() == 2001);
  CHECK(spare(equal) <= equal.layers.capacity() / 8);
  const ModelSpec first_more = load("inputs: {x: [8]}\nblocks:\n  B:\n    params: {i: 0}\n    layers:\n"
                                    "      - {name: a, type: Linear, out_features: 8}\n"
                                    "      - {name: b, type: ReLU, when: \"$i == 0\"}\n"
                                    "      - {name: c, type: ReLU, when: \"$i == 0\"}\n"
                                    "layers:\n  - {name: r, block: B, i: $index, repeat: 1000}\n");
  REQUIRE(first_more.layers.size() == 1002);
  CHECK(first_more.layers[2].name == "r.0.c");
  CHECK(first_more.layers[3].name == "r.1.a");
  CHECK(first_more.layers.back().name == "r.999.a");
  CHECK(spare(first_more) <= first_more.layers.capacity() / 8);
}

TEST_CASE("when: false drops a layer, and its name stands for its input") {
  const ModelSpec spec = load(
      "variables:\n  dropout: false\n"
      "inputs: {x: [8]}\n"
      "layers:\n"
      "  - {name: fc, type: Linear, out_features: 8}\n"
      "  - {name: drop, type: Dropout, when: $dropout}\n"
      "  - {name: add, type: Add, inputs: [drop, fc]}\n"
      "  - {name: gate, type: Mul, inputs: [add, fc], when: $dropout}\n"  // several inputs: the first stands for it
      "  - {name: out, type: Add, inputs: [gate, x]}\n");
  CHECK(names(spec) == std::vector<std::string>{"fc", "add", "out"});
  CHECK(spec.layers[1].inputs == std::vector<std::string>{"fc", "fc"});
  CHECK(spec.layers[2].inputs == std::vector<std::string>{"add", "x"});
}

TEST_CASE("a type: $expression whose value names a block instantiates that block") {
  // YOLO11's C3k2 chooses its units, C3k or Bottleneck, by a block parameter
  const ModelSpec spec = load(
      "inputs: {x: [8]}\n"
      "blocks:\n"
      "  Wide:\n    params: {c: null}\n    layers:\n      - {name: fc, type: Linear, out_features: $2 * c}\n"
      "  Narrow:\n    params: {c: null}\n    layers:\n      - {name: fc, type: Linear, out_features: $c}\n"
      "  Pick:\n    params: {wide: false}\n    layers:\n"
      "      - {name: m, type: \"$wide ? 'Wide' : 'Narrow'\", c: 4}\n"
      "      - {name: act, type: \"$wide ? 'ReLU' : 'Tanh'\"}\n"
      "layers:\n"
      "  - {name: a, block: Pick, wide: true}\n"
      "  - {name: b, block: Pick}\n");
  CHECK(names(spec) == std::vector<std::string>{"a.m.fc", "a.act", "b.m.fc", "b.act"});
  CHECK(spec.layers[0].find_attr("out_features")->value.integer == 8);
  CHECK(spec.layers[1].type == "ReLU");
  CHECK(spec.layers[2].find_attr("out_features")->value.integer == 4);
  CHECK(spec.layers[3].type == "Tanh");
}

TEST_CASE("a block instance passes trainable: false down to every layer inside it") {
  const ModelSpec spec = load(
      "inputs: {x: [8]}\nblocks:\n  MLP:\n    layers:\n      - {type: Linear, out_features: 8}\n"
      "      - {type: Linear, out_features: 8, trainable: true}\n"
      "layers:\n  - {name: frozen, block: MLP, trainable: false}\n  - {name: head, type: Linear, out_features: 2}\n");
  CHECK(!spec.layers[0].trainable);
  CHECK(!spec.layers[1].trainable);
  CHECK(spec.layers[2].trainable);
}

TEST_CASE("values keep their shape for the layer's schema to judge: nested lists, mappings") {
  const ModelSpec spec = load("inputs: {x: [3, 8, 8]}\nlayers:\n"
                              "  - {type: Conv2d, out_channels: 4, kernel_size: [[3, 3]], stride: {h: 1}}\n");
  const LayerSpec& conv = spec.layers[0];
  CHECK(conv.find_attr("kernel_size")->value.str() == "[[3, 3]]");
  CHECK(conv.find_attr("stride")->value.kind == Value::Kind::Map);
  CHECK(conv.find_attr("stride")->value.describe() == "a mapping");
}

TEST_CASE("columns count characters, as an editor does; a UTF-8 byte order mark is not one") {
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: caf\xc3\xa9, type: Linaer}\n").empty());  // found later
  CHECK(error_from("inputs: {x: [8]}\nlayers:\n  - {name: caf\xc3\xa9, type: Linaer}\n").rfind("test.yaml:3:24:", 0) == 0);
  CHECK(error_from("\xef\xbb\xbfinputs: {x: [8]}\nlayers:\n  - {type: Linaer}\n").rfind("test.yaml:3:12:", 0) == 0);
  CHECK(load_error("\xef\xbb\xbfname: caf\xe9\n" + kTail) ==
        "test.yaml:1:10: error: the file is not valid UTF-8: byte 0xe9 cannot appear here");
}

TEST_CASE("columns on a line longer than the position index's stride are counted the same way") {
  std::string line = "layers: [{name: caf\xc3\xa9, type: ReLU}";
  for (int i = 0; i < 200; ++i) line += ", {type: ReLU}";
  line += ", {type: ";
  const std::size_t column = line.size();  // characters before "Linaer" (the é is two bytes), plus one
  const std::string e = error_from("inputs: {x: [8]}\n" + line + "Linaer}]\n");
  CHECK(e.rfind("test.yaml:2:" + std::to_string(column) + ": error: unknown layer type 'Linaer'", 0) == 0);
}

TEST_CASE("UTF-8 is checked strictly: surrogates, overlong forms and code points past U+10FFFF") {
  const auto bad = [](const std::string& bytes) { return load_error("name: " + bytes + "\n" + kTail); };
  CHECK(bad("\xed\xa0\x80") == "test.yaml:1:7: error: the file is not valid UTF-8: byte 0xed cannot appear here");
  CHECK(bad("\xe0\x80\xaf") == "test.yaml:1:7: error: the file is not valid UTF-8: byte 0xe0 cannot appear here");
  CHECK(bad("\xf0\x80\x80\xaf") == "test.yaml:1:7: error: the file is not valid UTF-8: byte 0xf0 cannot appear here");
  CHECK(bad("\xf4\x90\x80\x80") == "test.yaml:1:7: error: the file is not valid UTF-8: byte 0xf4 cannot appear here");
  CHECK(bad("\xc0\xaf") == "test.yaml:1:7: error: the file is not valid UTF-8: byte 0xc0 cannot appear here");
  CHECK(bad("ok\xe2\x82") == "test.yaml:1:9: error: the file is not valid UTF-8: byte 0xe2 cannot appear here");
  CHECK(bad("\xf0\x9f\x98\x80 \xed\x9f\xbf \xf4\x8f\xbf\xbf").empty());  // U+1F600, U+D7FF, U+10FFFF
}

TEST_CASE("UTF-16 and UTF-32 files are named for what they are") {
  CHECK(load_error(std::string("\xff\xfe" "i\0n\0", 6)) ==
        "test.yaml:1:1: error: the file is UTF-16 (it starts with a UTF-16 byte order mark); a spec must be UTF-8");
  CHECK(load_error(std::string("\xfe\xff\0i", 4)).find("the file is UTF-16") != std::string::npos);
  CHECK(load_error(std::string("\xff\xfe\0\0i\0\0\0", 8)).find("the file is UTF-32") != std::string::npos);
}

TEST_CASE("YAML mistakes that yaml-cpp reports obscurely, or not at all") {
  CHECK(load_error("name: \"my model\ninputs: {x: [8]}\nlayers:\n  - {type: ReLU}\n") ==
        "test.yaml:1:7: error: invalid YAML: the string opened by this '\"' is never closed");
  CHECK(load_error("name: 'it''s\n" + kTail) ==
        "test.yaml:1:7: error: invalid YAML: the string opened by this ''' is never closed");
  CHECK(load_error("name: \"a \\\" b\"\n" + kTail).empty());  // an escaped quote does not close it
  CHECK(load_error("name: 'it''s'\n" + kTail).empty());
  CHECK(load_error("inputs:\n\tx: [8]\nlayers:\n  - {type: ReLU}\n") ==
        "test.yaml:2:1: error: invalid YAML: a tab character indents this line; YAML indents with spaces only");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - type: Linear\n    out_features: 8\n   bias: false\n") ==
        "test.yaml:5:4: error: invalid YAML: 'bias' is indented by 3 spaces, but the other keys of this mapping "
        "(line 4) are indented by 4");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - &a {type: ReLU}\n  - {<<: *a}\n") ==
        "test.yaml:4:6: error: YAML merge keys ('<<') are not supported; write the layer's attributes out in full");
  CHECK(load_error(kTail + "---\n") ==
        "test.yaml:4:1: error: the file holds several YAML documents; a spec is one document");
  // Found by fuzzing (tests/fuzz/regressions/): yaml-cpp 0.7 reads a top-level ',' as endless
  // empty documents; a "- " line with nothing after it above a misplaced key threw out_of_range.
  CHECK(load_error("{inputs: {x: [8]}}, {layers: []}\n") ==
        "test.yaml:1:19: error: invalid YAML: this ',' is outside any [list] or {mapping}; quote a string that "
        "holds a comma");
  CHECK(load_error(", a\n") ==
        "test.yaml:1:1: error: invalid YAML: this ',' is outside any [list] or {mapping}; quote a string that "
        "holds a comma");
  // Empty documents each read their '---', so they are not taken for that loop.
  CHECK(load_error(kTail + "---\n---\n---\n").find("several YAML documents") != std::string::npos);
  // Nothing after the third document is read: what follows cannot change the verdict.
  CHECK(load_error(kTail + "---\nx: 1\n---\n---\n{\n") ==
        "test.yaml:5:1: error: the file holds several YAML documents; a spec is one document");
  CHECK(load_error("layers:\n  - \n  x: 1\n") == "test.yaml:3:3: error: invalid YAML: end of map not found");
}

TEST_CASE("YAML nesting deeper than yaml-cpp's limit is reported at the first node too deep") {
  const std::string depth(600, '[');
  CHECK(load_error("inputs: {x: [8]}\nlayers: " + depth + std::string(600, ']') + "\n") ==
        "test.yaml:2:507: error: invalid YAML: the document nests more than 499 levels deep");
  // 498 brackets inside the root mapping: 499 levels, the most yaml-cpp reads.
  CHECK(load_error("inputs: {x: [8]}\nlayers: " + std::string(498, '[') + std::string(498, ']') + "\n")
            .find("nests more than") == std::string::npos);
}

TEST_CASE("errors about one layer name it, in a block definition too") {
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8, out_features: 9}\n") ==
        "test.yaml:3:47: error: Linear 'fc': duplicate key 'out_features' (first given at line 3)");
  CHECK(load_error("inputs: {x: [8]}\nblocks:\n  B:\n    layers:\n      - {type: Linear, out_features: 99999999999999999999}\n"
                   "layers:\n  - {block: B}\n") ==
        "test.yaml:5:38: error: Linear '0' in block 'B': out_features: the integer 99999999999999999999 does not fit in "
        "64 bits");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - ReLU\n") ==
        "test.yaml:3:5: error: each layer must be a mapping such as {type: Conv2d, out_channels: 64, ...}, found the "
        "scalar 'ReLU' (did you mean {type: ReLU}?)");
}

TEST_CASE("names: collisions say who holds the name; unnamed layers are named by position") {
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: x, type: ReLU}\n") ==
        "test.yaml:3:12: error: ReLU 'x': the name 'x' is already used by input 'x' (line 1)");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: ReLU}\n  - {name: 0, type: ReLU}\n") ==
        "test.yaml:4:12: error: duplicate layer name '0': the unnamed layer at line 3 is already called '0' (an unnamed "
        "layer is named by its position)");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: 1, type: ReLU}\n  - {type: ReLU}\n") ==
        "test.yaml:4:5: error: duplicate layer name '1': this unnamed layer is called '1' by its position, but the layer "
        "at line 3 is already named so");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: r.1, type: ReLU}\n  - {name: r, type: Tanh, repeat: 2}\n") ==
        "test.yaml:4:12: error: Tanh 'r': 'repeat' names its instance 1 'r.1', but that name is already used by "
        "ReLU 'r.1' (line 3)");
  // After thousands of names (the table of taken names grown many times over), either input.
  const std::string many = "inputs: {a: [8], b: [8]}\nlayers:\n  - {name: r, type: ReLU, input: a, repeat: 3000}\n";
  CHECK(load_error(many + "  - {name: b, type: Tanh}\n") ==
        "test.yaml:4:12: error: Tanh 'b': the name 'b' is already used by input 'b' (line 1)");
  CHECK(load_error(many + "  - {name: a, type: Tanh}\n") ==
        "test.yaml:4:12: error: Tanh 'a': the name 'a' is already used by input 'a' (line 1)");
  CHECK(load_error(many + "  - {name: r.1234, type: Tanh}\n") ==
        "test.yaml:4:12: error: Tanh 'r.1234': the name 'r.1234' is already used by ReLU 'r.1234' (line 3)");
  CHECK(load(many + "  - {name: r.3000, type: Tanh}\n").layers.size() == 3001);
}

TEST_CASE("expansion errors that involve several places") {
  CHECK(load_error("inputs: {a: [8], b: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8, input: a, when: false}\n") ==
        "test.yaml:3:5: error: every layer is skipped by 'when: false', so there is no last layer to be the model's "
        "output; name the outputs in 'outputs'");
  CHECK(load_error("inputs: {x: [8]}\nblocks:\n  Head:\n    layers:\n      - {name: s, type: Add, inputs: [in, stem]}\n"
                   "layers:\n  - {name: stem, type: ReLU}\n  - {name: head, block: Head}\n") ==
        "test.yaml:5:43: error: Add 'head.s': no layer or input named 'stem' in block 'Head' (a block sees only its "
        "inputs and its own layers)");
  LoadOptions small;
  small.max_layers = 10;
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: r, type: ReLU, repeat: 11}\n", small) ==
        "test.yaml:3:35: error: ReLU 'r': repeat 11 would create more than 10 layers, the limit (raise it with "
        "--max-layers)");
}

TEST_CASE("--max-layers counts layers: a block instance is not one, but expanding one is bounded too") {
  LoadOptions small;
  small.max_layers = 10;
  // Ten layers, each in its own block instance: exactly the limit.
  const std::string ten = "inputs: {x: [8]}\nblocks:\n  B:\n    layers:\n      - {type: ReLU}\n"
                          "layers:\n  - {name: b, block: B, repeat: COUNT}\n";
  const auto with = [&](const std::string& count) { return std::regex_replace(ten, std::regex("COUNT"), count); };
  CHECK(load_error(with("10"), small).empty());
  CHECK(load_error(with("11"), small) ==
        "test.yaml:7:5: error: expanding this would create more than 10 layers, the limit (raise it with --max-layers)\n"
        "test.yaml:5:9: note: the limit was reached here");
  // A block of skipped layers repeated: no layer, but 16 entries per layer of the limit.
  const std::string skipped = "inputs: {x: [8]}\nblocks:\n  S:\n    layers:\n      - {type: ReLU, when: false}\n"
                              "layers:\n  - {name: s, block: S, repeat: 1000}\n  - {type: ReLU}\n";
  CHECK(load_error(skipped, small) ==
        "test.yaml:7:33: error: expanding this would expand more than 160 entries (layers, block instances and entries "
        "skipped by 'when'), the limit (16 per layer of --max-layers 10)");
}

TEST_CASE("block nesting is bounded, so expansion cannot exhaust the stack") {
  std::string yaml = "inputs: {x: [8]}\nblocks:\n";
  for (int i = 0; i < 600; ++i)
    yaml += "  B" + std::to_string(i) + ":\n    layers:\n      - {block: B" + std::to_string(i + 1) + "}\n";
  yaml += "  B600:\n    layers:\n      - {type: ReLU}\nlayers:\n  - {name: deep, block: B0}\n";
  const std::string e = load_error(yaml);
  CHECK(e.rfind("test.yaml:1807:5: error: expanding this nests blocks more than 500 levels deep, the limit\n", 0) == 0);
  CHECK(e.find("test.yaml:1502:17: note: the limit was reached here") != std::string::npos);
}

TEST_CASE("what the layers hold is bounded too: alias bombs, and repeat copying big values") {
  // Found in review during fuzzing (tests/fuzz/regressions/): both used to take gigabytes.
  std::string bomb = "description:\n  l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += "  l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ", *l" : "*l") + std::to_string(i - 1);
    bomb += "]\n";
  }
  CHECK(load_error(bomb + "inputs: {x: [8]}\nlayers:\n  - {type: ReLU, inplace: *l9}\n") ==
        "test.yaml:14:18: error: ReLU '0': inplace: YAML aliases (*name) expand this value into more values than the "
        "file has characters; write it out instead");
  // An anchored list that holds its own alias never ends (found by fuzzing: a stack overflow).
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: View, shape: &a [1, *a]}\n") ==
        "test.yaml:3:18: error: View '0': shape: YAML aliases (*name) nest this value more than 499 levels deep; "
        "does an anchored list hold its own alias?");
  // Reusing an anchored value is fine.
  CHECK(load_error("inputs: {x: [3, 8, 8]}\nlayers:\n  - {type: Conv2d, out_channels: 4, kernel_size: &k [3, 3]}\n"
                   "  - {type: Conv2d, out_channels: 4, kernel_size: *k, repeat: 2000}\n").empty());

  LoadOptions options;
  options.max_layers = 100;  // 1,600 values
  std::string list = "[1";
  for (int i = 1; i < 100; ++i) list += ", 1";
  list += "]";
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: View, shape: " + list + ", repeat: 15}\n", options).empty());
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: View, shape: " + list + ", repeat: 16}\n", options) ==
        "test.yaml:3:18: error: expanding this would create more than 1,600 attribute values and input references, the "
        "limit (16 per layer of --max-layers 100)");
}

TEST_CASE("YAML tags mean what they say; an unknown tag is an error naming it") {
  // yaml-cpp 0.7 reports "?" for a plain scalar, "!" for a quoted one, and the resolved tag
  // ("tag:yaml.org,2002:str") for `!!str`.
  const auto attr = [](const std::string& value) {
    const ModelSpec spec = load("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: " + value + "}\n");
    return spec.layers.at(0).find_attr("out_features")->value;
  };
  CHECK(attr("!!str 3").kind == Value::Kind::String);
  CHECK(attr("!!str 3").text == "3");
  CHECK(attr("!!str true").kind == Value::Kind::String);
  CHECK(attr("! 3").kind == Value::Kind::String);  // the non-specific tag: a string, as quoted
  CHECK(attr("!!int 3").integer == 3);
  CHECK(attr("!!int \"3\"").integer == 3);         // the tag, not the quotes, decides
  CHECK(attr("!!float 3").kind == Value::Kind::Float);
  CHECK(attr("!!float 3").real == 3.0);
  CHECK(attr("!!bool false").kind == Value::Kind::Bool);
  CHECK(attr("!!null ''").kind == Value::Kind::Null);
  CHECK(attr("!!null").kind == Value::Kind::Null);
  CHECK(attr("!!seq [1, !!int 2]").str() == "[1, 2]");
  CHECK(attr("\"!!str $w\"").kind == Value::Kind::String);  // quoted: the text "!!str $w", no tag
  CHECK(load("variables: {w: 4}\ninputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: !!str $w}\n")
            .layers.at(0).find_attr("out_features")->value.integer == 4);  // !!str is what quotes are: $ still computes
  CHECK(load("!!map\ninputs: !!map {x: !!seq [8]}\nlayers: !!seq\n  - !!map {!!str type: ReLU}\n").layers.size() == 1);
  const std::string known = "nnmem understands !!str, !!int, !!float, !!bool, !!null, !!seq and !!map";
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: !foo 4}\n") ==
        "test.yaml:3:44: error: Linear 'fc': out_features: unknown YAML tag '!foo'; " + known);
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: !!binary aGk=}\n") ==
        "test.yaml:3:44: error: Linear 'fc': out_features: unknown YAML tag '!!binary'; " + known);
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: [!<tag:example.com,2000:x> 4]}\n") ==
        "test.yaml:3:45: error: Linear 'fc': out_features: unknown YAML tag 'tag:example.com,2000:x'; " + known);
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {name: fc, !foo type: Linear, out_features: 4}\n") ==
        "test.yaml:3:16: error: Linear 'fc': unknown YAML tag '!foo'; " + known);
  CHECK(load_error("description: !foo x\ninputs: {x: [8]}\nlayers:\n  - {type: ReLU}\n") ==
        "test.yaml:1:14: error: description: unknown YAML tag '!foo'; " + known);
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: !!bool 4}\n") ==
        "test.yaml:3:34: error: Linear '0': out_features: the YAML tag '!!bool' needs true or false, found the scalar '4'");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: !!null 4}\n") ==
        "test.yaml:3:34: error: Linear '0': out_features: the YAML tag '!!null' needs nothing (null), found the scalar '4'");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: !!map [4]}\n") ==
        "test.yaml:3:34: error: Linear '0': out_features: the YAML tag '!!map' needs a mapping, found a list");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: !!str [4]}\n") ==
        "test.yaml:3:34: error: Linear '0': out_features: the YAML tag '!!str' needs a string, found a list");
  CHECK(load_error("inputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: !!int 99999999999999999999}\n") ==
        "test.yaml:3:34: error: Linear '0': out_features: the integer 99999999999999999999 does not fit in 64 bits");
}

TEST_CASE("a layer repeated through an alias stands where the alias is") {
  // yaml-cpp gives an alias node its anchor's position; the loader knows the alias's own.
  const ModelSpec spec = load("inputs: {x: [8]}\nlayers:\n  - &r {type: ReLU}\n  - {type: Linear, out_features: 8}\n  - *r\n");
  REQUIRE(spec.layers.size() == 3);
  CHECK(spec.layers[0].loc.line == 3);
  CHECK(spec.layers[2].loc.line == 5);
  CHECK(spec.layers[2].loc.column == 5);
  CHECK(load_error("inputs: {x: [8]}\nblocks:\n  B:\n    layers:\n      - &l {name: lin, type: Linear, out_features: 8}\n"
                   "      - *l\nlayers:\n  - {name: b, block: B}\n") ==
        "test.yaml:6:9: error: duplicate layer name 'lin' (first used at line 5)");
}

TEST_CASE("--input replaces an input's per-sample shape, sizes or $expressions of the variables") {
  const std::string yaml = "variables: {len: 512}\ninputs: {tokens: [$len, 64], mask: {shape: [1], dtype: bool}}\n"
                           "layers:\n  - {type: ReLU, inputs: [tokens]}\n  - {type: Identity, inputs: [mask]}\n"
                           "outputs: [0, 1]\n";
  LoadOptions o;
  o.input_shapes = {{"tokens", "[1024, 32]"}};
  CHECK(load(yaml, o).inputs[0].shape == Shape{1024, 32});
  o.input_shapes = {{"tokens", "$len * 2, 8"}, {"mask", "[4]"}};
  const ModelSpec spec = load(yaml, o);
  CHECK(spec.inputs[0].shape == Shape{1024, 8});
  CHECK(spec.inputs[1].shape == Shape{4});
  CHECK(spec.inputs[1].dtype == DType::Bool);  // only the shape is replaced
  o.input_shapes = {{"token", "[8]"}};
  CHECK(load_error(yaml, o) == "test.yaml:1:1: error: --input token=[8]: the spec has no input 'token' (did you mean 'tokens'?)");
  o.input_shapes = {{"tokens", "[8, 0]"}};
  CHECK(load_error(yaml, o) == "test.yaml:2:10: error: --input tokens: a size in the shape of input 'tokens' must be at least 1, found 0");
  o.input_shapes = {{"tokens", "[8, [2]]"}};
  CHECK(load_error(yaml, o) == "test.yaml:2:10: error: --input tokens=[8, [2]]: expected a list of sizes per sample, such as [3, 224, 224]");
  o.input_shapes = {{"tokens", "[]"}};
  CHECK(load_error(yaml, o).find("expected a list of sizes per sample") != std::string::npos);
  o.input_shapes = {{"mask", "[2]"}, {"mask", "[3]"}};
  CHECK(load_error(yaml, o) == "test.yaml:2:30: error: --input mask=[3]: input 'mask' is already given by --input; give each input once");
}
