// MaxPool/AvgPool 1d/2d/3d (layers/pool.cpp) and AdaptiveAvgPool/AdaptiveMaxPool 1d/2d/3d
// (layers/adaptive_pool.cpp). Every shape was printed by PyTorch 1.13 (CPU) running the same
// module on a tensor of the input's shape; what backward keeps was read with
// torch.autograd.graph.saved_tensors_hooks.
#include "../../layers/common.hpp"
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
std::string pooled(const std::string& yaml, const Shape& in) { return out_shape(run_one(yaml, in)); }
}  // namespace

TEST_CASE("MaxPool2d: shapes; stride defaulting to kernel_size; what backward keeps") {
  // MaxPool2d(2) on [1, 8, 7, 7] -> [1, 8, 3, 3]: stride defaults to the kernel size
  auto r = run_one("{type: MaxPool2d, kernel_size: 2}", {1, 8, 7, 7});
  CHECK(out_shape(r) == "[1, 8, 3, 3]");
  CHECK(r.params.empty());
  CHECK(r.buffers.empty());
  CHECK(r.macs == 0);
  CHECK(r.alias == Alias::None);
  // max_pool2d_with_indices keeps the input and int64 indices of the output's shape
  CHECK(saved_of(r) == "input0 extra[1, 8, 3, 3]:int64");
  REQUIRE(r.saved.size() == 2);
  CHECK(r.saved[1].what == "indices");
  CHECK(saved_of(run_one("{type: MaxPool2d, kernel_size: 2}", {1, 8, 7, 7}, false)).empty());  // no grad: no node
  CHECK(saved_of(run_rule("{type: MaxPool2d, kernel_size: 2}", {tensor({1, 8, 7, 7})}, kEval)).empty());
  // ResNet stem: MaxPool2d(3, 2, 1) on [2, 64, 112, 112] -> [2, 64, 56, 56]
  r = run_one("{type: MaxPool2d, kernel_size: 3, stride: 2, padding: 1}", {2, 64, 112, 112});
  CHECK(out_shape(r) == "[2, 64, 56, 56]");
  CHECK(saved_of(r) == "input0 extra[2, 64, 56, 56]:int64");
  // dilation: MaxPool2d(3, 2, dilation=2) on 9x9 -> [1, 2, 3, 3]; dilation (2, 1), stride 1 -> [1, 2, 5, 7]
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 2, dilation: 2}", {1, 2, 9, 9}) == "[1, 2, 3, 3]");
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 1, dilation: [2, 1]}", {1, 2, 9, 9}) == "[1, 2, 5, 7]");
  // lists: MaxPool2d((2, 3), (1, 2), (1, 1)) on [1, 2, 6, 9] -> [1, 2, 7, 5]
  CHECK(pooled("{type: MaxPool2d, kernel_size: [2, 3], stride: [1, 2], padding: [1, 1]}", {1, 2, 6, 9}) == "[1, 2, 7, 5]");
  // padding exactly half the kernel: MaxPool2d(4, padding=2) on 6x6 -> [1, 2, 2, 2]
  CHECK(pooled("{type: MaxPool2d, kernel_size: 4, padding: 2}", {1, 2, 6, 6}) == "[1, 2, 2, 2]");
  // the window may start in the padding: MaxPool2d(3, padding=1) on 1x1 -> [1, 1, 1, 1]
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, padding: 1}", {1, 1, 1, 1}) == "[1, 1, 1, 1]");
}

TEST_CASE("Pooling: ceil_mode") {
  // MaxPool2d(2, ceil_mode=True) on 7x7 -> [1, 8, 4, 4] (floor: 3)
  CHECK(pooled("{type: MaxPool2d, kernel_size: 2, ceil_mode: true}", {1, 8, 7, 7}) == "[1, 8, 4, 4]");
  // MaxPool2d(3, 2, ceil_mode=True) on 6x6 -> [1, 1, 3, 3] (floor: 2)
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 2, ceil_mode: true}", {1, 1, 6, 6}) == "[1, 1, 3, 3]");
  // MaxPool2d(3, 2, 1, ceil_mode=True) on 6x6 -> [1, 1, 4, 4]
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 2, padding: 1, ceil_mode: true}", {1, 1, 6, 6}) == "[1, 1, 4, 4]");
  // PyTorch drops a last window that would start in the right padding:
  // MaxPool2d(2, 2, 1, ceil_mode=True) on 5x5 -> [1, 1, 3, 3] (ceil alone would give 4; floor gives 3)
  CHECK(pooled("{type: MaxPool2d, kernel_size: 2, stride: 2, padding: 1, ceil_mode: true}", {1, 1, 5, 5}) == "[1, 1, 3, 3]");
  CHECK(pooled("{type: MaxPool2d, kernel_size: 2, stride: 2, padding: 1}", {1, 1, 5, 5}) == "[1, 1, 3, 3]");
  // MaxPool2d(3, 3, 1, ceil_mode=True) on 5x5 -> [1, 1, 2, 2] (dropped from 3); on 4x4 -> [1, 1, 2, 2] (kept)
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 3, padding: 1, ceil_mode: true}", {1, 1, 5, 5}) == "[1, 1, 2, 2]");
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 3, padding: 1, ceil_mode: true}", {1, 1, 4, 4}) == "[1, 1, 2, 2]");
  // AvgPool2d(3, 2, 1, ceil_mode=True) on 6x6 -> [1, 1, 4, 4]; AvgPool2d(2, 2, 1, ceil_mode=True) on 5x5 -> [1, 1, 3, 3]
  CHECK(pooled("{type: AvgPool2d, kernel_size: 3, stride: 2, padding: 1, ceil_mode: true}", {1, 1, 6, 6}) == "[1, 1, 4, 4]");
  CHECK(pooled("{type: AvgPool2d, kernel_size: 2, stride: 2, padding: 1, ceil_mode: true}", {1, 1, 5, 5}) == "[1, 1, 3, 3]");
  // MaxPool1d(3, 2, ceil_mode=True) on [2, 4, 10] -> [2, 4, 5]; MaxPool3d(3, 2, 1, ceil_mode=True) on 5x6x7 -> 3x4x4
  CHECK(pooled("{type: MaxPool1d, kernel_size: 3, stride: 2, ceil_mode: true}", {2, 4, 10}) == "[2, 4, 5]");
  CHECK(pooled("{type: MaxPool3d, kernel_size: 3, stride: 2, padding: 1, ceil_mode: true}", {1, 2, 5, 6, 7}) == "[1, 2, 3, 4, 4]");
  // A stride near 2^63 once overflowed the formula (fuzzing): one window, and no more.
  CHECK(pooled("{type: MaxPool1d, kernel_size: 1, stride: 9223372036854775807, ceil_mode: true}", {1, 1, 3}) == "[1, 1, 1]");
  CHECK(pooled("{type: MaxPool1d, kernel_size: 1, stride: 4611686018427387904, ceil_mode: true}", {1, 1, 4611686018427387906}) ==
        "[1, 1, 2]");
}

// PyTorch 1.13 computes ceil((L + 2p - d(k-1) - 1) / s) + 1 without first requiring the window to
// fit: MaxPool2d(3, 2, ceil_mode=True) on 2x2 -> [1, 1, 1, 1]; MaxPool2d(2, 2, ceil_mode=True) on
// 1x1 -> [1, 1, 1, 1]; AvgPool2d(3, 2, ceil_mode=True) on 2x2 -> [1, 1, 1, 1]. (Without ceil_mode,
// or with stride 1, the same windows are errors: see the error test case.)
TEST_CASE("Pooling: ceil_mode accepts a window larger than the input") {
  CHECK(rule_error("{type: MaxPool2d, kernel_size: 3, stride: 2, ceil_mode: true}", {tensor({1, 1, 2, 2})}) == "");
  CHECK(rule_error("{type: MaxPool2d, kernel_size: 2, stride: 2, ceil_mode: true}", {tensor({1, 1, 1, 1})}) == "");
  CHECK(rule_error("{type: AvgPool2d, kernel_size: 3, stride: 2, ceil_mode: true}", {tensor({1, 1, 2, 2})}) == "");
}

// More of PyTorch 1.13's pooling_output_shape, each printed by PyTorch: the overhanging window is
// an ordinary output (kept: the input and [1, 1, 1, 1] indices); too large a kernel still fails
// when even the ceiling cannot reach 1.
TEST_CASE("Pooling: ceil_mode at the edge") {
  auto r = run_one("{type: MaxPool2d, kernel_size: 3, stride: 2, ceil_mode: true}", {1, 1, 2, 2});
  CHECK(out_shape(r) == "[1, 1, 1, 1]");
  CHECK(saved_of(r) == "input0 extra[1, 1, 1, 1]:int64");
  // MaxPool2d(5, 4, ceil_mode=True) on 2x2 -> 1x1; MaxPool2d(4, 3, 1, ceil_mode=True) on 1x1 -> 1x1;
  // MaxPool2d(3, 3, dilation=2, ceil_mode=True) on 3x3 -> 1x1; MaxPool1d(4, 3, ceil_mode=True) on 2 -> 1;
  // AvgPool1d(3, 2, ceil_mode=True) on 2 -> 1
  CHECK(pooled("{type: MaxPool2d, kernel_size: 5, stride: 4, ceil_mode: true}", {1, 1, 2, 2}) == "[1, 1, 1, 1]");
  CHECK(pooled("{type: MaxPool2d, kernel_size: 4, stride: 3, padding: 1, ceil_mode: true}", {1, 1, 1, 1}) == "[1, 1, 1, 1]");
  CHECK(pooled("{type: MaxPool2d, kernel_size: 3, stride: 3, dilation: 2, ceil_mode: true}", {1, 1, 3, 3}) == "[1, 1, 1, 1]");
  CHECK(pooled("{type: MaxPool1d, kernel_size: 4, stride: 3, ceil_mode: true}", {1, 1, 2}) == "[1, 1, 1]");
  CHECK(pooled("{type: AvgPool1d, kernel_size: 3, stride: 2, ceil_mode: true}", {1, 1, 2}) == "[1, 1, 1]");
  // PyTorch: "Calculated output size: (1x0x0). Output size is too small" for MaxPool2d(5, 3,
  // ceil_mode=True) on 2x2 and MaxPool2d(3, 2, dilation=2, ceil_mode=True) on 3x3
  CHECK_HAS(rule_error("{type: MaxPool2d, kernel_size: 5, stride: 3, ceil_mode: true}", {tensor({1, 1, 2, 2})}),
            "the input height is 2 (2 with padding), smaller than the kernel's extent 5");
  CHECK_HAS(rule_error("{type: MaxPool2d, kernel_size: 3, stride: 2, dilation: 2, ceil_mode: true}", {tensor({1, 1, 3, 3})}),
            "the input height is 3 (3 with padding), smaller than the kernel's extent 5");
}

// window_output avoids PyTorch's intermediate `span + s - 1` and `(out - 1) * s`, which overflow
// for a huge stride (checked in "Pooling: ceil_mode"); on every small case, where nothing
// overflows, it must agree with PyTorch's pooling_output_shape as written (Pool.h).
TEST_CASE("Pooling: window_output equals PyTorch's pooling_output_shape") {
  const auto pytorch = [](std::int64_t L, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d, bool ceil) {
    const std::int64_t num = L + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    const std::int64_t q = num / s, r = num % s;
    std::int64_t out = (r != 0 && ((r < 0) != (s < 0)) ? q - 1 : q) + 1;  // div_rtn(num, s) + 1
    if (ceil && (out - 1) * s >= L + p) --out;
    return out;
  };
  int cases = 0;
  for (std::int64_t L = 1; L <= 9; ++L)
    for (std::int64_t k = 1; k <= 5; ++k)
      for (std::int64_t s = 1; s <= 5; ++s)
        for (std::int64_t p = 0; p <= k / 2; ++p)
          for (std::int64_t d = 1; d <= 3; ++d)
            for (const bool ceil : {false, true}) {
              const std::int64_t expected = pytorch(L, k, s, p, d, ceil);
              const layers::Window w{L, k, s, p, d, ceil};
              if (expected >= 1) {
                CHECK(layers::window_output(w, "length") == expected);
              } else {
                CHECK_THROWS(layers::window_output(w, "length"));
              }
              ++cases;
            }
  CHECK(cases == 9 * (1 + 2 + 2 + 3 + 3) * 5 * 3 * 2);  // padding ranges over 0..k/2
}

// PyTorch 1.13: avg_pool3d alone (pool3d_shape_check with check_input_size, CPU and CUDA) wants
// the unpadded input to hold a kernel: AvgPool3d(3, padding=1) on 2x2x2 -> "input image (T: 2 H: 2
// W: 2) smaller than kernel size (kT: 3 kH: 3 kW: 3)", and AvgPool3d(3, 2, ceil_mode=True) on
// 3x2x3; on 3x3x3 both run. MaxPool3d(3, padding=1) and MaxPool3d(3, 2, ceil_mode=True) on 2x2x2
// and AvgPool2d(3, padding=1) on 2x2 run.
TEST_CASE("AvgPool3d: the input must hold a whole kernel") {
  CHECK(rule_error("{type: AvgPool3d, kernel_size: 3, padding: 1}", {tensor({1, 1, 2, 2, 2})}) ==
        "the input depth is 2, smaller than the kernel size 3 (AvgPool3d does not count padding here)");
  CHECK(rule_error("{type: AvgPool3d, kernel_size: 3, stride: 2, ceil_mode: true}", {tensor({1, 1, 3, 2, 3})}) ==
        "the input height is 2, smaller than the kernel size 3 (AvgPool3d does not count padding here)");
  CHECK(pooled("{type: AvgPool3d, kernel_size: 3, padding: 1}", {1, 1, 3, 3, 3}) == "[1, 1, 1, 1, 1]");
  CHECK(pooled("{type: AvgPool3d, kernel_size: 3, stride: 2, ceil_mode: true}", {1, 1, 3, 3, 3}) == "[1, 1, 1, 1, 1]");
  CHECK(pooled("{type: MaxPool3d, kernel_size: 3, padding: 1}", {1, 1, 2, 2, 2}) == "[1, 1, 1, 1, 1]");
  CHECK(pooled("{type: MaxPool3d, kernel_size: 3, stride: 2, ceil_mode: true}", {1, 1, 2, 2, 2}) == "[1, 1, 1, 1, 1]");
  CHECK(pooled("{type: AvgPool2d, kernel_size: 3, padding: 1}", {1, 1, 2, 2}) == "[1, 1, 1, 1]");
}

TEST_CASE("AvgPool: shapes and what backward keeps") {
  // AvgPool2d(2) on [1, 8, 7, 7] -> [1, 8, 3, 3]; avg_pool2d keeps its input (no indices)
  auto r = run_one("{type: AvgPool2d, kernel_size: 2}", {1, 8, 7, 7});
  CHECK(out_shape(r) == "[1, 8, 3, 3]");
  CHECK(saved_of(r) == "input0");
  CHECK(saved_of(run_one("{type: AvgPool2d, kernel_size: 2}", {1, 8, 7, 7}, false)).empty());
  // AvgPool2d(3, padding=1, count_include_pad=False, divisor_override=2) on 6x6 -> [1, 2, 2, 2]
  CHECK(pooled("{type: AvgPool2d, kernel_size: 3, padding: 1, count_include_pad: false, divisor_override: 2}", {1, 2, 6, 6}) ==
        "[1, 2, 2, 2]");
  // AvgPool1d(4, 3, 2) on [1, 3, 20] -> [1, 3, 7]
  r = run_one("{type: AvgPool1d, kernel_size: 4, stride: 3, padding: 2}", {1, 3, 20});
  CHECK(out_shape(r) == "[1, 3, 7]");
  CHECK(saved_of(r) == "input0");
  // AvgPool3d((2, 3, 3), (1, 2, 2)) on [1, 2, 5, 6, 7] -> [1, 2, 4, 2, 3]
  CHECK(pooled("{type: AvgPool3d, kernel_size: [2, 3, 3], stride: [1, 2, 2]}", {1, 2, 5, 6, 7}) == "[1, 2, 4, 2, 3]");
}

TEST_CASE("MaxPool1d and MaxPool3d") {
  // MaxPool1d(3, 2) on [2, 4, 11] -> [2, 4, 5], keeps the input and [2, 4, 5] indices
  auto r = run_one("{type: MaxPool1d, kernel_size: 3, stride: 2}", {2, 4, 11});
  CHECK(out_shape(r) == "[2, 4, 5]");
  CHECK(saved_of(r) == "input0 extra[2, 4, 5]:int64");
  // MaxPool3d(2) on [1, 2, 5, 6, 7] -> [1, 2, 2, 3, 3]
  r = run_one("{type: MaxPool3d, kernel_size: 2}", {1, 2, 5, 6, 7});
  CHECK(out_shape(r) == "[1, 2, 2, 3, 3]");
  CHECK(saved_of(r) == "input0 extra[1, 2, 2, 3, 3]:int64");
}

// validation/probe_autocast_113.py: under CPU bfloat16 autocast, after a bfloat16 Conv3d,
// max_pool3d, avg_pool3d, adaptive_avg_pool3d and adaptive_max_pool3d return float32 (1.13 and
// 2.13: their input is cast up); the 1-D and 2-D poolings stay in bfloat16.
TEST_CASE("3-D pooling runs in float32 under CPU autocast") {
  for (const std::string pool : {"{type: MaxPool3d, kernel_size: 2}", "{type: AvgPool3d, kernel_size: 2}",
                                 "{type: AdaptiveAvgPool3d, output_size: 2}", "{type: AdaptiveMaxPool3d, output_size: 2}"}) {
    CAPTURE(pool);
    const std::string spec = "inputs: {x: [2, 4, 6, 8]}\nlayers:\n  - {name: conv, type: Conv3d, out_channels: 4, "
                             "kernel_size: 1}\n  - " + pool.substr(0, pool.size() - 1) + ", name: pool}\n";
    for (const char* version : {"1.13", "2.13"}) {
      const Estimate e = estimate_from(spec, cpu_bf16_autocast(version));
      CHECK(e.layers.at(0).outputs.at(0).dtype == DType::BFloat16);
      CHECK(e.layers.at(1).outputs.at(0).dtype == DType::Float32);
    }
    EstimateOptions cuda = cpu_bf16_autocast("2.13");
    cuda.graph.device = Device::Cuda;
    CHECK(estimate_from(spec, cuda).layers.at(1).outputs.at(0).dtype == DType::BFloat16);
  }
  const std::string flat = "inputs: {x: [4, 6, 8]}\nlayers:\n  - {name: conv, type: Conv2d, out_channels: 4, kernel_size: 1}\n"
                           "  - {name: pool, type: MaxPool2d, kernel_size: 2}\n";
  CHECK(estimate_from(flat, cpu_bf16_autocast("1.13")).layers.at(1).outputs.at(0).dtype == DType::BFloat16);
}

// A bfloat16 model (no autocast) hands them a bfloat16 input: 1.13's CPU kernels have none of
// the four, 2.13's has no avg_pool3d (validation/probe_autocast_113.py --bf16-model).
TEST_CASE("3-D pooling: the CPU kernels that have no bfloat16") {
  EstimateOptions bf16_model;
  bf16_model.graph = {.device = Device::Cpu, .float_dtype = DType::BFloat16};
  for (const std::string pool : {"{type: MaxPool3d, kernel_size: 2}", "{type: AvgPool3d, kernel_size: 2}",
                                 "{type: AdaptiveAvgPool3d, output_size: 2}", "{type: AdaptiveMaxPool3d, output_size: 2}"}) {
    CAPTURE(pool);
    const std::string spec = "inputs: {x: [2, 4, 6, 8]}\nlayers:\n  - {name: conv, type: Conv3d, out_channels: 4, "
                             "kernel_size: 1}\n  - " + pool.substr(0, pool.size() - 1) + ", name: pool}\n";
    bf16_model.graph.torch = find_torch_profile("1.13");
    CHECK(error_from(spec, bf16_model).find("PyTorch 1.13's CPU ") != std::string::npos);
    bf16_model.graph.torch = find_torch_profile("2.13");
    const std::string in_2_13 = error_from(spec, bf16_model);
    CHECK(in_2_13.empty() == (pool.rfind("{type: AvgPool3d", 0) != 0));  // only avg_pool3d fails in 2.13
  }
  CHECK(error_from("inputs: {x: [2, 4, 6, 8]}\nlayers:\n  - {name: pool, type: AvgPool3d, kernel_size: 2}\n", bf16_model) ==
        "test.yaml:3:24: error: AvgPool3d 'pool': PyTorch 2.13's CPU avg_pool3d has no bfloat16 kernel (NotImplementedError: "
        "\"avg_pool3d_out_frame\" not implemented for 'BFloat16'); expected --device cuda or a float32 model, found "
        "--torch 2.13 --device cpu and a bfloat16 model");
}

TEST_CASE("Pooling: errors name the expected and the actual value") {
  // PyTorch: "pad should be at most half of kernel size, but got pad=2 and kernel_size=2"
  auto msg = rule_error("{type: MaxPool2d, kernel_size: 2, padding: 2}", {tensor({1, 2, 6, 6})});
  CHECK(msg == "padding must be at most half the kernel size (1), found 2");
  msg = rule_error("{type: MaxPool2d, kernel_size: 3, padding: 2}", {tensor({1, 2, 6, 6})});
  CHECK(msg == "padding must be at most half the kernel size (1), found 2");
  // ... half the kernel, not of its dilated extent (PyTorch: same error with dilation=3)
  msg = rule_error("{type: MaxPool2d, kernel_size: 3, dilation: 3, padding: 2}", {tensor({1, 2, 6, 6})});
  CHECK(msg == "padding must be at most half the kernel size (1), found 2");
  msg = rule_error("{type: AvgPool2d, kernel_size: 2, padding: 2}", {tensor({1, 2, 6, 6})});
  CHECK(msg == "padding must be at most half the kernel size (1), found 2");
  msg = rule_error("{type: MaxPool1d, kernel_size: 2, padding: 2}", {tensor({2, 4, 10})});
  CHECK(msg == "padding must be at most half the kernel size (1), found 2");
  // PyTorch: "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small"
  msg = rule_error("{type: MaxPool2d, kernel_size: 3}", {tensor({1, 1, 2, 2})});
  CHECK_HAS(msg, "the input height is 2 (2 with padding), smaller than the kernel's extent 3");
  msg = rule_error("{type: MaxPool2d, kernel_size: 3, stride: 1, ceil_mode: true}", {tensor({1, 1, 2, 2})});
  CHECK_HAS(msg, "smaller than the kernel's extent 3");
  msg = rule_error("{type: AvgPool2d, kernel_size: 5}", {tensor({1, 2, 4, 4})});
  CHECK_HAS(msg, "the input height is 4 (4 with padding), smaller than the kernel's extent 5");
  msg = rule_error("{type: MaxPool1d, kernel_size: 5}", {tensor({1, 1, 3})});
  CHECK_HAS(msg, "the input length is 3 (3 with padding), smaller than the kernel's extent 5");
  msg = rule_error("{type: MaxPool2d, kernel_size: [1, 4]}", {tensor({1, 1, 5, 3})});
  CHECK_HAS(msg, "the input width is 3");
  // PyTorch: "max_pool2d" not implemented for 'Long'
  msg = rule_error("{type: MaxPool2d, kernel_size: 2}", {tensor({1, 2, 4, 4}, false, DType::Int64)});
  CHECK(msg == "expected a floating-point input, found int64");
  // nnmem shapes include the batch
  msg = rule_error("{type: MaxPool2d, kernel_size: 2}", {tensor({1, 2, 2, 4, 4})});
  CHECK(msg == "expected a 4-D input [N, C, H, W], found 5-D [1, 2, 2, 4, 4]");
  msg = rule_error("{type: AvgPool1d, kernel_size: 2}", {tensor({2, 4})});
  CHECK(msg == "expected a 3-D input [N, C, L], found 2-D [2, 4]");
}

TEST_CASE("Pooling: located errors in a spec") {
  CHECK(one_layer_error("{type: MaxPool2d, kernel_size: 2, padding: 2}", {2, 6, 6}) ==
        "test.yaml:4:48: error: MaxPool2d '0': padding must be at most half the kernel size (1), found 2");
  CHECK(one_layer_error("{type: MaxPool2d, kernel_size: 3}", {1, 2, 2}).rfind(
            "test.yaml:4:5: error: MaxPool2d '0': the input height is 2 (2 with padding)", 0) == 0);
  // AvgPool has no dilation, AvgPool1d no divisor_override (as in PyTorch)
  auto msg = one_layer_error("{type: AvgPool2d, kernel_size: 2, dilation: 2}", {2, 6, 6});
  CHECK(msg == "test.yaml:4:39: error: AvgPool2d '0': unknown attribute 'dilation'; AvgPool2d takes: kernel_size stride "
               "padding ceil_mode count_include_pad divisor_override");
  msg = one_layer_error("{type: AvgPool1d, kernel_size: 2, divisor_override: 2}", {2, 6});
  CHECK_HAS(msg, "test.yaml:4:39: error: AvgPool1d '0': unknown attribute 'divisor_override'");
  msg = one_layer_error("{type: MaxPool2d, kernel_size: 2, ceil_mod: true}", {2, 6, 6});
  CHECK(msg == "test.yaml:4:39: error: MaxPool2d '0': unknown attribute 'ceil_mod'; did you mean 'ceil_mode'?");
  msg = one_layer_error("{type: MaxPool2d, kernel_size: 2, stride: 0}", {2, 6, 6});
  CHECK(msg == "test.yaml:4:47: error: MaxPool2d '0': stride must be at least 1, found 0");
  msg = one_layer_error("{type: MaxPool3d, kernel_size: [2, 2]}", {2, 6, 6, 6});
  CHECK_HAS(msg, "test.yaml:4:36: error: MaxPool3d '0': kernel_size must be an integer or a list of 3 integers, found");
  msg = one_layer_error("{type: MaxPool2d, kernel_size: 2, ceil_mode: yes please}", {2, 6, 6});
  CHECK_HAS(msg, "test.yaml:4:50: error: MaxPool2d '0': ceil_mode must be true or false, found");
  msg = one_layer_error("{type: AvgPool2d, kernel_size: 2, divisor_override: 0}", {2, 6, 6});
  CHECK(msg == "test.yaml:4:57: error: AvgPool2d '0': divisor_override must be at least 1, found 0");
  CHECK(one_layer_error("{type: MaxPool2d}", {2, 6, 6}) ==
        "test.yaml:4:5: error: MaxPool2d '0': needs attribute 'kernel_size' (int or list of 2 ints >= 1; required)");
}

TEST_CASE("Adaptive pooling: shapes and what backward keeps") {
  // AdaptiveAvgPool2d(3) on [2, 3, 10, 9] -> [2, 3, 3, 3], keeps the input
  auto r = run_one("{type: AdaptiveAvgPool2d, output_size: 3}", {2, 3, 10, 9});
  CHECK(out_shape(r) == "[2, 3, 3, 3]");
  CHECK(saved_of(r) == "input0");
  CHECK(r.params.empty());
  // AdaptiveAvgPool2d((1, 3)) -> [2, 3, 1, 3], keeps the input (not a global mean)
  r = run_one("{type: AdaptiveAvgPool2d, output_size: [1, 3]}", {2, 3, 10, 9});
  CHECK(out_shape(r) == "[2, 3, 1, 3]");
  CHECK(saved_of(r) == "input0");
  // VGG: AdaptiveAvgPool2d((7, 7)) on [1, 512, 14, 14] and on [1, 512, 7, 7] -> [1, 512, 7, 7]
  CHECK(pooled("{type: AdaptiveAvgPool2d, output_size: [7, 7]}", {1, 512, 14, 14}) == "[1, 512, 7, 7]");
  CHECK(pooled("{type: AdaptiveAvgPool2d, output_size: 7}", {1, 512, 7, 7}) == "[1, 512, 7, 7]");
  // an output larger than the input is allowed: AdaptiveAvgPool2d(16) on 10x9 -> [2, 3, 16, 16]
  CHECK(pooled("{type: AdaptiveAvgPool2d, output_size: 16}", {2, 3, 10, 9}) == "[2, 3, 16, 16]");
  CHECK(pooled("{type: AdaptiveMaxPool1d, output_size: 16}", {1, 3, 10}) == "[1, 3, 16]");
  // AdaptiveMaxPool2d((2, 3)) on [1, 4, 8, 9] -> [1, 4, 2, 3], keeps the input and int64 indices
  r = run_one("{type: AdaptiveMaxPool2d, output_size: [2, 3]}", {1, 4, 8, 9});
  CHECK(out_shape(r) == "[1, 4, 2, 3]");
  CHECK(saved_of(r) == "input0 extra[1, 4, 2, 3]:int64");
  // adaptive max pooling keeps indices even for output 1
  CHECK(saved_of(run_one("{type: AdaptiveMaxPool2d, output_size: 1}", {2, 3, 10, 9})) == "input0 extra[2, 3, 1, 1]:int64");
  CHECK(saved_of(run_one("{type: AdaptiveMaxPool1d, output_size: 3}", {1, 3, 10})) == "input0 extra[1, 3, 3]:int64");
  // 3-D
  r = run_rule("{type: AdaptiveAvgPool3d, output_size: 1}", {tensor({1, 3, 6, 5, 4})}, kCpu113);
  CHECK(out_shape(r) == "[1, 3, 1, 1, 1]");
  CHECK(saved_of(r) == "input0");
  r = run_one("{type: AdaptiveMaxPool3d, output_size: 3}", {1, 3, 6, 5, 4});
  CHECK(out_shape(r) == "[1, 3, 3, 3, 3]");
  CHECK(saved_of(r) == "input0 extra[1, 3, 3, 3, 3]:int64");
  CHECK(out_shape(run_one("{type: AdaptiveAvgPool1d, output_size: 3}", {1, 3, 10})) == "[1, 3, 3]");
  // nothing without a gradient or in evaluation
  CHECK(saved_of(run_one("{type: AdaptiveMaxPool2d, output_size: 1}", {2, 3, 10, 9}, false)).empty());
  CHECK(saved_of(run_one("{type: AdaptiveAvgPool3d, output_size: 3}", {1, 3, 6, 5, 4}, false)).empty());
  CHECK(saved_of(run_rule("{type: AdaptiveAvgPool2d, output_size: 3}", {tensor({2, 3, 10, 9})}, kEval)).empty());
}

// Global average pooling: AdaptiveAvgPool1d/2d/3d(1) run input.mean(spatial dims). In PyTorch
// 1.13 its MeanBackward1 node keeps `self` (grad_fn._saved_self; saved_tensors_hooks reports the
// input) — so it is not free there: the input is kept, as for any other output size. 2.13's
// keeps nothing (hooks: no saved tensor for AdaptiveAvgPool1d/2d/3d(1); validation/ops_saved_zoo.md).
TEST_CASE("Adaptive pooling: global average pooling keeps the input in 1.13, nothing in 2.13") {
  const auto in113 = [](const std::string& yaml, const Shape& in) { return run_rule(yaml, {tensor(in)}, kCpu113); };
  CHECK(out_shape(in113("{type: AdaptiveAvgPool2d, output_size: 1}", {2, 3, 10, 9})) == "[2, 3, 1, 1]");
  CHECK(saved_of(in113("{type: AdaptiveAvgPool2d, output_size: 1}", {2, 3, 10, 9})) == "input0");
  CHECK(saved_of(in113("{type: AdaptiveAvgPool2d, output_size: [1, 1]}", {2, 3, 10, 9})) == "input0");
  CHECK(out_shape(in113("{type: AdaptiveAvgPool1d, output_size: 1}", {1, 3, 10})) == "[1, 3, 1]");
  CHECK(saved_of(in113("{type: AdaptiveAvgPool1d, output_size: 1}", {1, 3, 10})) == "input0");
  for (const std::string yaml : {"{type: AdaptiveAvgPool1d, output_size: 1}", "{type: AdaptiveAvgPool2d, output_size: 1}",
                                 "{type: AdaptiveAvgPool3d, output_size: [1, 1, 1]}"}) {
    CAPTURE(yaml);
    const Shape in = yaml.find("1d") != std::string::npos ? Shape{1, 3, 10}
                     : yaml.find("2d") != std::string::npos ? Shape{2, 3, 10, 9} : Shape{1, 3, 6, 5, 4};
    CHECK(saved_of(run_one(yaml, in)).empty());
  }
  // not global: the input, in 2.13 too
  CHECK(saved_of(run_one("{type: AdaptiveAvgPool2d, output_size: [1, 2]}", {2, 3, 10, 9})) == "input0");
  CHECK(saved_of(run_one("{type: AdaptiveAvgPool1d, output_size: 4}", {1, 3, 10})) == "input0");
  // max pooling keeps its indices and input at size 1 as well
  CHECK(saved_of(run_one("{type: AdaptiveMaxPool2d, output_size: 1}", {2, 3, 10, 9})) == "input0 extra[2, 3, 1, 1]:int64");
}

TEST_CASE("Adaptive pooling: errors") {
  // PyTorch: "adaptive_max_pool2d" not implemented for 'Long'; mean(): could not infer output dtype
  CHECK(rule_error("{type: AdaptiveMaxPool2d, output_size: 1}", {tensor({1, 2, 4, 4}, false, DType::Int64)}) ==
        "expected a floating-point input, found int64");
  CHECK(rule_error("{type: AdaptiveAvgPool2d, output_size: 1}", {tensor({1, 2, 4, 4}, false, DType::Int64)}) ==
        "expected a floating-point input, found int64");
  CHECK(rule_error("{type: AdaptiveAvgPool3d, output_size: 1}", {tensor({1, 2, 4, 4})}) ==
        "expected a 5-D input [N, C, D, H, W], found 4-D [1, 2, 4, 4]");
  CHECK(one_layer_error("{type: AdaptiveAvgPool2d, output_size: 0}", {3, 8, 8}) ==
        "test.yaml:4:44: error: AdaptiveAvgPool2d '0': output_size must be at least 1, found 0");
  CHECK_HAS(one_layer_error("{type: AdaptiveAvgPool2d, output_size: [7, 7, 7]}", {3, 8, 8}),
            "test.yaml:4:44: error: AdaptiveAvgPool2d '0': output_size must be an integer or a list of 2 integers, found");
  CHECK(one_layer_error("{type: AdaptiveAvgPool2d, output_sizes: 1}", {3, 8, 8}) ==
        "test.yaml:4:31: error: AdaptiveAvgPool2d '0': unknown attribute 'output_sizes'; did you mean 'output_size'?");
}
