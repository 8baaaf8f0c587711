// Padding layers (layers/padding.cpp) against PyTorch 2.13 and 1.13 (CPU): shapes, what backward
// keeps (saved_tensors_hooks), circular padding's backward temporaries (the profiler), the
// errors F.pad raises, and which types 1.13 lacks (validation/ops_saved_zoo.md).
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Padding: shapes, in PyTorch's order (last dimension first)") {
  // ZeroPad2d((1, 2, 3, 4)) on [2, 3, 8, 8] -> [2, 3, 15, 11]; ConstantPad2d(-1, 0.5) -> [2, 3, 6, 6]
  CHECK(out_shape(run_rule("{type: ZeroPad2d, padding: [1, 2, 3, 4]}", {tensor({2, 3, 8, 8})})) == "[2, 3, 15, 11]");
  CHECK(out_shape(run_rule("{type: ConstantPad2d, padding: -1, value: 0.5}", {tensor({2, 3, 8, 8})})) == "[2, 3, 6, 6]");
  CHECK(out_shape(run_rule("{type: ZeroPad1d, padding: 2}", {tensor({2, 3, 8})})) == "[2, 3, 12]");
  CHECK(out_shape(run_rule("{type: ConstantPad3d, padding: 1, value: 0}", {tensor({2, 3, 4, 4, 4})})) == "[2, 3, 6, 6, 6]");
  CHECK(out_shape(run_rule("{type: ReflectionPad2d, padding: 2}", {tensor({2, 3, 8, 8})})) == "[2, 3, 12, 12]");
  CHECK(out_shape(run_rule("{type: ReplicationPad3d, padding: [1, 1, 0, 0, 2, 2]}", {tensor({2, 3, 4, 4, 4})})) ==
        "[2, 3, 8, 4, 6]");
  CHECK(out_shape(run_rule("{type: CircularPad1d, padding: [4, 4]}", {tensor({1, 2, 4})})) == "[1, 2, 12]");
  // negative padding crops, in every mode: F.pad(x [1, 2, 4], (-1, -1), mode) -> [1, 2, 2]
  for (const std::string type : {"ReflectionPad1d", "ReplicationPad1d", "CircularPad1d", "ZeroPad1d"})
    CHECK(out_shape(run_rule("{type: " + type + ", padding: -1}", {tensor({1, 2, 4})})) == "[1, 2, 2]");
  // constant padding pads the last dimensions of any tensor
  CHECK(out_shape(run_rule("{type: ZeroPad1d, padding: 1}", {tensor({2, 3, 4, 5})})) == "[2, 3, 4, 7]");
  // the others take [C, *] or [N, C, *]
  CHECK(out_shape(run_rule("{type: ReflectionPad2d, padding: 1}", {tensor({3, 8, 8})})) == "[3, 10, 10]");
}

TEST_CASE("Padding: what backward keeps and allocates") {
  // ConstantPadNdBackward0 keeps nothing; ReflectionPad2DBackward0.self / ReplicationPad2DBackward0.self
  // keep the input; circular: CopySlices, nothing kept (1.13 and 2.13)
  for (const Context& ctx : {kCpu, kCpu113}) {
    CHECK(saved_of(run_rule("{type: ZeroPad2d, padding: 1}", {tensor({2, 3, 8, 8})}, ctx)).empty());
    CHECK(saved_of(run_rule("{type: ConstantPad1d, padding: 2, value: 0.5}", {tensor({2, 3, 8})}, ctx)).empty());
    CHECK(saved_of(run_rule("{type: ReflectionPad2d, padding: 2}", {tensor({2, 3, 8, 8})}, ctx)) == "input0");
    CHECK(saved_of(run_rule("{type: ReflectionPad3d, padding: 1}", {tensor({2, 3, 4, 4, 4})}, ctx)) == "input0");
    CHECK(saved_of(run_rule("{type: ReplicationPad1d, padding: 2}", {tensor({2, 3, 8})}, ctx)) == "input0");
  }
  // no gradient needed: no node
  CHECK(saved_of(run_rule("{type: ReflectionPad2d, padding: 2}", {tensor({2, 3, 8, 8}, false)})).empty());
  // 2.13 circular backward, its output's gradient handed on by the layer after it (y * 2): each
  // CopySlices clones the gradient and frees the one it got; the last clone lives while the
  // input's gradient is made (CircularPad2d(2) on [2, 3, 8, 8]: +3456 +1536 above the incoming
  // gradient; 1-D on [4, 8, 64]: +8704 +8192; 3-D: +5184 +1536)
  auto r = run_rule("{type: CircularPad2d, padding: 2}", {tensor({2, 3, 8, 8})});
  CHECK(saved_of(r).empty());
  CHECK(scratch_of(r.backward_scratch) == "[2, 3, 12, 12]:float32");
  CHECK(run_rule("{type: ReflectionPad2d, padding: 2}", {tensor({2, 3, 8, 8})}).backward_scratch.empty());
}

TEST_CASE("Padding: the types 1.13 lacks are refused by the graph under --torch 1.13") {
  // hasattr(torch.nn, 'ZeroPad1d') etc. is False on 1.13
  EstimateOptions torch113;
  torch113.graph.torch = find_torch_profile("1.13");
  torch113.graph.mode = Mode::Eval;
  for (const std::string type : {"ZeroPad1d", "ZeroPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"}) {
    CAPTURE(type);
    const std::string spec = "inputs: {x: [3, 4, 4, 4]}\nlayers:\n  - {name: pad, type: " + type + ", padding: 1}\n";
    CHECK(error_from(spec, torch113) == "test.yaml:3:23: error: " + type + " 'pad': PyTorch 1.13 has no nn." + type +
                                            " (--torch 2.13 has it)");
    CHECK(error_from(spec, EstimateOptions{.graph = {.mode = Mode::Eval}}).find("has no nn.") == std::string::npos);
  }
  CHECK(rule_error_in(kCpu113, "{type: ZeroPad2d, padding: 1}", {tensor({2, 3, 4, 4})}).empty());
}

TEST_CASE("Padding: errors F.pad raises") {
  // "Padding size should be less than the corresponding input dimension, but got: padding (4, 4) at dimension 2 of input [1, 2, 4]"
  CHECK(rule_error("{type: ReflectionPad1d, padding: 4}", {tensor({1, 2, 4})}) ==
        "reflection padding (4, 4) must be smaller than the input length 4 of [1, 2, 4]");
  CHECK(rule_error("{type: ReflectionPad2d, padding: [1, 1, 5, 0]}", {tensor({1, 2, 5, 8})}) ==
        "reflection padding (5, 0) must be smaller than the input height 5 of [1, 2, 5, 8]");
  // "Padding value causes wrapping around more than once."
  CHECK(rule_error("{type: CircularPad1d, padding: 5}", {tensor({1, 2, 4})}) ==
        "circular padding (5, 5) must be at most the input length 4 of [1, 2, 4] (it would wrap around more than once)");
  // replication: any width (F.pad(x [1, 2, 4], (5, 5), 'replicate') -> [1, 2, 14])
  CHECK(out_shape(run_rule("{type: ReplicationPad1d, padding: 5}", {tensor({1, 2, 4})})) == "[1, 2, 14]");
  // cropping everything: PyTorch gives an empty tensor for (-2, -2), an error for (-2, -3)
  CHECK(rule_error("{type: ZeroPad1d, padding: -2}", {tensor({1, 2, 4})}) ==
        "padding (-2, -2) leaves nothing of the input length 4 of [1, 2, 4]");
  CHECK(rule_error("{type: ReflectionPad2d, padding: 1}", {tensor({1, 2, 3, 4, 5})}) ==
        "expected a 3-D to 4-D input [C, H, W] or [N, C, H, W], found 5-D [1, 2, 3, 4, 5]");
  CHECK_HAS(one_layer_error("{type: ConstantPad2d, padding: 1}", {2, 4, 4}), "ConstantPad2d '0': needs attribute 'value'");
  CHECK_HAS(one_layer_error("{type: ZeroPad2d, padding: [1, 2, 3]}", {2, 4, 4}),
            "padding must be an integer or a list of 4 integers, found");
}

TEST_CASE("Padding: the dtypes each version's kernels take") {
  // F.pad on the CPU: 2.13 pads int64 and float16 in every mode, bool only with constant and
  // circular padding; 1.13's reflection_pad1d/2d and replication_pad1d/2d/3d take float32 and
  // float64 only ("reflection_pad2d" not implemented for 'BFloat16'), reflection_pad3d any float
  const auto in = [](DType dtype) { return std::vector<InputTensor>{tensor({1, 2, 4, 4}, false, dtype)}; };
  CHECK(rule_error("{type: ReflectionPad2d, padding: 1}", in(DType::Int64)).empty());
  CHECK(rule_error("{type: ReplicationPad2d, padding: 1}", in(DType::Float16)).empty());
  CHECK(rule_error("{type: ReflectionPad2d, padding: 1}", in(DType::Bool)) == "reflection_pad2d does not take bool");
  CHECK(rule_error("{type: ZeroPad2d, padding: 1}", in(DType::Bool)).empty());
  CHECK(rule_error("{type: CircularPad2d, padding: 1}", in(DType::Bool)).empty());
  CHECK(rule_error_in(kCpu113, "{type: ReflectionPad2d, padding: 1}", in(DType::Int64)) ==
        "PyTorch 1.13's reflection_pad2d is not implemented for int64");
  CHECK(rule_error_in(kCpu113, "{type: ReplicationPad2d, padding: 1}", in(DType::BFloat16)) ==
        "PyTorch 1.13's replication_pad2d on the CPU is not implemented for bfloat16");
  CHECK(rule_error_in(kCpu113, "{type: ReflectionPad3d, padding: 1}", {tensor({1, 2, 4, 4, 4}, false, DType::Float16)}).empty());
  CHECK(rule_error_in(kCpu113, "{type: ReflectionPad2d, padding: 1}", in(DType::Float64)).empty());
  const Context cuda113{Mode::Train, Device::Cuda, DType::Float16, std::nullopt, find_torch_profile("1.13")};
  CHECK(rule_error_in(cuda113, "{type: ReflectionPad2d, padding: 1}", in(DType::Float16)).empty());
}

TEST_CASE("Padding: autocast and the graph") {
  // CPU autocast, bfloat16 input: reflection_pad2d's output is float32, reflection_pad3d's bfloat16
  EstimateOptions o;
  o.graph.device = Device::Cpu;
  o.graph.amp = DType::BFloat16;
  const std::string spec =
      "inputs: {x: [3, 8, 8]}\nlayers:\n  - {name: c, type: Conv2d, out_channels: 4, kernel_size: 3}\n"
      "  - {name: p, type: ReflectionPad2d, padding: 1}\n  - {name: z, type: ZeroPad2d, padding: 1}\n";
  const Estimate e = estimate_from(spec, o);
  CHECK(e.layers[1].outputs[0].dtype == DType::Float32);
  CHECK(e.layers[2].outputs[0].dtype == DType::Float32);  // reads p's float32 output
  const Estimate z = estimate_from(
      "inputs: {x: [3, 8, 8]}\nlayers:\n  - {name: c, type: Conv2d, out_channels: 4, kernel_size: 3}\n"
      "  - {name: z, type: ZeroPad2d, padding: 1}\n", o);
  CHECK(z.layers[1].outputs[0].dtype == DType::BFloat16);
}
