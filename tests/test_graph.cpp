// The graph's whole-model checks and its limits: tensors of at most kMaxRank dimensions, sizes
// that fit in 64 bits (naming the tensor that does not), and in-place writes over a tensor an
// earlier layer keeps for backward — found through an index, not a scan of every earlier layer;
// and which tensors autocast casts.
#include "../src/graph/result_pool.hpp"
#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("a layer whose output would pass kMaxRank dimensions is refused, naming the instance") {
  const std::string e = error_from("inputs: {x: [16]}\nlayers:\n  - {name: u, type: Unsqueeze, dim: 1, repeat: 1000}\n");
  CHECK(e == "test.yaml:3:5: error: Unsqueeze 'u.62': the output would have 65 dimensions; nnmem supports at most 64");
}

TEST_CASE("a layer whose output would be a 0-D tensor is refused, whichever rule made it") {
  // Found while fuzzing (tests/fuzz/regressions/squeeze_to_scalar.yaml): the View after it read
  // the missing batch dimension out of bounds.
  const std::string e = error_from("inputs: {x: [1]}\nlayers:\n  - {type: Squeeze, dim: 1}\n"
                                   "  - {name: sq, type: Squeeze, dim: 0}\n  - {type: View, shape: [-1]}\n");
  CHECK(e == "test.yaml:4:5: error: Squeeze 'sq': the output would be a 0-D tensor (a scalar), made from the input [1]; "
             "nnmem's tensors keep at least one dimension");
  // [3, 4] -> [3, 1] -> [3]: one dimension left is enough.
  CHECK(error_from("inputs: {x: [4]}\nlayers:\n  - {type: Linear, out_features: 1}\n  - {type: Squeeze, dim: -1}\n",
                   {.graph = {.batch = 3}})
            .empty());
}

TEST_CASE("an input of more than kMaxRank dimensions (batch included) is refused") {
  std::string shape;
  for (int i = 0; i < 64; ++i) shape += (i ? ", " : "") + std::string("1");
  CHECK(error_from("inputs: {x: [" + shape + "]}\nlayers:\n  - {type: ReLU}\n") ==
        "test.yaml:1:10: error: input 'x': the tensor would have 65 dimensions; nnmem supports at most 64");
}

TEST_CASE("a parameter too large in bytes is named") {
  // 2^30 x 2^31 weights fit in 64 bits as a count, not as float32 bytes.
  CHECK(error_from("inputs: {x: [2147483648]}\nlayers:\n  - {name: fc, type: Linear, out_features: 1073741824}\n") ==
        "test.yaml:3:5: error: Linear 'fc': the weight [1073741824, 2147483648] is too large (size overflow: "
        "2305843009213693952 * 4 does not fit in 64 bits)");
}

TEST_CASE("an in-place write over a kept tensor names the first layer that keeps it") {
  const std::string e = error_from(
      "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8}\n"
      "  - {name: gate, type: Sigmoid}\n  - {name: tanh, type: Tanh, input: gate}\n"
      "  - {name: act, type: ReLU, inplace: true, input: gate}\n  - {name: sum, type: Add, inputs: [act, tanh]}\n");
  CHECK(e == "test.yaml:6:5: error: ReLU 'act' works in place, but it would overwrite the output that Sigmoid 'gate' "
             "keeps for its backward pass; PyTorch would fail in backward. Set inplace: false\n"
             "test.yaml:4:5: note: Sigmoid 'gate' is here");
}

TEST_CASE("a long chain of in-place layers builds, each checked in constant time") {
  const Graph g = graph_from("inputs: {x: [16]}\nlayers:\n  - {type: Linear, out_features: 16}\n"
                             "  - {name: d, type: Dropout, p: 0.1, inplace: true, repeat: 20000}\n");
  CHECK(g.nodes.size() == 20001);
  CHECK(g.storages.size() == 2);  // the input, and the Linear's output every Dropout overwrites
}

TEST_CASE("autocast never casts float64 tensors: a float64 model runs in float64 under --amp") {
  // torch 1.13 and 2.13, torch.autocast("cpu", torch.bfloat16) around a .double() model: conv,
  // linear, softmax, cross_entropy and mse all return float64 and keep float64 tensors
  // (at::autocast::is_eligible excludes double); nothing is copied.
  const std::string spec = R"(
dtype: float64
inputs: {x: [3, 8, 8]}
layers:
  - {name: conv, type: Conv2d, out_channels: 4, kernel_size: 3}
  - {name: flatten, type: Flatten}
  - {name: fc, type: Linear, out_features: 5}
  - {name: soft, type: LogSoftmax, dim: 1}
loss: cross_entropy
)";
  for (const Device device : {Device::Cuda, Device::Cpu}) {
    CAPTURE(device == Device::Cpu);
    GraphOptions amp;
    amp.amp = DType::BFloat16;
    amp.device = device;
    const Graph g = graph_from(spec, amp);
    for (const Node& node : g.nodes) {
      CHECK(g.values[static_cast<std::size_t>(node.outputs.front())].type.dtype == DType::Float64);
      CHECK(std::all_of(node.input_casts.begin(), node.input_casts.end(), [](int c) { return c < 0; }));
      CHECK(std::all_of(node.param_casts.begin(), node.param_casts.end(), [](int c) { return c < 0; }));
    }
    EstimateOptions with, without;
    with.graph = amp;
    without.graph.device = device;
    for (const auto loss : {LossKind::CrossEntropy, LossKind::Mse}) {
      with.step.loss = without.step.loss = loss;
      const Estimate a = estimate_from(spec, with), b = estimate_from(spec, without);
      CHECK(a.totals.peak_bytes == b.totals.peak_bytes);
      CHECK(a.totals.saved_bytes == b.totals.saved_bytes);
    }
  }
}

TEST_CASE("autocast's copy of a transposed tensor stays transposed; of a slice, it is contiguous") {
  // .to(dtype) preserves the strides of a dense tensor: HF LLaMA's query, a [B, T, H, D]
  // projection transposed and rotated in float32, is cast to bfloat16 for attention still
  // transposed, so the CPU flash kernel's output is too and .transpose(1, 2).contiguous() copies
  // nothing (validation/fixtures/torch-2.13/hf_llama_sdpa.json, bf16 runs: 16,384 bytes, 8,192
  // per layer, were kept twice). A strided slice's copy comes out contiguous.
  const std::string spec = R"(
inputs: {x: [8, 64]}
layers:
  - {name: heads, type: View, shape: [8, 4, 16], functional: true}
  - {name: rope, type: Transpose, dim0: 1, dim1: 2, functional: true}
  - {name: sdpa, type: ScaledDotProductAttention, inputs: [rope, rope, rope], kernel: flash, functional: true}
  - {name: merge, type: Transpose, dim0: 1, dim1: 2, functional: true}
  - {name: contiguous, type: Contiguous, functional: true}
  - {name: half, type: Slice, input: rope, dim: 3, end: 8, functional: true}
  - {name: sdpa_half, type: ScaledDotProductAttention, inputs: [half, half, half], kernel: flash, functional: true}
  - {name: merge_half, type: Transpose, dim0: 1, dim1: 2, functional: true}
  - {name: contiguous_half, type: Contiguous, functional: true}
outputs: [contiguous, contiguous_half]
)";
  GraphOptions amp;
  amp.amp = DType::BFloat16;
  amp.device = Device::Cpu;
  const Graph g = graph_from(spec, amp);
  const auto node = [&](const std::string& name) -> const Node& {
    for (const Node& n : g.nodes)
      if (g.layer(n).name == name) return n;
    throw std::logic_error("no layer " + name);
  };
  CHECK(node("sdpa").input_casts.front() >= 0);  // the float32 query is cast
  CHECK(node("sdpa").result->layout == Layout::Swapped12);
  CHECK(node("contiguous").result->alias == Alias::View);
  CHECK(node("sdpa_half").result->layout == Layout::Contiguous);
  CHECK(node("contiguous_half").result->alias != Alias::View);
}

TEST_CASE("CPU autocast: 1.13 runs ConvTranspose in float32, 2.13 in bfloat16; a cast keeps channels-last") {
  // validation/fixtures: unet_valid's ConvTranspose2d under bfloat16 keeps a float32 input and
  // weight on 1.13 (its fp32 list), a bfloat16 copy of the weight on 2.13.
  const std::string spec = R"(
inputs: {x: [8, 4, 4]}
layers:
  - {name: up, type: ConvTranspose2d, out_channels: 4, kernel_size: 2, stride: 2}
  - {name: norm, type: LayerNorm2d}
  - {name: down, type: Conv2d, out_channels: 8, kernel_size: 2, stride: 2}
)";
  for (const std::string version : {"1.13", "2.13"}) {
    CAPTURE(version);
    GraphOptions amp;
    amp.amp = DType::BFloat16;
    amp.device = Device::Cpu;
    amp.torch = find_torch_profile(version);
    const Graph g = graph_from(spec, amp);
    const bool old = version == "1.13";
    CHECK(g.values[static_cast<std::size_t>(g.nodes[0].outputs.front())].type.dtype ==
          (old ? DType::Float32 : DType::BFloat16));
    CHECK((g.nodes[0].param_casts[0] >= 0) == !old);
    // the convolution after LayerNorm2d reads a channels-last tensor: on 1.13 a bfloat16 copy of
    // LayerNorm2d's float32 output, itself channels-last
    CHECK((g.nodes[2].input_casts[0] >= 0) == old);
    CHECK(g.nodes[2].result->params[0].grad_restrided);
  }
}

TEST_CASE("unknown layer types get suggestions by meaning, not only by spelling") {
  CHECK(layer_type_hint("Cat") == "; did you mean 'Concat'?");                       // torch.cat
  CHECK(layer_type_hint("Conv2dTranspose") == "; did you mean 'ConvTranspose2d'?");  // the words in another order
  CHECK(layer_type_hint("Dense") == "; did you mean 'Linear'?");                     // Keras
  CHECK(layer_type_hint("GlobalAveragePooling2D") == "; did you mean 'AdaptiveAvgPool2d'?");
  CHECK(layer_type_hint("Swish") == "; did you mean 'SiLU'?");                       // not 'Mish', one letter away
  CHECK(layer_type_hint("max_pool2d") == "; did you mean 'MaxPool2d'?");              // torch.nn.functional
  CHECK(layer_type_hint("BatchNormalization") == "; did you mean 'BatchNorm1d', 'BatchNorm2d' or 'BatchNorm3d'?");
  CHECK(layer_type_hint("Linaer") == "; did you mean 'Linear'?");                    // a typo, as before
  CHECK(layer_type_hint("RReLU").empty());                                           // a PyTorch layer nnmem lacks: not 'ReLU'
  CHECK(layer_type_hint("EmbeddingBag").empty());                                    // not 'Embedding'
  CHECK(layer_type_hint("Qwerty").empty());
  CHECK(error_from("inputs: {x: [3, 8, 8]}\nlayers:\n  - {type: Conv2dTranspose, out_channels: 4, kernel_size: 3}\n") ==
        "test.yaml:3:12: error: unknown layer type 'Conv2dTranspose'; did you mean 'ConvTranspose2d'? (`nnmem layers` lists the known types)");
}

TEST_CASE("a frozen Parameter that forward never reads is counted, without gradient or activation") {
  const std::string yaml =
      "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 4}\n"
      "  - {name: dfl.weight, type: Parameter, inputs: [], shape: [1, 16, 1, 1], trainable: false}\n"
      "outputs: [fc]\n";
  const Estimate with = estimate_from(yaml);
  const Estimate without = estimate_from(yaml.substr(0, yaml.find("  - {name: dfl")) + "outputs: [fc]\n");
  CHECK(with.totals.params == without.totals.params + 16);
  CHECK(with.totals.non_trainable_params == 16);
  CHECK(with.totals.grad_bytes == without.totals.grad_bytes);
  CHECK(with.totals.peak_bytes == without.totals.peak_bytes + 64);
}

TEST_CASE("parameters are in model.parameters()' order: own tensors first, then members as `register` lists them") {
  const std::string blocks = R"(
inputs: {x: [4]}
blocks:
  C2f:
    REGISTER
    layers:
      - {name: cv1, type: Linear, out_features: 4}
      - {name: m.0, type: Linear, out_features: 4}
      - {name: m.1, type: Linear, out_features: 4}
      - {name: cv2, type: Linear, out_features: 4, bias: false}
layers:
  - {name: emb.proj, type: Linear, out_features: 4}
  - {name: emb.token, type: Parameter, inputs: [], shape: [1, 4]}
  - {name: emb.add, type: Add, inputs: [emb.proj, emb.token], functional: true}
  - {name: c, block: C2f}
)";
  const auto names = [&](const std::string& line) {
    std::string yaml = blocks;
    yaml.replace(yaml.find("REGISTER"), 8, line);
    const Graph g = build_graph(parse_spec(yaml, "test.yaml"));
    std::vector<std::string> out;
    for (const Parameter& p : g.parameters) out.push_back(g.param_name(p));
    for (const Node& n : g.nodes)  // each node still points at its own tensors
      for (std::size_t k = 0; k < n.params.size(); ++k)
        CHECK(g.param_name(g.parameters[static_cast<std::size_t>(n.params[k])]) == g.layer(n).name + "." + n.result->params[k].name);
    return out;
  };
  // ViTEmbeddings' cls_token, a tensor of the module itself, comes before its children's.
  const std::vector<std::string> head = {"emb.token.value", "emb.proj.weight", "emb.proj.bias", "c.cv1.weight", "c.cv1.bias"};
  std::vector<std::string> forward = head, registered = head;
  for (const char* p : {"c.m.0.weight", "c.m.0.bias", "c.m.1.weight", "c.m.1.bias", "c.cv2.weight"}) forward.push_back(p);
  for (const char* p : {"c.cv2.weight", "c.m.0.weight", "c.m.0.bias", "c.m.1.weight", "c.m.1.bias"}) registered.push_back(p);
  CHECK(names("description: forward's order") == forward);
  CHECK(names("register: [cv1, cv2, m]") == registered);
  // A module that is no block, here a ModuleList run backwards: the top level's mapping form.
  const Graph up = build_graph(parse_spec("inputs: {x: [4]}\nregister: {up: [0, 1]}\nlayers:\n"
                                          "  - {name: up.1.fc, type: Linear, out_features: 4}\n"
                                          "  - {name: up.0.fc, type: Linear, out_features: 4}\n",
                                          "test.yaml"));
  CHECK(up.param_name(up.parameters.front()) == "up.0.fc.weight");
  CHECK(up.param_name(up.parameters.back()) == "up.1.fc.bias");
}

TEST_CASE("layers whose rules give equal results share one result; unequal ones and programs do not") {
  const Graph g = graph_from("inputs: {x: [8]}\nblocks:\n  B:\n    layers:\n      - {name: fc, type: Linear, out_features: 8}\n"
                             "      - {name: act, type: ReLU}\n"
                             "layers:\n  - {name: b, block: B, repeat: 3}\n  - {name: head, type: Linear, out_features: 4}\n");
  REQUIRE(g.nodes.size() == 7);
  CHECK(g.nodes[2].result == g.nodes[4].result);  // b.1.fc and b.2.fc: one copy
  CHECK(g.nodes[0].result != g.nodes[2].result);  // b.0.fc's input needs no gradient: it keeps less
  CHECK(g.nodes[1].result == g.nodes[3].result);  // the ReLUs
  CHECK(g.nodes[1].result == g.nodes[5].result);
  CHECK(g.nodes[2].result != g.nodes[6].result);  // head: another output
  CHECK(g.nodes[6].result->outputs[0].shape == Shape{1, 4});
  // Each node still has its own parameters: sharing a result shares no tensor.
  CHECK(g.parameters.size() == 8);
  CHECK(g.nodes[0].params[0] != g.nodes[2].params[0]);

  detail::ResultPool pool;
  LayerDef def, other;
  def.type = "T";
  other.type = "U";
  LayerResult r;
  r.outputs = {TensorType{{2, 3}}};
  const auto first = pool.share(&def, LayerResult(r));
  CHECK(pool.share(&def, LayerResult(r)) == first);
  CHECK(pool.share(&other, LayerResult(r)) != first);  // pooled per layer type
  r.macs = 1;
  CHECK(pool.share(&def, LayerResult(r)) != first);
  r.macs = 0;
  r.backward_program = [](const std::vector<bool>&) { return std::vector<BackwardEvent>{}; };
  const auto with_program = pool.share(&def, LayerResult(r));
  CHECK(with_program != first);
  CHECK(pool.share(&def, LayerResult(r)) != with_program);
}
