// Upsample (layers/upsample.cpp) against PyTorch 2.13 and 1.13 (CPU): output shapes of
// nn.Upsample / F.interpolate, what backward keeps (saved_tensors_hooks: nothing) and the
// errors F.interpolate raises (validation/ops_saved_zoo.md and probe_zoo.py).
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Upsample: output sizes from scale_factor or size") {
  // nn.Upsample(scale_factor=2) on [2, 3, 8, 8] -> [2, 3, 16, 16]; on [2, 3, 8] -> [2, 3, 16];
  // on [2, 3, 4, 4, 4] -> [2, 3, 8, 8, 8]; size=12 -> [2, 3, 12, 12]; size=(5, 7) -> [2, 3, 5, 7]
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 2}", {tensor({2, 3, 8, 8})})) == "[2, 3, 16, 16]");
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 2}", {tensor({2, 3, 8})})) == "[2, 3, 16]");
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 2}", {tensor({2, 3, 4, 4, 4})})) == "[2, 3, 8, 8, 8]");
  CHECK(out_shape(run_rule("{type: Upsample, size: 12}", {tensor({2, 3, 8, 8})})) == "[2, 3, 12, 12]");
  CHECK(out_shape(run_rule("{type: Upsample, size: [5, 7], mode: bilinear}", {tensor({2, 3, 8, 8})})) == "[2, 3, 5, 7]");
  // floor(L * s): 8 * 1.5 = 12 (bicubic), 7 * 1.5 = 10.5 -> 10, 7 * 0.35 = 2.45 -> 2
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 1.5, mode: bicubic}", {tensor({2, 3, 8, 8})})) == "[2, 3, 12, 12]");
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 1.5, mode: bicubic}", {tensor({1, 2, 7, 7})})) == "[1, 2, 10, 10]");
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 0.35}", {tensor({1, 2, 7})})) == "[1, 2, 2]");
  // one factor per dimension: scale_factor=(2, 1) -> [2, 3, 16, 8]; (1.5, 2.5) bilinear on 7x5 -> [2, 3, 10, 12]
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: [2, 1]}", {tensor({2, 3, 8, 8})})) == "[2, 3, 16, 8]");
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: [1.5, 2.5], mode: bilinear}", {tensor({2, 3, 7, 5})})) ==
        "[2, 3, 10, 12]");
  CHECK(out_shape(run_rule("{type: Upsample, scale_factor: 2, mode: trilinear, align_corners: true}",
                           {tensor({2, 3, 4, 4, 4})})) == "[2, 3, 8, 8, 8]");
}

TEST_CASE("Upsample: keeps nothing; no parameters; multiply-accumulates per mode") {
  // UpsampleNearest2DBackward0, UpsampleBilinear2DBackward0, …: no saved tensors, 1.13 and 2.13
  for (const std::string mode : {"nearest", "nearest-exact", "bilinear", "bicubic"}) {
    CAPTURE(mode);
    for (const Context& ctx : {kCpu, kCpu113}) {
      const auto r = run_rule("{type: Upsample, scale_factor: 2, mode: " + mode + "}", {tensor({2, 3, 8, 8})}, ctx);
      CHECK(saved_of(r).empty());
      CHECK(r.params.empty());
      CHECK(r.alias == Alias::None);
      CHECK(r.backward_scratch.empty());
    }
  }
  // weighted inputs per output element: nearest 0, linear 2, bilinear 4, trilinear 8, bicubic 16
  CHECK(run_rule("{type: Upsample, scale_factor: 2}", {tensor({2, 3, 8, 8})}).macs == 0);
  CHECK(run_rule("{type: Upsample, scale_factor: 2, mode: linear}", {tensor({2, 3, 8})}).macs == 2 * 96);
  CHECK(run_rule("{type: Upsample, scale_factor: 2, mode: bilinear}", {tensor({2, 3, 8, 8})}).macs == 4 * 1536);
  CHECK(run_rule("{type: Upsample, scale_factor: 2, mode: trilinear}", {tensor({2, 3, 4, 4, 4})}).macs == 8 * 3072);
  CHECK(run_rule("{type: Upsample, size: 12, mode: bicubic}", {tensor({2, 3, 8, 8})}).macs == 16 * 864);
}

TEST_CASE("Upsample: errors F.interpolate raises") {
  // ValueError: only one of size or scale_factor should be defined
  CHECK(one_layer_error("{type: Upsample, size: 3, scale_factor: 2}", {2, 4, 4}) ==
        "test.yaml:4:45: error: Upsample '0': only one of size or scale_factor may be given, found both");
  // ValueError: either size or scale_factor should be defined
  CHECK(one_layer_error("{type: Upsample}", {2, 4, 4}) ==
        "test.yaml:4:5: error: Upsample '0': needs size or scale_factor, found neither");
  // ValueError: align_corners option can only be set with the interpolating modes
  CHECK(one_layer_error("{type: Upsample, scale_factor: 2, align_corners: false}", {2, 4, 4}) ==
        "test.yaml:4:54: error: Upsample '0': align_corners can only be set with the interpolating modes (linear, "
        "bilinear, bicubic, trilinear), not with mode nearest");
  // NotImplementedError: Got 3D input, but bilinear mode needs 4D input
  CHECK(rule_error("{type: Upsample, scale_factor: 2, mode: bilinear}", {tensor({1, 2, 4})}) ==
        "mode bilinear needs a 4-D input [N, C, H, W], found 3-D [1, 2, 4]");
  CHECK(rule_error("{type: Upsample, scale_factor: 2, mode: trilinear}", {tensor({1, 2, 4, 4})}) ==
        "mode trilinear needs a 5-D input [N, C, D, H, W], found 4-D [1, 2, 4, 4]");
  // ValueError: Input and output must have the same number of spatial dimensions
  CHECK(rule_error("{type: Upsample, size: [3, 3, 3]}", {tensor({1, 2, 4, 4})}) ==
        "size [3, 3, 3] has 3 values, but the input [1, 2, 4, 4] has 2 spatial dimensions [4, 4]");
  // RuntimeError: Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 0)
  // ValueError: Input and scale_factor must have the same number of spatial dimensions
  CHECK(rule_error("{type: Upsample, scale_factor: [2, 2, 2]}", {tensor({1, 2, 4, 4})}) ==
        "scale_factor has 3 values, but the input [1, 2, 4, 4] has 2 spatial dimensions [4, 4]");
  CHECK_HAS(one_layer_error("{type: Upsample, scale_factor: [2, x]}", {2, 4, 4}),
            "scale_factor must be a number or a list of numbers, found the string 'x'");
  CHECK_HAS(one_layer_error("{type: Upsample, scale_factor: []}", {2, 4, 4}), "scale_factor must be a number or a list of numbers");
  CHECK(rule_error("{type: Upsample, scale_factor: 0.1}", {tensor({1, 2, 4, 4})}) ==
        "scale_factor 0.1 makes the output height 0 from the input's 4; sizes must be at least 1");
  CHECK(rule_error("{type: Upsample, scale_factor: 2}", {tensor({1, 2})}) ==
        "expected a 3-D to 5-D input [N, C, L], [N, C, H, W] or [N, C, D, H, W], found 2-D [1, 2]");
  CHECK(rule_error("{type: Upsample, scale_factor: 2}", {tensor({1, 2, 4}, true, DType::Int64)}) ==
        "expected a floating-point input, found int64");
  CHECK_HAS(one_layer_error("{type: Upsample, scale_factor: 2, mode: cubic}", {2, 4, 4}), "mode must be one of nearest, nearest-exact");
  CHECK_HAS(one_layer_error("{type: Upsample, size: [0, 2]}", {2, 4, 4}), "size must be at least 1, found 0");
}

TEST_CASE("Upsample: through the graph, functional as F.interpolate") {
  const Estimate e = one_layer("{type: Upsample, scale_factor: 2, functional: true}", {3, 8, 8}, 2, Mode::Eval);
  CHECK(to_string(e.layers[0].outputs[0].shape) == "[2, 3, 16, 16]");
  CHECK(e.layers[0].output_bytes == 6144);  // +6144 upsample_nearest2d
  CHECK(e.layers[0].functional);
}
