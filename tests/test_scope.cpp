// Module names that are not the layers' own: `scope` (Hugging Face's base_model_prefix, chosen by
// a variable), a tied Parameter no layer reads (a module holding a tied weight it never calls), and
// a removed entry that reads nothing. docs/spec.md, *Blocks* and *Layers*.
#include "helpers.hpp"
#include "nnmem/checkpoint.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

using Sets = std::vector<std::pair<std::string, std::string>>;

ModelSpec scoped_load(const std::string& yaml, const Sets& set = {}) {
  LoadOptions o;
  o.overrides = set;
  return parse_spec(yaml, "test.yaml", o);
}

std::string scoped_error(const std::string& yaml, const Sets& set = {}) {
  try {
    build_graph(scoped_load(yaml, set));
  } catch (const Error& e) {
    return e.format();
  }
  return {};
}

std::vector<std::string> state_names(const ModelSpec& spec) {
  std::vector<std::string> out;
  for (const StateTensor& t : state_dict_tensors(build_graph(spec))) out.push_back(t.name);
  return out;
}

// A base model (emb, enc) and a head that reads it, the base under `base.` when `head` is set.
const std::string kHeaded =
    "variables: {head: true}\n"
    "inputs: {x: [8]}\n"
    "scope: {name: \"$head ? 'base' : ''\", members: [emb, enc]}\n"
    "register: {enc: [b, a]}\n"
    "modules: [enc.unused]\n"
    "layers:\n"
    "  - {name: emb.fc, type: Linear, out_features: 8}\n"
    "  - {name: enc.a, type: Linear, out_features: 8}\n"
    "  - {name: enc.b, type: Linear, out_features: 8}\n"
    "  - {name: cls.fc, type: Linear, input: enc.a, out_features: 8, when: $head, tie: {bias: enc.b.bias}}\n"
    "  - {name: out, type: Add, inputs: [cls.fc, enc.b]}\n";

}  // namespace

TEST_CASE("scope: a variable puts top-level members in a submodule; references keep the written names") {
  const ModelSpec headed = scoped_load(kHeaded);
  std::vector<std::string> names;
  for (const auto& l : headed.layers) names.push_back(l.name);
  CHECK(names == std::vector<std::string>{"base.emb.fc", "base.enc.a", "base.enc.b", "cls.fc", "out"});
  CHECK(headed.layers[3].inputs == std::vector<std::string>{"base.enc.a"});
  CHECK(headed.layers[3].links().ties.at(0).layer == "base.enc.b");
  REQUIRE(headed.registrations.size() == 1);
  CHECK(headed.registrations[0].module == "base.enc");
  CHECK(headed.unnamed_modules == std::vector<std::string>{"base.enc.unused"});
  CHECK(state_names(headed) == std::vector<std::string>{"base.emb.fc.weight", "base.emb.fc.bias", "base.enc.a.weight",
                                                        "base.enc.a.bias", "base.enc.b.weight", "base.enc.b.bias",
                                                        "cls.fc.weight", "cls.fc.bias"});
  // An empty name: the members are the model's own.
  const ModelSpec bare = scoped_load(kHeaded, {{"head", "false"}});
  CHECK(bare.layers.front().name == "emb.fc");
  CHECK(bare.registrations[0].module == "enc");
  CHECK(bare.unnamed_modules == std::vector<std::string>{"enc.unused"});
}

TEST_CASE("scope: errors are located") {
  const std::string tail = "inputs: {x: [8]}\nlayers:\n  - {name: emb.fc, type: Linear, out_features: 8}\n";
  CHECK(scoped_error("scope: {name: base, members: [emd]}\n" + tail) ==
        "test.yaml:1:31: error: scope: members: 'emd' is no top-level member (a layer's name up to its first dot) (did you "
        "mean 'emb'?)");
  CHECK(scoped_error("scope: {name: base, members: [emb, emb]}\n" + tail) ==
        "test.yaml:1:36: error: scope: members: 'emb' is listed twice");
  CHECK(scoped_error("scope: {name: 3, members: [emb]}\n" + tail) ==
        "test.yaml:1:15: error: scope: name must be a module name (bert) or '', found the integer 3");
  CHECK(scoped_error("scope: {name: base., members: [emb]}\n" + tail) ==
        "test.yaml:1:15: error: scope: name must be a module name, dotted or not (bert, model.encoder), or '', found 'base.'");
  CHECK(scoped_error("scope: {members: [emb]}\n" + tail) ==
        "test.yaml:1:1: error: the spec: 'scope' needs a 'name' (the submodule, '' for none) and 'members' (the top-level "
        "members in it); found no 'name'");
  CHECK(scoped_error("scope: {name: base, members: [emb], prefix: x}\n" + tail).find("test.yaml:1:37: error:") == 0);
  CHECK(scoped_error("scope: {name: base, members: [emb]}\nregister: [emb, head]\n" + tail +
                   "  - {name: head, type: Linear, out_features: 2}\n") ==
        "test.yaml:2:12: error: register: 'emb' is a member of the scope 'base', not of the model; the model's own list cannot "
        "order it");
}

TEST_CASE("a tied Parameter no layer reads: the module holding a tied weight, counted once") {
  const ModelSpec spec = scoped_load(
      "inputs: {ids: {shape: [4], dtype: int64}}\n"
      "layers:\n"
      "  - {name: shared, type: Embedding, num_embeddings: 10, embedding_dim: 6}\n"
      "  - {name: encoder.embed_tokens.weight, type: Parameter, inputs: [], shape: [10, 6], tie: {value: shared.weight}}\n"
      "  - {name: fc, type: Linear, input: shared, out_features: 3}\n");
  const Graph g = build_graph(spec);
  CHECK(estimate(g).totals.params == 60 + 18 + 3);
  const auto state = state_dict_tensors(g);
  REQUIRE(state.size() == 4);
  CHECK(state[1].name == "encoder.embed_tokens.weight");
  CHECK(state[1].same_as == 0);
  // Untied and trainable, it would have no gradient: still an error.
  CHECK(scoped_error("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8}\n"
                   "  - {name: p, type: Parameter, inputs: [], shape: [8]}\n  - {name: out, type: ReLU, input: fc}\n")
            .find("test.yaml:4:5: error: the output of Parameter 'p' is never used") == 0);
}

TEST_CASE("an entry that reads nothing, removed by when or repeat, stands for no value") {
  const std::string yaml =
      "variables: {bias: false}\n"
      "inputs: {x: [8]}\n"
      "layers:\n"
      "  - {name: fc, type: Linear, out_features: 8}\n"
      "  - {name: extra, type: Parameter, inputs: [], shape: [8], when: $bias, trainable: false}\n"
      "  - {name: out, type: ReLU, input: fc}\n";
  CHECK(scoped_load(yaml).layers.size() == 2);
  CHECK(scoped_error(yaml + "  - {name: sum, type: Add, inputs: [out, extra]}\n") ==
        "test.yaml:7:42: error: Add 'sum': 'extra' is removed (its when or repeat, line 5) and reads nothing, so it stands "
        "for no value");
}
