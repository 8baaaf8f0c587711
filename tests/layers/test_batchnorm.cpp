// BatchNorm1d/2d/3d (layers/batchnorm.cpp). Parameter counts, buffers and errors printed by
// PyTorch 1.13 (CPU) for the same module on a tensor of the input's shape; what backward keeps
// was read with torch.autograd.graph.saved_tensors_hooks: the input, the weight, the running
// statistics (buffers, already counted) and save_mean / save_invstd (C values each).
#include <limits>

#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
const char* const kStats = "input0 extra[16]:float32 extra[16]:float32";
// The LayerError a rule raises in context `ctx`, "" if none.
std::string rule_error_in(const std::string& yaml, const Shape& in, const Context& ctx) {
  try {
    run_rule(yaml, {tensor(in, false)}, ctx);
  } catch (const LayerError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("BatchNorm2d: parameters; buffers; MACs and what backward keeps") {
  // BatchNorm2d(16) on [4, 16, 8, 8]: 32 params; buffers running_mean, running_var (float32 [16])
  // and num_batches_tracked (int64 scalar)
  const auto r = run_one("{type: BatchNorm2d}", {4, 16, 8, 8});
  CHECK(out_shape(r) == "[4, 16, 8, 8]");
  CHECK(r.outputs[0].dtype == DType::Float32);
  CHECK(params_of(r) == "weight[16] bias[16]");
  CHECK(param_count(r) == 32);
  CHECK(buffers_of(r) == "running_mean[16]:float32 running_var[16]:float32 num_batches_tracked[]:int64");
  CHECK(r.macs == 4 * 16 * 8 * 8);
  CHECK(r.alias == Alias::None);
  CHECK(saved_of(r) == kStats);
  REQUIRE(r.saved.size() == 3);
  CHECK(r.saved[1].what == "save_mean");
  CHECK(r.saved[2].what == "save_invstd");
  // num_features given and matching
  CHECK(param_count(run_one("{type: BatchNorm2d, num_features: 16}", {4, 16, 8, 8})) == 32);
}

TEST_CASE("BatchNorm2d: affine and track_running_stats") {
  SUBCASE("affine: false") {  // BatchNorm2d(16, affine=False): 0 params, the same 3 buffers
    const auto r = run_one("{type: BatchNorm2d, affine: false}", {4, 16, 8, 8});
    CHECK(r.params.empty());
    CHECK(buffers_of(r) == "running_mean[16]:float32 running_var[16]:float32 num_batches_tracked[]:int64");
    CHECK(saved_of(r) == kStats);
  }
  SUBCASE("track_running_stats: false") {  // 32 params, no buffers
    const auto r = run_one("{type: BatchNorm2d, track_running_stats: false}", {4, 16, 8, 8});
    CHECK(param_count(r) == 32);
    CHECK(r.buffers.empty());
    CHECK(saved_of(r) == kStats);
  }
  SUBCASE("both false") {
    const auto r = run_one("{type: BatchNorm2d, affine: false, track_running_stats: false}", {4, 16, 8, 8});
    CHECK(r.params.empty());
    CHECK(r.buffers.empty());
    CHECK(out_shape(r) == "[4, 16, 8, 8]");
    CHECK(saved_of(r) == kStats);
  }
}

TEST_CASE("BatchNorm: what backward keeps depends on who needs a gradient") {
  // PyTorch 1.13 (hooks), affine: the node exists (and keeps input + stats) unless neither the
  // input nor the weight needs a gradient.
  const std::string affine = "{type: BatchNorm2d}";
  CHECK(saved_of(run_one(affine, {4, 16, 8, 8}, true, true)) == kStats);
  CHECK(saved_of(run_one(affine, {4, 16, 8, 8}, false, true)) == kStats);
  CHECK(saved_of(run_one(affine, {4, 16, 8, 8}, true, false)) == kStats);
  CHECK(saved_of(run_one(affine, {4, 16, 8, 8}, false, false)).empty());
  // affine=False: only the input's gradient can need the node
  const std::string plain = "{type: BatchNorm2d, affine: false}";
  CHECK(saved_of(run_one(plain, {4, 16, 8, 8}, true, true)) == kStats);
  CHECK(saved_of(run_one(plain, {4, 16, 8, 8}, false, true)).empty());
  CHECK(saved_of(run_one(plain, {4, 16, 8, 8}, true, false)) == kStats);
  CHECK(saved_of(run_one(plain, {4, 16, 8, 8}, false, false)).empty());
  // track_running_stats=False keeps the same (input + save_mean + save_invstd)
  CHECK(saved_of(run_one("{type: BatchNorm2d, track_running_stats: false}", {4, 16, 8, 8}, false, true)) == kStats);
  // evaluation: no backward
  CHECK(saved_of(run_rule(affine, {tensor({4, 16, 8, 8})}, kEval)).empty());
}

TEST_CASE("BatchNorm: the statistics' dtype") {
  // CPU bfloat16 (module.to(torch.bfloat16), input bfloat16): running stats and save_mean /
  // save_invstd are bfloat16 [4] (PyTorch 1.13, hooks)
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  auto r = run_rule("{type: BatchNorm2d}", {tensor({2, 4, 3, 3}, true, DType::BFloat16)}, bf16);
  CHECK(buffers_of(r) == "running_mean[4]:bfloat16 running_var[4]:bfloat16 num_batches_tracked[]:int64");
  CHECK(saved_of(r) == "input0 extra[4]:bfloat16 extra[4]:bfloat16");
  CHECK(r.outputs[0].dtype == DType::BFloat16);
  // float64 likewise keeps float64 statistics
  const Context f64{Mode::Train, Device::Cpu, DType::Float64, std::nullopt};
  r = run_rule("{type: BatchNorm2d}", {tensor({2, 4, 3, 3}, true, DType::Float64)}, f64);
  CHECK(saved_of(r) == "input0 extra[4]:float64 extra[4]:float64");
  // CUDA widens 16-bit statistics to float32 (cuDNN / native CUDA batch norm; not checkable on
  // this CPU-only oracle — see layers/batchnorm.cpp)
  const Context cuda16{Mode::Train, Device::Cuda, DType::Float16, std::nullopt};
  r = run_rule("{type: BatchNorm2d}", {tensor({2, 4, 3, 3}, true, DType::Float16)}, cuda16);
  CHECK(saved_of(r) == "input0 extra[4]:float32 extra[4]:float32");
  CHECK(buffers_of(r) == "running_mean[4]:float16 running_var[4]:float16 num_batches_tracked[]:int64");
}

TEST_CASE("BatchNorm1d and BatchNorm3d") {
  // BatchNorm1d(10) on [8, 10] and on [8, 10, 5]: 20 params, output = input shape
  auto r = run_one("{type: BatchNorm1d}", {8, 10});
  CHECK(out_shape(r) == "[8, 10]");
  CHECK(param_count(r) == 20);
  CHECK(saved_of(r) == "input0 extra[10]:float32 extra[10]:float32");
  r = run_one("{type: BatchNorm1d}", {8, 10, 5});
  CHECK(out_shape(r) == "[8, 10, 5]");
  CHECK(r.macs == 8 * 10 * 5);
  // BatchNorm3d(4) on [2, 4, 3, 5, 6]: 8 params
  r = run_one("{type: BatchNorm3d}", {2, 4, 3, 5, 6});
  CHECK(out_shape(r) == "[2, 4, 3, 5, 6]");
  CHECK(param_count(r) == 8);
  CHECK(buffers_of(r) == "running_mean[4]:float32 running_var[4]:float32 num_batches_tracked[]:int64");
}

TEST_CASE("BatchNorm: more than 1 value per channel when training") {
  // PyTorch: "Expected more than 1 value per channel when training, got input size [1, 10]"
  auto msg = rule_error("{type: BatchNorm1d}", {tensor({1, 10})});
  CHECK(msg == "needs more than 1 value per channel when training, but the input [1, 10] has one; use a batch larger than 1");
  CHECK_HAS(rule_error("{type: BatchNorm1d}", {tensor({1, 10, 1})}), "the input [1, 10, 1] has one");
  CHECK_HAS(rule_error("{type: BatchNorm2d}", {tensor({1, 16, 1, 1})}), "the input [1, 16, 1, 1] has one");
  // 2 values per channel are enough: [1, 10, 5], [2, 16, 1, 1], [1, 16, 1, 2] all run in PyTorch
  CHECK(rule_error("{type: BatchNorm1d}", {tensor({1, 10, 5})}) == "");
  CHECK(rule_error("{type: BatchNorm2d}", {tensor({2, 16, 1, 1})}) == "");
  CHECK(rule_error("{type: BatchNorm2d}", {tensor({1, 16, 1, 2})}) == "");
  // evaluation with running statistics: fine (PyTorch: eval() BatchNorm2d(16) on [1, 16, 1, 1] runs)
  CHECK(out_shape(run_rule("{type: BatchNorm2d}", {tensor({1, 16, 1, 1})}, kEval)) == "[1, 16, 1, 1]");
  // through the graph: batch 1 by default
  CHECK(one_layer_error("{type: BatchNorm1d}", {16}) ==
        "test.yaml:4:5: error: BatchNorm1d '0': needs more than 1 value per channel when training, but the input [1, 16] has "
        "one; use a batch larger than 1");
  CHECK_NOTHROW(one_layer("{type: BatchNorm1d}", {16}, 1, Mode::Eval));
  CHECK_NOTHROW(one_layer("{type: BatchNorm1d}", {16}, 2));
}

// PyTorch 1.13: a BatchNorm without running statistics normalises with batch statistics in
// eval() too (bn_training = True), and F.batch_norm then raises the same error: eval()
// BatchNorm2d(16, track_running_stats=False) on [1, 16, 1, 1] -> "Expected more than 1 value
// per channel when training, got input size torch.Size([1, 16, 1, 1])".
TEST_CASE("BatchNorm: without running stats eval needs more than 1 value per channel too") {
  try {
    run_rule("{type: BatchNorm2d, track_running_stats: false}", {tensor({1, 16, 1, 1})}, kEval);
    FAIL("no error for [1, 16, 1, 1] in eval without running statistics");
  } catch (const LayerError& e) {
    CHECK_HAS(std::string(e.what()), "[1, 16, 1, 1]");
  }
}

// PyTorch 1.13: BatchNorm2d(4, momentum=None) is valid (a cumulative moving average).
TEST_CASE("BatchNorm: momentum null is accepted") {
  CHECK(one_layer_error("{type: BatchNorm2d, momentum: null}", {4, 3, 3}) == "");
  // momentum=None changes only how running statistics are averaged: the same buffers and saves
  // (PyTorch 1.13, hooks: input + 2 x [4] on [2, 4, 3, 3])
  const auto r = run_one("{type: BatchNorm2d, momentum: null}", {2, 4, 3, 3});
  CHECK(buffers_of(r) == "running_mean[4]:float32 running_var[4]:float32 num_batches_tracked[]:int64");
  CHECK(saved_of(r) == "input0 extra[4]:float32 extra[4]:float32");
  // still a number in [0, 1] when given
  CHECK(one_layer_error("{type: BatchNorm2d, momentum: 2}", {4, 3, 3}) ==
        "test.yaml:4:35: error: BatchNorm2d '0': momentum must be between 0 and 1, found 2");
}

TEST_CASE("BatchNorm: the exact message without running statistics, and what runs") {
  CHECK(rule_error_in("{type: BatchNorm2d, track_running_stats: false}", {1, 16, 1, 1}, kEval) ==
        "needs more than 1 value per channel in evaluation without running statistics, but the input [1, 16, 1, 1] has "
        "one; use a batch larger than 1");
  // two values per channel are enough (PyTorch: eval() on [2, 16, 1, 1] runs)
  CHECK(rule_error_in("{type: BatchNorm2d, track_running_stats: false}", {2, 16, 1, 1}, kEval) == "");
  CHECK(rule_error_in("{type: BatchNorm1d, track_running_stats: false}", {1, 10}, kEval) != "");
}

// eps has a lower bound only: no stand-in upper bound to show or to enforce.
TEST_CASE("BatchNorm: eps has no upper bound") {
  CHECK(one_layer_error("{type: BatchNorm2d, eps: 1e308}", {4, 3, 3}) == "");
  for (const auto& a : find_layer("BatchNorm2d")->attrs)
    if (a.name == "eps") {
      CHECK(a.min_real == 0);
      CHECK(a.max_real == std::numeric_limits<double>::infinity());
    }
}

TEST_CASE("BatchNorm: errors name the expected and the actual value") {
  // PyTorch: "running_mean should contain 16 elements not 8"
  auto msg = rule_error("{type: BatchNorm2d, num_features: 8}", {tensor({2, 16, 4, 4})});
  CHECK(msg == "num_features is 8, but the input [2, 16, 4, 4] has 16 channels");
  // PyTorch: "expected 2D or 3D input (got 4D input)", "expected 4D input (got 3D input)", ...
  msg = rule_error("{type: BatchNorm1d}", {tensor({2, 16, 4, 4})});
  CHECK(msg == "expected a 2-D to 3-D input [N, C] or [N, C, L], found 4-D [2, 16, 4, 4]");
  msg = rule_error("{type: BatchNorm2d}", {tensor({2, 16, 4})});
  CHECK(msg == "expected a 4-D input [N, C, H, W], found 3-D [2, 16, 4]");
  msg = rule_error("{type: BatchNorm2d}", {tensor({2, 16, 4, 4, 4})});
  CHECK(msg == "expected a 4-D input [N, C, H, W], found 5-D [2, 16, 4, 4, 4]");
  msg = rule_error("{type: BatchNorm3d}", {tensor({16, 4, 4, 4})});
  CHECK(msg == "expected a 5-D input [N, C, D, H, W], found 4-D [16, 4, 4, 4]");
  // PyTorch: "batch_norm" not implemented for 'Long'
  msg = rule_error("{type: BatchNorm2d}", {tensor({2, 16, 4, 4}, false, DType::Int64)});
  CHECK(msg == "expected a floating-point input, found int64");
}

TEST_CASE("BatchNorm: located attribute errors") {
  CHECK(one_layer_error("{type: BatchNorm2d, num_features: 8}", {16, 4, 4}) ==
        "test.yaml:4:39: error: BatchNorm2d '0': num_features is 8, but the input [1, 16, 4, 4] has 16 channels");
  CHECK(one_layer_error("{type: BatchNorm2d, affin: false}", {16, 4, 4}) ==
        "test.yaml:4:25: error: BatchNorm2d '0': unknown attribute 'affin'; did you mean 'affine'?");
  CHECK(one_layer_error("{type: BatchNorm2d, track_running_stat: false}", {16, 4, 4}) ==
        "test.yaml:4:25: error: BatchNorm2d '0': unknown attribute 'track_running_stat'; did you mean 'track_running_stats'?");
  CHECK_HAS(one_layer_error("{type: BatchNorm2d, affine: 0}", {16, 4, 4}),
            "test.yaml:4:33: error: BatchNorm2d '0': affine must be true or false, found");
  CHECK_HAS(one_layer_error("{type: BatchNorm2d, eps: small}", {16, 4, 4}),
            "test.yaml:4:30: error: BatchNorm2d '0': eps must be a number, found");
  CHECK(one_layer_error("{type: BatchNorm2d, num_features: 0}", {16, 4, 4}) ==
        "test.yaml:4:39: error: BatchNorm2d '0': num_features must be at least 1, found 0");
  // eps 0 and an integer momentum are fine (PyTorch accepts both)
  CHECK(one_layer_error("{type: BatchNorm2d, eps: 0, momentum: 1}", {16, 4, 4}) == "");
}
