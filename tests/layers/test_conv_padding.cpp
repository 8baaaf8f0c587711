// Conv1d/2d/3d's padding (layers/conv.cpp): 'same' and 'valid', padding_mode reflect, replicate and
// circular with the padded copy they keep, and their limits. Every figure was printed by PyTorch
// 1.13 (CPU) building the same module; what backward keeps read with saved_tensors_hooks.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Conv2d: padding 'same' and 'valid'") {
  // Conv2d(3, 6, 4, padding='same', dilation=2) on 11x13 -> [1, 6, 11, 13], 294
  auto r = run_one("{type: Conv2d, out_channels: 6, kernel_size: 4, padding: same, dilation: 2}", {1, 3, 11, 13});
  CHECK(out_shape(r) == "[1, 6, 11, 13]");
  CHECK(param_count(r) == 294);
  CHECK(saved_of(r) == "input0");  // the extent 7 pads 3 on each side: symmetric, no copy
  // Conv2d(3, 6, (3, 5), padding='same') -> [1, 6, 11, 13], 276
  r = run_one("{type: Conv2d, out_channels: 6, kernel_size: [3, 5], padding: same}", {1, 3, 11, 13});
  CHECK(out_shape(r) == "[1, 6, 11, 13]");
  CHECK(param_count(r) == 276);
  // Conv2d(3, 6, 3, padding='valid') -> [1, 6, 9, 11], 168
  r = run_one("{type: Conv2d, out_channels: 6, kernel_size: 3, padding: valid}", {1, 3, 11, 13});
  CHECK(out_shape(r) == "[1, 6, 9, 11]");
  CHECK(param_count(r) == 168);
  // PyTorch: "padding='same' is not supported for strided convolutions"
  const auto msg = rule_error("{type: Conv2d, out_channels: 6, kernel_size: 3, padding: same, stride: 2}", {tensor({1, 3, 11, 13})});
  CHECK_HAS(msg, "padding 'same' needs stride 1");
  CHECK_HAS(msg, "found stride 2");
}

// PyTorch 1.13, 'same' with an even extent (kernel 4): F.conv2d pads the extra row and column
// with constant_pad_nd, and the convolution keeps that padded copy, [1, 3, 9, 9], not the input.
TEST_CASE("Conv2d: padding 'same' with an even kernel keeps a padded copy") {
  const auto r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 4, padding: same}", {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 8, 8]");
  CHECK(param_count(r) == 196);
  CHECK(saved_of(r) == "extra[1, 3, 9, 9]:float32");
}

TEST_CASE("Conv2d: padding_mode reflect / replicate / circular") {
  const std::string reflect = "{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 2, padding_mode: reflect}";
  // Conv2d(3, 4, 3, padding=2, padding_mode='reflect') on 8x8 -> [1, 4, 10, 10]; F.pad keeps the input,
  // the convolution keeps the padded copy [1, 3, 12, 12].
  auto r = run_one(reflect, {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 10, 10]");
  CHECK(param_count(r) == 112);
  CHECK(saved_of(r) == "extra[1, 3, 12, 12]:float32 input0");
  CHECK(saved_of(run_one(reflect, {1, 3, 8, 8}, false)) == "extra[1, 3, 12, 12]:float32");        // input needs no grad
  CHECK(saved_of(run_one(reflect, {1, 3, 8, 8}, true, false)) == "extra[1, 3, 12, 12]:float32 input0");  // frozen
  CHECK(saved_of(run_one(reflect, {1, 3, 8, 8}, false, false)).empty());
  // reflect padding 7 on 8 is allowed -> [1, 4, 20, 20]; 8 is not ("Padding size should be less than …")
  CHECK(out_shape(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 7, padding_mode: reflect}", {1, 3, 8, 8})) ==
        "[1, 4, 20, 20]");
  auto msg = rule_error("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 8, padding_mode: reflect}", {tensor({1, 3, 8, 8})});
  CHECK_HAS(msg, "reflect padding 8 must be smaller than the input height 8");
  msg = rule_error("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: [1, 3], padding_mode: reflect}", {tensor({1, 3, 5, 3})});
  CHECK_HAS(msg, "reflect padding 3 must be smaller than the input width 3");

  // replicate: same bookkeeping; padding 10 on 8 is fine -> [1, 4, 26, 26]
  const std::string replicate = "{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 1, padding_mode: replicate}";
  CHECK(out_shape(run_one(replicate, {1, 3, 8, 8})) == "[1, 4, 8, 8]");
  CHECK(saved_of(run_one(replicate, {1, 3, 8, 8})) == "extra[1, 3, 10, 10]:float32 input0");
  CHECK(saved_of(run_one(replicate, {1, 3, 8, 8}, false)) == "extra[1, 3, 10, 10]:float32");
  CHECK(out_shape(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 10, padding_mode: replicate}", {1, 3, 8, 8})) ==
        "[1, 4, 26, 26]");

  // circular: the padding is built with cat/slices, which keep nothing; only the padded copy is kept
  const std::string circular = "{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 1, padding_mode: circular}";
  CHECK(out_shape(run_one(circular, {1, 3, 8, 8})) == "[1, 4, 8, 8]");
  CHECK(saved_of(run_one(circular, {1, 3, 8, 8})) == "extra[1, 3, 10, 10]:float32");
  // circular padding 8 on 8 wraps exactly once -> [1, 4, 22, 22]
  CHECK(out_shape(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 8, padding_mode: circular}", {1, 3, 8, 8})) ==
        "[1, 4, 22, 22]");

  // per-dimension padding and other ranks: reflect (0, 1) -> padded [1, 3, 8, 10]; Conv1d reflect 2 ->
  // [1, 3, 12]; Conv3d replicate 1 on [1, 2, 4, 5, 6] -> [1, 2, 6, 7, 8]
  r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: [0, 1], padding_mode: reflect}", {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 6, 8]");
  CHECK(saved_of(r) == "extra[1, 3, 8, 10]:float32 input0");
  r = run_one("{type: Conv1d, out_channels: 4, kernel_size: 3, padding: 2, padding_mode: reflect}", {1, 3, 8});
  CHECK(out_shape(r) == "[1, 4, 10]");
  CHECK(saved_of(r) == "extra[1, 3, 12]:float32 input0");
  r = run_one("{type: Conv3d, out_channels: 4, kernel_size: 3, padding: 1, padding_mode: replicate}", {1, 2, 4, 5, 6});
  CHECK(out_shape(r) == "[1, 4, 4, 5, 6]");
  CHECK(saved_of(r) == "extra[1, 2, 6, 7, 8]:float32 input0");

  // zeros (the default) keeps the input itself
  CHECK(saved_of(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 1, padding_mode: zeros}", {1, 3, 8, 8})) == "input0");
}

// PyTorch 1.13: "Padding value causes wrapping around more than once." (padding 9 on 8; 3 on 2)
TEST_CASE("Conv2d: circular padding larger than the input is an error") {
  auto msg = rule_error("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 9, padding_mode: circular}", {tensor({1, 3, 8, 8})});
  CHECK_HAS(msg, "9");
  CHECK_HAS(msg, "8");
  msg = rule_error("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 3, padding_mode: circular}", {tensor({1, 3, 2, 2})});
  CHECK_HAS(msg, "3");
  CHECK_HAS(msg, "2");
}

// PyTorch 1.13 always runs F.pad for a non-zeros padding_mode, even with padding 0, 'valid' or
// 'same': reflect/replicate + padding 0 or 'valid' keep the input and an unpadded copy [1, 3, 8, 8]
// (circular: the copy only); reflect + 'same' (kernel 3) keeps the input and [1, 3, 10, 10];
// circular + 'same' (kernel 4) keeps [1, 3, 11, 11].
TEST_CASE("Conv2d: non-zeros padding_mode with padding 0 or 'same' keeps a padded copy") {
  auto r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 0, padding_mode: reflect}", {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 6, 6]");
  CHECK(saved_of(r) == "extra[1, 3, 8, 8]:float32 input0");
  CHECK(saved_of(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: valid, padding_mode: replicate}", {1, 3, 8, 8})) ==
        "extra[1, 3, 8, 8]:float32 input0");
  CHECK(saved_of(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 0, padding_mode: circular}", {1, 3, 8, 8})) ==
        "extra[1, 3, 8, 8]:float32");
  r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: same, padding_mode: reflect}", {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 8, 8]");
  CHECK(saved_of(r) == "extra[1, 3, 10, 10]:float32 input0");
  CHECK(saved_of(run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: same, padding_mode: reflect}", {1, 3, 8, 8}, false)) ==
        "extra[1, 3, 10, 10]:float32");
  r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 4, padding: same, padding_mode: circular}", {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 8, 8]");
  CHECK(saved_of(r) == "extra[1, 3, 11, 11]:float32");
}

// PyTorch 1.13 (hooks) for the odd-total 'same' copy: it is padded only where the total is odd
// (kernel (4, 3) -> [1, 3, 9, 8]; Conv1d kernel 2 -> [1, 3, 9]); a dilated even kernel with an even
// total needs no copy (kernel 4, dilation 2: see above); the copy is kept whenever the node
// exists, like the input it replaces.
TEST_CASE("Conv: padding 'same' with an odd total, in detail") {
  CHECK(saved_of(run_one("{type: Conv2d, out_channels: 4, kernel_size: [4, 3], padding: same}", {1, 3, 8, 8})) ==
        "extra[1, 3, 9, 8]:float32");
  const auto r = run_one("{type: Conv1d, out_channels: 4, kernel_size: 2, padding: same}", {1, 3, 8});
  CHECK(out_shape(r) == "[1, 4, 8]");
  CHECK(saved_of(r) == "extra[1, 3, 9]:float32");
  const std::string even = "{type: Conv2d, out_channels: 4, kernel_size: 4, padding: same}";
  CHECK(saved_of(run_one(even, {1, 3, 8, 8}, false, true)) == "extra[1, 3, 9, 9]:float32");  // only the weight needs a grad
  CHECK(saved_of(run_one(even, {1, 3, 8, 8}, true, false)) == "extra[1, 3, 9, 9]:float32");  // frozen
  CHECK(saved_of(run_one(even, {1, 3, 8, 8}, false, false)).empty());
}

// PyTorch 1.13: for a non-zeros padding_mode, 'same' is split as (total // 2, total - total // 2)
// and F.pad checks each side: reflect + 'same', kernel 4 (padding (1, 2)) on 8x8 keeps the input
// and [1, 3, 11, 11]; on 2x2 "Padding size should be less than the corresponding input dimension,
// but got: padding (1, 2)"; reflect + 'same', kernel 5 on 2x2 likewise. Circular + 'same', kernel 5
// (2 each side) on 2x2 runs, keeping [1, 3, 6, 6]; kernel 7 (3 each side) wraps around more than
// once, as does circular padding (1, 4) on [1, 3, 5, 3] and Conv1d circular 5 on length 4.
TEST_CASE("Conv: padding_mode limits, per side") {
  auto r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 4, padding: same, padding_mode: reflect}", {1, 3, 8, 8});
  CHECK(out_shape(r) == "[1, 4, 8, 8]");
  CHECK(saved_of(r) == "extra[1, 3, 11, 11]:float32 input0");
  for (const std::string k : {"4", "5"})
    CHECK(rule_error("{type: Conv2d, out_channels: 4, kernel_size: " + k + ", padding: same, padding_mode: reflect}",
                     {tensor({1, 3, 2, 2})}) == "reflect padding 2 must be smaller than the input height 2");
  r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 5, padding: same, padding_mode: circular}", {1, 3, 2, 2});
  CHECK(out_shape(r) == "[1, 4, 2, 2]");
  CHECK(saved_of(r) == "extra[1, 3, 6, 6]:float32");
  auto msg = rule_error("{type: Conv2d, out_channels: 4, kernel_size: 7, padding: same, padding_mode: circular}", {tensor({1, 3, 2, 2})});
  CHECK(msg == "circular padding 3 must be at most the input height 2 (it would wrap around more than once)");
  // circular padding equal to the size wraps exactly once: (1, 3) on [1, 3, 5, 3] -> [1, 4, 5, 7], copy [1, 3, 7, 9]
  r = run_one("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: [1, 3], padding_mode: circular}", {1, 3, 5, 3});
  CHECK(out_shape(r) == "[1, 4, 5, 7]");
  CHECK(saved_of(r) == "extra[1, 3, 7, 9]:float32");
  msg = rule_error("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: [1, 4], padding_mode: circular}", {tensor({1, 3, 5, 3})});
  CHECK(msg == "circular padding 4 must be at most the input width 3 (it would wrap around more than once)");
  msg = rule_error("{type: Conv1d, out_channels: 4, kernel_size: 3, padding: 5, padding_mode: circular}", {tensor({1, 3, 4})});
  CHECK(msg == "circular padding 5 must be at most the input length 4 (it would wrap around more than once)");
  // the error points at padding in a spec
  CHECK(one_layer_error("{type: Conv2d, out_channels: 4, kernel_size: 3, padding: 9, padding_mode: circular}", {3, 8, 8}) ==
        "test.yaml:4:62: error: Conv2d '0': circular padding 9 must be at most the input height 8 (it would wrap around "
        "more than once)");
}
