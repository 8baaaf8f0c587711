// Unfold and Fold (layers/fold.cpp) against PyTorch 2.13 and 1.13 (CPU): shapes, what backward
// keeps (2.13 Im2ColBackward0: nothing; 1.13: its input), the storage Unfold's input gradient
// comes in (leaf.grad.untyped_storage().nbytes() == 13824 for Unfold(3, padding=1) on
// [2, 3, 8, 8]: as large as the output), and the errors PyTorch raises.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Unfold: shape; what backward keeps, by version") {
  auto r = run_rule("{type: Unfold, kernel_size: 3, padding: 1}", {tensor({2, 3, 8, 8})});
  CHECK(out_shape(r) == "[2, 27, 64]");
  CHECK(saved_of(r).empty());
  REQUIRE(r.input_grad_storage.has_value());
  CHECK(r.input_grad_storage->bytes() == 13824);
  r = run_rule("{type: Unfold, kernel_size: 3, padding: 1}", {tensor({2, 3, 8, 8})}, kCpu113);
  CHECK(saved_of(r) == "input0");
  CHECK(r.input_grad_storage->bytes() == 13824);
  // no gradient needed: nothing
  r = run_rule("{type: Unfold, kernel_size: 3, padding: 1}", {tensor({2, 3, 8, 8}, false)}, kCpu113);
  CHECK(saved_of(r).empty());
  CHECK_FALSE(r.input_grad_storage.has_value());
  CHECK(out_shape(run_rule("{type: Unfold, kernel_size: [2, 3], stride: 2}", {tensor({1, 2, 8, 9})})) == "[1, 12, 16]");
}

TEST_CASE("Fold: shape; keeps nothing") {
  for (const Context& ctx : {kCpu, kCpu113}) {
    const auto r = run_rule("{type: Fold, output_size: 8, kernel_size: 3, padding: 1}", {tensor({2, 27, 64})}, ctx);
    CHECK(out_shape(r) == "[2, 3, 8, 8]");
    CHECK(saved_of(r).empty());
    CHECK_FALSE(r.input_grad_storage.has_value());
  }
}

TEST_CASE("Unfold / Fold: errors") {
  // "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=28"
  CHECK(rule_error("{type: Fold, output_size: 8, kernel_size: 3, padding: 1}", {tensor({1, 28, 64})}) ==
        "the input's dimension 1 (28 in [1, 28, 64]) must divide by the kernel's 9 elements");
  // "… expected size of input's dimension 2 to match the calculated number of sliding blocks 8 * 8 = 64, but got input.size(2)=63."
  CHECK(rule_error("{type: Fold, output_size: 8, kernel_size: 3, padding: 1}", {tensor({1, 27, 63})}) ==
        "output_size [8, 8] holds 8 x 8 = 64 blocks, but the input [1, 27, 63] has 63");
  // "calculated shape of the array of sliding blocks as (0, 0), but its components must be at least one."
  CHECK(rule_error("{type: Unfold, kernel_size: 3}", {tensor({1, 2, 2, 2})}) ==
        "the input height is 2 (2 with padding), smaller than the kernel's extent 3; the output would be empty");
  CHECK(rule_error("{type: Unfold, kernel_size: 3}", {tensor({1, 2, 2})}) ==
        "expected a 4-D input [N, C, H, W], found 3-D [1, 2, 2]");
  // F.unfold on int64: "im2col_out_cpu" not implemented for 'Long'
  CHECK(rule_error("{type: Unfold, kernel_size: 1}", {tensor({1, 2, 2, 2}, false, DType::Int64)}) ==
        "expected a floating-point input, found int64");
}
