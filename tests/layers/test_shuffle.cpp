// PixelShuffle, PixelUnshuffle and ChannelShuffle (layers/shuffle.cpp) against PyTorch 2.13 and
// 1.13 (CPU): shapes, nothing kept (PixelShuffleBackward0, PixelUnshuffleBackward0,
// ChannelShuffleBackward0 save no tensor), and the errors PyTorch raises.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("PixelShuffle / PixelUnshuffle: shapes, nothing kept") {
  // PixelShuffle(2): [2, 8, 4, 4] -> [2, 2, 8, 8]; PixelUnshuffle(2): [2, 2, 8, 8] -> [2, 8, 4, 4]
  for (const Context& ctx : {kCpu, kCpu113}) {
    auto r = run_rule("{type: PixelShuffle, upscale_factor: 2}", {tensor({2, 8, 4, 4})}, ctx);
    CHECK(out_shape(r) == "[2, 2, 8, 8]");
    CHECK(saved_of(r).empty());
    CHECK(r.alias == Alias::None);
    r = run_rule("{type: PixelUnshuffle, downscale_factor: 2}", {tensor({2, 2, 8, 8})}, ctx);
    CHECK(out_shape(r) == "[2, 8, 4, 4]");
    CHECK(saved_of(r).empty());
  }
  CHECK(out_shape(run_rule("{type: PixelShuffle, upscale_factor: 3}", {tensor({2, 5, 18, 2, 3})})) == "[2, 5, 2, 6, 9]");
}

TEST_CASE("ChannelShuffle: shape; 1.13 cannot train through it") {
  auto r = run_rule("{type: ChannelShuffle, groups: 2}", {tensor({2, 8, 4, 4})});
  CHECK(out_shape(r) == "[2, 8, 4, 4]");
  CHECK(saved_of(r).empty());
  // 1.13: "derivative for channel_shuffle is not implemented" in backward; inference and a
  // network input without gradient are fine
  CHECK(rule_error_in(kCpu113, "{type: ChannelShuffle, groups: 2}", {tensor({2, 8, 4, 4})}) ==
        "PyTorch 1.13 cannot train through it: it has no derivative for channel_shuffle");
  CHECK(rule_error_in(kCpu113, "{type: ChannelShuffle, groups: 2}", {tensor({2, 8, 4, 4}, false)}).empty());
  const Context eval113{Mode::Eval, Device::Cpu, DType::Float32, std::nullopt, find_torch_profile("1.13")};
  CHECK(rule_error_in(eval113, "{type: ChannelShuffle, groups: 2}", {tensor({2, 8, 4, 4})}).empty());
}

TEST_CASE("Shuffles: errors") {
  // "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor,
  //  but input.size(-3)=6 is not divisible by 4"
  CHECK(rule_error("{type: PixelShuffle, upscale_factor: 2}", {tensor({1, 6, 4, 4})}) ==
        "the input's channels (6 in [1, 6, 4, 4]) must divide by upscale_factor squared, 4");
  // "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=5 is not divisible by 2"
  CHECK(rule_error("{type: PixelUnshuffle, downscale_factor: 2}", {tensor({1, 2, 5, 4})}) ==
        "the input height (5 in [1, 2, 5, 4]) must divide by downscale_factor 2");
  // "Number of channels must be divisible by groups. Got 6 channels and 4 groups."
  CHECK(rule_error("{type: ChannelShuffle, groups: 4}", {tensor({1, 6, 4, 4})}) ==
        "the input's channels (6 in [1, 6, 4, 4]) must divide by groups 4");
  CHECK(rule_error("{type: PixelShuffle, upscale_factor: 2}", {tensor({4, 8, 8})}) ==
        "expected a 4-D to 64-D input [N, *, C, H, W], found 3-D [4, 8, 8]");
  CHECK_HAS(one_layer_error("{type: PixelShuffle, upscale_factor: 0}", {4, 8, 8}), "upscale_factor must be at least 1, found 0");
}
