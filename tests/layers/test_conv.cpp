// Conv1d/2d/3d and ConvTranspose1d/2d/3d (layers/conv.cpp). Every shape and parameter count
// below was printed by PyTorch 1.13 (CPU) building the same module and running it on a tensor of
// the input's shape; what backward keeps was read with torch.autograd.graph.saved_tensors_hooks.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Conv2d: shapes; parameters and MACs") {
  SUBCASE("plain 3x3") {  // Conv2d(3, 8, 3) on [2, 3, 32, 32] -> [2, 8, 30, 30], 224 params
    const auto r = run_one("{type: Conv2d, out_channels: 8, kernel_size: 3}", {2, 3, 32, 32});
    CHECK(out_shape(r) == "[2, 8, 30, 30]");
    CHECK(params_of(r) == "weight[8, 3, 3, 3] bias[8]");
    CHECK(param_count(r) == 224);
    // 388,800: out elements × in/groups × kernel (torch.profiler(with_flops=True): 777,600 FLOPs = 2 × MACs)
    CHECK(r.macs == 2 * 8 * 30 * 30 * (3 * 9));
    CHECK(r.alias == Alias::None);
    CHECK(r.buffers.empty());
    CHECK(r.outputs[0].dtype == DType::Float32);
  }
  SUBCASE("stride 2, padding 1") {  // Conv2d(3, 8, 3, stride=2, padding=1) -> [2, 8, 16, 16]
    const auto r = run_one("{type: Conv2d, out_channels: 8, kernel_size: 3, stride: 2, padding: 1}", {2, 3, 32, 32});
    CHECK(out_shape(r) == "[2, 8, 16, 16]");
    CHECK(r.macs == 2 * 8 * 16 * 16 * 27);
  }
  SUBCASE("groups 4, no bias") {  // Conv2d(8, 16, 3, groups=4, padding=1, bias=False) -> [1, 16, 10, 10], 288
    const auto r = run_one("{type: Conv2d, out_channels: 16, kernel_size: 3, groups: 4, padding: 1, bias: false}", {1, 8, 10, 10});
    CHECK(out_shape(r) == "[1, 16, 10, 10]");
    CHECK(params_of(r) == "weight[16, 2, 3, 3]");
    CHECK(param_count(r) == 288);
    CHECK(r.macs == 16 * 10 * 10 * (2 * 9));
  }
  SUBCASE("depthwise") {  // Conv2d(32, 32, 3, groups=32, padding=1) -> [1, 32, 14, 14], 320
    const auto r = run_one("{type: Conv2d, out_channels: 32, kernel_size: 3, groups: 32, padding: 1}", {1, 32, 14, 14});
    CHECK(out_shape(r) == "[1, 32, 14, 14]");
    CHECK(params_of(r) == "weight[32, 1, 3, 3] bias[32]");
    CHECK(param_count(r) == 320);
    CHECK(r.macs == 32 * 14 * 14 * 9);
  }
  SUBCASE("depthwise with multiplier 2") {  // Conv2d(16, 32, 5, groups=16, stride=2) on 15x15 -> [1, 32, 6, 6], 832
    const auto r = run_one("{type: Conv2d, out_channels: 32, kernel_size: 5, groups: 16, stride: 2}", {1, 16, 15, 15});
    CHECK(out_shape(r) == "[1, 32, 6, 6]");
    CHECK(param_count(r) == 832);
  }
  SUBCASE("dilation 2") {  // Conv2d(4, 4, 3, dilation=2) on 9x9 -> [1, 4, 5, 5], 148
    const auto r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, dilation: 2}", {1, 4, 9, 9});
    CHECK(out_shape(r) == "[1, 4, 5, 5]");
    CHECK(param_count(r) == 148);
  }
  SUBCASE("dilation [2, 1]") {  // Conv2d(4, 6, 3, dilation=(2, 1)) on 9x9 -> [1, 6, 5, 7], 222
    const auto r = run_one("{type: Conv2d, out_channels: 6, kernel_size: 3, dilation: [2, 1]}", {1, 4, 9, 9});
    CHECK(out_shape(r) == "[1, 6, 5, 7]");
    CHECK(param_count(r) == 222);
  }
  SUBCASE("kernel [3, 5], padding [1, 2]") {  // Conv2d(3, 4, (3, 5), padding=(1, 2)) on 7x11 -> [1, 4, 7, 11], 184
    const auto r = run_one("{type: Conv2d, out_channels: 4, kernel_size: [3, 5], padding: [1, 2]}", {1, 3, 7, 11});
    CHECK(out_shape(r) == "[1, 4, 7, 11]");
    CHECK(params_of(r) == "weight[4, 3, 3, 5] bias[4]");
    CHECK(param_count(r) == 184);
  }
  SUBCASE("kernel [40, 1]") {  // Conv2d(1, 8, (40, 1)) on [1, 1, 128, 9] -> [1, 8, 89, 9], 328
    const auto r = run_one("{type: Conv2d, out_channels: 8, kernel_size: [40, 1]}", {1, 1, 128, 9});
    CHECK(out_shape(r) == "[1, 8, 89, 9]");
    CHECK(params_of(r) == "weight[8, 1, 40, 1] bias[8]");
    CHECK(param_count(r) == 328);
    CHECK(r.macs == 8 * 89 * 9 * 40);  // profiler: 512,640 FLOPs
    // Conv2d(1, 8, (40, 1), stride=(2, 1)) -> [1, 8, 45, 9]
    CHECK(out_shape(run_one("{type: Conv2d, out_channels: 8, kernel_size: [40, 1], stride: [2, 1]}", {1, 1, 128, 9})) ==
          "[1, 8, 45, 9]");
  }
  SUBCASE("in_channels given and matching") {
    CHECK(out_shape(run_one("{type: Conv2d, in_channels: 3, out_channels: 8, kernel_size: 3}", {2, 3, 32, 32})) ==
          "[2, 8, 30, 30]");
  }
}

TEST_CASE("Conv: what backward keeps depends on who needs a gradient") {
  const std::string yaml = "{type: Conv2d, out_channels: 8, kernel_size: 3}";
  // convolution_backward needs input and weight for any of the grads: the input is kept when the
  // input or the weight needs a gradient (PyTorch: saved input + weight in all three cases).
  CHECK(saved_of(run_one(yaml, {2, 3, 32, 32}, true, true)) == "input0");
  CHECK(saved_of(run_one(yaml, {2, 3, 32, 32}, false, true)) == "input0");
  CHECK(saved_of(run_one(yaml, {2, 3, 32, 32}, true, false)) == "input0");
  CHECK(saved_of(run_one(yaml, {2, 3, 32, 32}, false, false)).empty());  // no autograd node at all
  // ...and the weight with it (free in float32; under autocast its low-precision copy).
  CHECK(kept_params(run_one(yaml, {2, 3, 32, 32}, true, true)) == "param0");
  CHECK(kept_params(run_one(yaml, {2, 3, 32, 32}, false, true)) == "param0");
  CHECK(kept_params(run_one(yaml, {2, 3, 32, 32}, true, false)) == "param0");
  CHECK(kept_params(run_one(yaml, {2, 3, 32, 32}, false, false)).empty());
  // Evaluation keeps nothing, and the shapes do not change.
  const auto eval = run_rule(yaml, {tensor({2, 3, 32, 32})}, kEval);
  CHECK(saved_of(eval).empty());
  CHECK(out_shape(eval) == "[2, 8, 30, 30]");
  CHECK(param_count(eval) == 224);
  // ConvTranspose2d: the same rule
  const std::string t = "{type: ConvTranspose2d, out_channels: 33, kernel_size: 3, stride: 2}";
  CHECK(saved_of(run_one(t, {1, 16, 12, 12}, true, false)) == "input0");
  CHECK(saved_of(run_one(t, {1, 16, 12, 12}, false, false)).empty());
}

TEST_CASE("Conv1d and Conv3d") {
  // Conv1d(16, 33, 3, stride=2) on [20, 16, 50] -> [20, 33, 24], 1,617
  auto r = run_one("{type: Conv1d, out_channels: 33, kernel_size: 3, stride: 2}", {20, 16, 50});
  CHECK(out_shape(r) == "[20, 33, 24]");
  CHECK(params_of(r) == "weight[33, 16, 3] bias[33]");
  CHECK(param_count(r) == 1617);
  CHECK(r.macs == 20 * 33 * 24 * 16 * 3);
  // Conv1d(4, 6, 7, padding=3, dilation=2, groups=2) on [2, 4, 30] -> [2, 6, 24], 90
  r = run_one("{type: Conv1d, out_channels: 6, kernel_size: 7, padding: 3, dilation: 2, groups: 2}", {2, 4, 30});
  CHECK(out_shape(r) == "[2, 6, 24]");
  CHECK(param_count(r) == 90);
  // Conv3d(16, 33, (3, 5, 2), stride=(2, 1, 1), padding=(4, 2, 0)) on [2, 16, 10, 50, 100] -> [2, 33, 8, 50, 99], 15,873
  r = run_one("{type: Conv3d, out_channels: 33, kernel_size: [3, 5, 2], stride: [2, 1, 1], padding: [4, 2, 0]}", {2, 16, 10, 50, 100});
  CHECK(out_shape(r) == "[2, 33, 8, 50, 99]");
  CHECK(params_of(r) == "weight[33, 16, 3, 5, 2] bias[33]");
  CHECK(param_count(r) == 15873);
  CHECK(r.macs == std::int64_t{2} * 33 * 8 * 50 * 99 * (16 * 30));
  // Conv3d(2, 4, 3, padding='same') on [1, 2, 5, 6, 7] -> [1, 4, 5, 6, 7], 220
  r = run_one("{type: Conv3d, out_channels: 4, kernel_size: 3, padding: same}", {1, 2, 5, 6, 7});
  CHECK(out_shape(r) == "[1, 4, 5, 6, 7]");
  CHECK(param_count(r) == 220);
}

TEST_CASE("ConvTranspose: shapes; output_padding; groups") {
  // ConvTranspose2d(16, 33, 3, stride=2) on [1, 16, 12, 12] -> [1, 33, 25, 25], 4,785
  auto r = run_one("{type: ConvTranspose2d, out_channels: 33, kernel_size: 3, stride: 2}", {1, 16, 12, 12});
  CHECK(out_shape(r) == "[1, 33, 25, 25]");
  CHECK(params_of(r) == "weight[16, 33, 3, 3] bias[33]");
  CHECK(param_count(r) == 4785);
  CHECK(r.macs == 16 * 12 * 12 * 33 * 9);  // each input element × out/groups × kernel
  CHECK(saved_of(r) == "input0");
  // output_padding=1 -> [1, 33, 26, 26]; padding=1, output_padding=1 -> [1, 33, 24, 24]
  CHECK(out_shape(run_one("{type: ConvTranspose2d, out_channels: 33, kernel_size: 3, stride: 2, output_padding: 1}", {1, 16, 12, 12})) ==
        "[1, 33, 26, 26]");
  CHECK(out_shape(run_one("{type: ConvTranspose2d, out_channels: 33, kernel_size: 3, stride: 2, padding: 1, output_padding: 1}",
                       {1, 16, 12, 12})) == "[1, 33, 24, 24]");
  // ConvTranspose2d(8, 4, 3, groups=2) on 5x5 -> [1, 4, 7, 7], weight [8, 2, 3, 3], 148
  r = run_one("{type: ConvTranspose2d, out_channels: 4, kernel_size: 3, groups: 2}", {1, 8, 5, 5});
  CHECK(out_shape(r) == "[1, 4, 7, 7]");
  CHECK(params_of(r) == "weight[8, 2, 3, 3] bias[4]");
  CHECK(param_count(r) == 148);
  // ConvTranspose2d(8, 6, (3, 5), stride=(2, 1), padding=(1, 2), output_padding=(1, 0), dilation=(1, 2))
  // on [2, 8, 7, 9] -> [2, 6, 14, 13], 726
  r = run_one("{type: ConvTranspose2d, out_channels: 6, kernel_size: [3, 5], stride: [2, 1], padding: [1, 2], "
           "output_padding: [1, 0], dilation: [1, 2]}", {2, 8, 7, 9});
  CHECK(out_shape(r) == "[2, 6, 14, 13]");
  CHECK(param_count(r) == 726);
  // output_padding may reach dilation - 1: ConvTranspose2d(4, 4, 3, dilation=2, output_padding=1) -> [1, 4, 10, 10]
  CHECK(out_shape(run_one("{type: ConvTranspose2d, out_channels: 4, kernel_size: 3, dilation: 2, output_padding: 1}", {1, 4, 5, 5})) ==
        "[1, 4, 10, 10]");
  // ConvTranspose2d(1, 1, 3, padding=1) on 1x1 -> [1, 1, 1, 1]
  CHECK(out_shape(run_one("{type: ConvTranspose2d, out_channels: 1, kernel_size: 3, padding: 1}", {1, 1, 1, 1})) == "[1, 1, 1, 1]");
  // ConvTranspose1d(4, 2, 4, stride=2, padding=1) on [3, 4, 10] -> [3, 2, 20], 34
  r = run_one("{type: ConvTranspose1d, out_channels: 2, kernel_size: 4, stride: 2, padding: 1}", {3, 4, 10});
  CHECK(out_shape(r) == "[3, 2, 20]");
  CHECK(param_count(r) == 34);
  // ConvTranspose3d(4, 2, 2, stride=2) on [1, 4, 3, 4, 5] -> [1, 2, 6, 8, 10], 66
  r = run_one("{type: ConvTranspose3d, out_channels: 2, kernel_size: 2, stride: 2}", {1, 4, 3, 4, 5});
  CHECK(out_shape(r) == "[1, 2, 6, 8, 10]");
  CHECK(param_count(r) == 66);
}

TEST_CASE("Conv: errors name the expected and the actual value") {
  // PyTorch: "expected input[1, 3, 32, 32] to have 4 channels, but got 3 channels instead"
  auto msg = rule_error("{type: Conv2d, in_channels: 4, out_channels: 8, kernel_size: 3}", {tensor({1, 3, 32, 32})});
  CHECK(msg == "in_channels is 4, but the input [1, 3, 32, 32] has 3 channels");
  // PyTorch: "in_channels must be divisible by groups" / "out_channels must be divisible by groups"
  msg = rule_error("{type: Conv2d, out_channels: 16, kernel_size: 3, groups: 3}", {tensor({1, 8, 10, 10})});
  CHECK(msg == "groups is 3, which does not divide the 8 input channels");
  msg = rule_error("{type: Conv2d, out_channels: 6, kernel_size: 3, groups: 4}", {tensor({1, 8, 10, 10})});
  CHECK(msg == "groups is 4, which does not divide out_channels 6");
  msg = rule_error("{type: ConvTranspose2d, out_channels: 6, kernel_size: 3, groups: 4}", {tensor({1, 8, 10, 10})});
  CHECK_HAS(msg, "does not divide out_channels 6");
  // PyTorch: "Kernel size can't be greater than actual input size" (padded 4x4, kernel 5x5)
  msg = rule_error("{type: Conv2d, out_channels: 8, kernel_size: 5}", {tensor({1, 3, 4, 4})});
  CHECK_HAS(msg, "the input height is 4 (4 with padding), smaller than the kernel's extent 5");
  // ... but padding 1 makes it fit: Conv2d(3, 8, 5, padding=1) on 3x3 -> [1, 8, 1, 1]
  CHECK(out_shape(run_one("{type: Conv2d, out_channels: 8, kernel_size: 5, padding: 1}", {1, 3, 3, 3})) == "[1, 8, 1, 1]");
  // dilation 3 makes a 3-kernel span 7 > 6 (PyTorch: "Kernel size: (7 x 7)")
  msg = rule_error("{type: Conv2d, out_channels: 8, kernel_size: 3, dilation: 3}", {tensor({1, 3, 6, 6})});
  CHECK_HAS(msg, "is 6 (6 with padding), smaller than the kernel's extent 7");
  msg = rule_error("{type: Conv1d, out_channels: 8, kernel_size: [9]}", {tensor({1, 3, 8})});
  CHECK_HAS(msg, "the input length is 8");
  // PyTorch: "output padding must be smaller than either stride or dilation"
  msg = rule_error("{type: ConvTranspose2d, out_channels: 4, kernel_size: 3, stride: 2, output_padding: 2}", {tensor({1, 4, 5, 5})});
  CHECK(msg == "output_padding must be smaller than stride or dilation, found 2");
  msg = rule_error("{type: ConvTranspose2d, out_channels: 4, kernel_size: 3, output_padding: 1}", {tensor({1, 4, 5, 5})});
  CHECK(msg == "output_padding must be smaller than stride or dilation, found 1");
  // PyTorch: "Calculated output size per channel: (-3 x -3). Output size is too small"; and (0 x 0)
  msg = rule_error("{type: ConvTranspose2d, out_channels: 1, kernel_size: 3, padding: 3}", {tensor({1, 1, 1, 1})});
  CHECK_HAS(msg, "the output height would be -3 (padding 3 removes more than the 3 produced)");
  msg = rule_error("{type: ConvTranspose2d, out_channels: 1, kernel_size: 2, padding: 1}", {tensor({1, 1, 1, 1})});
  CHECK_HAS(msg, "would be 0");
  // PyTorch: "Input type (long int) and bias type (float) should be the same"
  msg = rule_error("{type: Conv2d, out_channels: 8, kernel_size: 3}", {tensor({1, 3, 8, 8}, false, DType::Int64)});
  CHECK(msg == "expected a floating-point input, found int64");
  // nnmem shapes include the batch: Conv2d needs [N, C, H, W]
  msg = rule_error("{type: Conv2d, out_channels: 8, kernel_size: 3}", {tensor({3, 8, 8})});
  CHECK(msg == "expected a 4-D input [N, C, H, W], found 3-D [3, 8, 8]");
  msg = rule_error("{type: Conv3d, out_channels: 8, kernel_size: 3}", {tensor({1, 3, 8, 8})});
  CHECK(msg == "expected a 5-D input [N, C, D, H, W], found 4-D [1, 3, 8, 8]");
  msg = rule_error("{type: Conv1d, out_channels: 8, kernel_size: 3}", {tensor({1, 3, 8, 8})});
  CHECK(msg == "expected a 3-D input [N, C, L], found 4-D [1, 3, 8, 8]");
}

TEST_CASE("Conv: located errors in a spec") {
  // in_channels is pointed at its value; the layer's default name is its index
  CHECK(one_layer_error("{type: Conv2d, in_channels: 4, out_channels: 8, kernel_size: 3}", {3, 32, 32}) ==
        "test.yaml:4:33: error: Conv2d '0': in_channels is 4, but the input [1, 3, 32, 32] has 3 channels");
  CHECK(one_layer_error("{type: Conv2d, out_channels: 6, kernel_size: 3, groups: 4}", {8, 10, 10}) ==
        "test.yaml:4:61: error: Conv2d '0': groups is 4, which does not divide out_channels 6");
  // a window error has no attribute to point at: the layer itself
  CHECK(one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 5}", {3, 4, 4}).rfind("test.yaml:4:5: error: Conv2d '0': the input height is 4", 0) == 0);
  CHECK(one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 3, strid: 2}", {3, 32, 32}) ==
        "test.yaml:4:53: error: Conv2d '0': unknown attribute 'strid'; did you mean 'stride'?");
  CHECK(one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 3, padding: sam}", {3, 32, 32}) ==
        "test.yaml:4:62: error: Conv2d '0': padding must be an integer or a list of 2 integers, or one of same, valid; "
        "found the string 'sam' (did you mean 'same'?)");
  auto msg = one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: [3, 3, 3]}", {3, 32, 32});
  CHECK_HAS(msg, "test.yaml:4:50: error: Conv2d '0': kernel_size must be an integer or a list of 2 integers, found");
  msg = one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 3, stride: 0}", {3, 32, 32});
  CHECK(msg == "test.yaml:4:61: error: Conv2d '0': stride must be at least 1, found 0");
  msg = one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 3, groups: 1.5}", {3, 32, 32});
  CHECK_HAS(msg, "test.yaml:4:61: error: Conv2d '0': groups must be an integer, found");
  msg = one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 3, padding_mode: reflection}", {3, 32, 32});
  CHECK_HAS(msg, "test.yaml:4:67: error: Conv2d '0': padding_mode must be one of zeros, reflect, replicate, circular");
  CHECK_HAS(msg, "(did you mean 'reflect'?)");
  msg = one_layer_error("{type: Conv2d, kernel_size: 3}", {3, 32, 32});
  CHECK(msg == "test.yaml:4:5: error: Conv2d '0': needs attribute 'out_channels' (int >= 1; required)");
  // ConvTranspose has output_padding but no 'same'; Conv2d has no output_padding
  msg = one_layer_error("{type: ConvTranspose2d, out_channels: 8, kernel_size: 3, padding: same}", {3, 32, 32});
  CHECK_HAS(msg, "test.yaml:4:71: error: ConvTranspose2d '0': padding must be an integer or a list of 2 integers; found");
  msg = one_layer_error("{type: Conv2d, out_channels: 8, kernel_size: 3, output_padding: 1}", {3, 32, 32});
  CHECK_HAS(msg, "test.yaml:4:53: error: Conv2d '0': unknown attribute 'output_padding'");
}

TEST_CASE("Conv: one-layer estimate through the graph") {
  // per-sample [3, 32, 32], batch 4 -> [4, 8, 16, 16]
  const Estimate e = one_layer("{type: Conv2d, out_channels: 8, kernel_size: 3, stride: 2, padding: 1}", {3, 32, 32}, 4);
  REQUIRE(e.layers.size() == 1);
  CHECK(to_string(e.layers[0].outputs[0].shape) == "[4, 8, 16, 16]");
  CHECK(e.layers[0].params == 224);
  CHECK(e.layers[0].param_bytes == 224 * 4);
  CHECK(e.layers[0].macs == 4 * 8 * 16 * 16 * 27);
  CHECK(e.layers[0].output_bytes == 4 * 8 * 16 * 16 * 4);
}

TEST_CASE("ConvTranspose3d on the CPU: an output smaller than its input has the input's storage") {
  // torch 1.13, CPU: slow_conv_transpose3d makes its output with empty_like(input), then resizes
  // it: y.storage().nbytes() is max(input, output) bytes (float32/float64, grad on or off, any
  // stride, padding, dilation, channels); groups > 1 and 1d/2d are exact, and so is cuDNN.
  const auto bytes = [](const std::string& layer, const Shape& in, Device device = Device::Cpu) {
    return one_layer(layer, in, 2, Mode::Eval, device).layers.at(0).output_bytes;
  };
  // ConvTranspose3d(8, 2, 3, padding=2) on [2, 8, 8, 8, 8]: [2, 2, 6, 6, 6] (3,456 bytes) in 32,768
  const std::string t3 = "{type: ConvTranspose3d, out_channels: 2, kernel_size: 3, padding: 2}";
  CHECK(bytes(t3, {8, 8, 8, 8}) == 32768);
  CHECK(bytes(t3, {8, 8, 8, 8}, Device::Cuda) == 3456);
  CHECK(bytes("{type: ConvTranspose3d, out_channels: 4, kernel_size: 3, padding: 2}", {1, 8, 8, 8}) == 6912);  // grown
  CHECK(bytes("{type: ConvTranspose3d, out_channels: 4, kernel_size: 3, padding: 2, groups: 2}", {4, 8, 8, 8}) == 6912);
  CHECK(bytes("{type: ConvTranspose2d, out_channels: 2, kernel_size: 3, padding: 2}", {8, 8, 8}) == 576);
  // Whatever keeps it for backward keeps the whole storage (SiLU keeps its input).
  EstimateOptions o;
  o.graph.batch = 2;
  o.graph.device = Device::Cpu;
  CHECK(estimate_from("inputs: {x: [8, 8, 8, 8]}\nlayers:\n  - " + t3 + "\n  - {type: SiLU}\n", o).layers.at(1).saved_bytes == 32768);
}

// On a channels-last input (after torchvision's LayerNorm2d) a 2-D convolution's output and its
// weight's gradient are channels-last: AccumulateGrad copies a gradient whose strides are not the
// weight's (more than one input channel per group and a kernel larger than 1x1), measured in
// convnext_valid's downsampling (validation/fixtures).
TEST_CASE("Conv2d on a channels-last input: channels-last output, a restrided weight gradient") {
  InputTensor cl = tensor({2, 16, 8, 8});
  cl.layout = Layout::ChannelsLast;
  const auto down = run_rule("{type: Conv2d, out_channels: 32, kernel_size: 2, stride: 2}", {cl});
  CHECK(down.layout == Layout::ChannelsLast);
  CHECK(down.params[0].grad_restrided);
  CHECK(!down.params[1].grad_restrided);
  CHECK(!run_rule("{type: Conv2d, out_channels: 16, kernel_size: 7, padding: 3, groups: 16}", {cl}).params[0].grad_restrided);
  CHECK(!run_rule("{type: Conv2d, out_channels: 32, kernel_size: 1}", {cl}).params[0].grad_restrided);
  const auto plain = run_rule("{type: Conv2d, out_channels: 32, kernel_size: 2, stride: 2}", {tensor({2, 16, 8, 8})});
  CHECK(!plain.layout);
  CHECK(!plain.params[0].grad_restrided);
}
