// Transpose, Permute, Contiguous, Expand, Slice, Select, Split, Chunk, RepeatInterleave
// (layers/tensor_ops.cpp) and MatMul (layers/matmul.cpp); shapes as PyTorch gives them, what
// they keep read on torch 2.13.0+cpu with saved_tensors_hooks.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("views: Transpose, Permute, Expand keep nothing and alias the input") {
  const auto t = run_rule("{type: Transpose, dim0: 1, dim1: 2}", {tensor({2, 8, 4, 16})});
  CHECK(out_shape(t) == "[2, 4, 8, 16]");
  CHECK(t.alias == Alias::View);
  CHECK(saved_of(t).empty());
  CHECK(out_shape(run_rule("{type: Permute, dims: [0, 2, 3, 1]}", {tensor({2, 3, 4, 5})})) == "[2, 4, 5, 3]");
  CHECK(rule_error("{type: Permute, dims: [0, 1, 1]}", {tensor({2, 3, 4})}) == "dims must name each dimension once, found [0, 1, 1]");
  // ConvNeXt's CNBlock: [N, H, W, C] -> [N, C, H, W] of a contiguous tensor is channels-last, and back is contiguous
  const auto cl = run_rule("{type: Permute, dims: [0, 3, 1, 2]}", {tensor({2, 4, 5, 3})});
  CHECK(cl.layout == Layout::ChannelsLast);
  InputTensor channels_last = tensor({2, 3, 4, 5});
  channels_last.layout = Layout::ChannelsLast;
  CHECK(run_rule("{type: Permute, dims: [0, 2, 3, 1]}", {channels_last}).layout == Layout::Contiguous);
  CHECK(!run_rule("{type: Permute, dims: [0, 2, 3, 1]}", {tensor({2, 3, 4, 5})}).layout);
  Context batch4 = kCpu;
  batch4.batch = 4;
  const auto e = run_rule("{type: Expand, shape: [-1, -1]}", {tensor({1, 1, 768})}, batch4);
  CHECK(out_shape(e) == "[4, 1, 768]");
  CHECK(e.broadcasts);
  CHECK(rule_error("{type: Expand, shape: [3, -1]}", {tensor({1, 2, 8})}) ==
        "cannot expand the input [1, 2, 8] to [1, 3, 8]: dimension 1 has size 2, neither 1 nor 3");
  // Layouts: Transpose(1, 2) swaps; .contiguous() copies only what is not contiguous already
  // (the CPU flash kernel's output is laid out as its query: measured on 2.13).
  InputTensor swapped = tensor({2, 4, 8, 16});
  swapped.layout = Layout::Swapped12;
  CHECK(run_rule("{type: Transpose, dim0: 2, dim1: 1}", {swapped}).layout == Layout::Contiguous);
  CHECK(t.layout == Layout::Swapped12);
  // The last two of 4 or more dimensions: a contiguous tensor's stay foldable (k.transpose(-2, -1)).
  const auto last = run_rule("{type: Transpose, dim0: -1, dim1: -2}", {tensor({2, 4, 8, 16})});
  CHECK(last.layout == Layout::TransposedLast);
  InputTensor transposed_last = tensor({2, 4, 16, 8});
  transposed_last.layout = Layout::TransposedLast;
  CHECK(run_rule("{type: Transpose, dim0: 2, dim1: 3}", {transposed_last}).layout == Layout::Contiguous);
  CHECK(run_rule("{type: Transpose, dim0: 1, dim1: 2}", {transposed_last}).layout == Layout::Strided);
  CHECK(run_rule("{type: Transpose, dim0: 2, dim1: 3}", {swapped}).layout == Layout::Strided);
  CHECK(run_rule("{type: Transpose, dim0: 0, dim1: 2}", {tensor({2, 4, 8, 16})}).layout == Layout::Strided);
  CHECK(run_rule("{type: Contiguous}", {transposed_last}).alias == Alias::None);
  const auto c = run_rule("{type: Contiguous}", {swapped});
  CHECK(c.alias == Alias::None);
  CHECK(saved_of(c).empty());
  CHECK(run_rule("{type: Contiguous}", {tensor({2, 4, 8})}).alias == Alias::View);
}

TEST_CASE("To: a copy in another dtype, or the input itself") {
  const auto same = run_rule("{type: To, dtype: float32}", {tensor({2, 4, 8, 8})});
  CHECK(same.alias == Alias::View);
  const auto half = run_rule("{type: To, dtype: bfloat16}", {tensor({2, 4, 8, 8})});
  CHECK(half.alias == Alias::None);
  CHECK(half.outputs[0].dtype == DType::BFloat16);
  CHECK(saved_of(half).empty());  // ToCopyBackward0 keeps nothing
  // autocast: a linear's output dtype (HF's attn_weights.type(value.dtype)): the model's without autocast
  CHECK(run_rule("{type: To, dtype: autocast}", {tensor({2, 4, 8, 8})}).alias == Alias::View);
  Context amp = kCpu;
  amp.amp = DType::BFloat16;
  CHECK(run_rule("{type: To, dtype: autocast}", {tensor({2, 4, 8, 8})}, amp).outputs[0].dtype == DType::BFloat16);
  CHECK(run_rule("{type: To, dtype: float}", {tensor({2, 4, 8, 8}, true, DType::BFloat16)}).outputs[0].dtype == DType::Float32);
  CHECK_HAS(rule_error("{type: To, dtype: int8}", {tensor({2, 4})}), "dtype must be one of");
  CHECK_HAS(rule_error("{type: To, dtype: float16}", {tensor({2, 4}, false, DType::Int64)}), "int64");
}

TEST_CASE("parts: Slice, Select, Split, Chunk write their gradients into a new input-sized tensor") {
  const auto s = run_rule("{type: Slice, dim: 3, start: 8}", {tensor({2, 4, 8, 16})});
  CHECK(out_shape(s) == "[2, 4, 8, 8]");
  CHECK(s.grad_scatters);
  CHECK(out_shape(run_rule("{type: Slice, dim: 2, end: -1, step: 2}", {tensor({2, 4, 9})})) == "[2, 4, 4]");
  CHECK(out_shape(run_rule("{type: Select, dim: 1, index: 0}", {tensor({2, 197, 768})})) == "[2, 768]");
  CHECK(rule_error("{type: Select, dim: 1, index: 197}", {tensor({2, 197, 768})}) ==
        "index must be in [-197, 196] for dimension 1 of the input [2, 197, 768], found 197");
  const auto sp = run_rule("{type: Split, split_size_or_sections: 64, dim: 2}", {tensor({2, 8, 192})});
  REQUIRE(sp.outputs.size() == 3);
  CHECK(out_shape(sp, 2) == "[2, 8, 64]");
  CHECK(sp.alias == Alias::View);
  CHECK(out_shape(run_rule("{type: Split, split_size_or_sections: [10, 20], dim: 1}", {tensor({2, 30})}), 1) == "[2, 20]");
  CHECK(rule_error("{type: Split, split_size_or_sections: [10, 10], dim: 1}", {tensor({2, 30})}) ==
        "the sections [10, 10] add up to 20, but dimension 1 of the input [2, 30] has 30");
  CHECK(run_rule("{type: Chunk, chunks: 3, dim: 1}", {tensor({2, 7})}).outputs.size() == 3);  // 3, 3, 1
  CHECK(rule_error("{type: Chunk, chunks: 2, dim: 0}", {tensor({2, 7})}) == "dim 0 is the batch; nnmem keeps every sample");
  CHECK(out_shape(run_rule("{type: RepeatInterleave, repeats: 4, dim: 1}", {tensor({2, 2, 8, 16})})) == "[2, 8, 8, 16]");
}

TEST_CASE("MatMul: broadcasting leading dimensions; each operand kept for the other's gradient") {
  const auto m = run_rule("{type: MatMul}", {tensor({2, 4, 8, 16}), tensor({2, 4, 16, 8})});
  CHECK(out_shape(m) == "[2, 4, 8, 8]");
  CHECK(saved_of(m) == "input0 input1");
  CHECK(m.macs == 2 * 4 * 8 * 8 * 16);
  CHECK(out_shape(run_rule("{type: MatMul}", {tensor({2, 4, 8, 16}), tensor({16, 8})})) == "[2, 4, 8, 8]");
  CHECK(saved_of(run_rule("{type: MatMul}", {tensor({2, 8, 16}), tensor({2, 16, 8}, false)})) == "input1");
  CHECK(rule_error("{type: MatMul}", {tensor({2, 8, 16}), tensor({2, 12, 8})}) ==
        "the first operand [2, 8, 16] has 16 columns, but the second [2, 12, 8] has 12 rows");
  CHECK(rule_error("{type: MatMul}", {tensor({2, 8, 16}), tensor({3, 16, 8})}) ==
        "the operands' leading dimensions [2, 8, 16] and [3, 16, 8] do not broadcast: 2 and 3 meet in dimension 0");
}

// What matmul keeps is the operand as bmm reads it: reshape copies one whose leading dimensions do
// not merge (probe_transformer_ops.py matmul_*, torch 2.13; validation/ops_saved_transformers.md).
TEST_CASE("MatMul: an operand whose leading dimensions do not fold is copied, and the copy kept") {
  auto laid = [](Shape shape, Layout layout, bool grad = true) {
    InputTensor t = tensor(std::move(shape), grad);
    t.layout = layout;
    return t;
  };
  // HF's eager attention: q and k are transposed views of [B, T, H, D] projections (k^T strided),
  // the weights contiguous, v a transposed view.
  const auto scores = run_rule("{type: MatMul}", {laid({2, 4, 8, 16}, Layout::Swapped12), laid({2, 4, 16, 8}, Layout::Strided)});
  CHECK(saved_of(scores) == "extra[2, 4, 8, 16]:float32 extra[2, 4, 16, 8]:float32");
  CHECK(scores.saved.at(0).made == Saved::Made::Operand);
  const auto context = run_rule("{type: MatMul}", {tensor({2, 4, 8, 8}), laid({2, 4, 8, 16}, Layout::Swapped12)});
  CHECK(saved_of(context) == "input0 extra[2, 4, 8, 16]:float32");
  // k repeated for grouped-query attention is contiguous: its .transpose(2, 3) folds as it is.
  CHECK(saved_of(run_rule("{type: MatMul}", {tensor({2, 4, 8, 16}), laid({2, 4, 16, 8}, Layout::TransposedLast)})) ==
        "input0 input1");
  // Broadcast over some leading dimensions but not all: copied at the expanded size.
  CHECK(saved_of(run_rule("{type: MatMul}", {tensor({1, 4, 8, 16}), tensor({2, 4, 16, 8})})) ==
        "extra[2, 4, 8, 16]:float32 input1");
  CHECK(saved_of(run_rule("{type: MatMul}", {tensor({4, 8, 16}), tensor({2, 4, 16, 8})})) == "extra[2, 4, 8, 16]:float32 input1");
  // YOLO11's attention: q, k and v are parts of one [B, heads, 2·key_dim + head_dim, N]
  // projection split along dim 2; their leading dimensions merge, so matmul reads k and v as they
  // are (measured on yolo11n: the projection's storage is kept, no copy)
  const auto parts = run_rule("{type: Split, split_size_or_sections: [32, 32, 64], dim: 2}", {tensor({2, 2, 128, 4})});
  CHECK(parts.layout == Layout::SplitRows);
  CHECK(run_rule("{type: Split, split_size_or_sections: 2, dim: 3}", {tensor({2, 2, 128, 4})}).layout == Layout::Strided);
  CHECK(run_rule("{type: Split, split_size_or_sections: 64, dim: 1}", {tensor({2, 128, 4, 4})}).layout == Layout::Strided);
  CHECK(saved_of(run_rule("{type: MatMul}", {laid({2, 2, 4, 32}, Layout::TransposedLast), laid({2, 2, 32, 4}, Layout::SplitRows)})) ==
        "input0 input1");
  CHECK(saved_of(run_rule("{type: MatMul}", {laid({2, 2, 64, 4}, Layout::SplitRows), laid({2, 2, 4, 4}, Layout::TransposedLast)})) ==
        "input0 input1");
  // .contiguous() of such a part copies (v.reshape(B, C, H, W) with more than one head)
  CHECK(run_rule("{type: Contiguous}", {laid({2, 2, 64, 4}, Layout::SplitRows)}).alias != Alias::View);
  // 3-D @ 3-D is bmm itself, whatever the strides.
  CHECK(saved_of(run_rule("{type: MatMul}", {laid({2, 8, 16}, Layout::Strided), tensor({2, 16, 8})})) == "input0 input1");
  // With a 2-D operand the larger is folded into one matrix: the first must be contiguous, the
  // second's .mT() must be.
  CHECK(saved_of(run_rule("{type: MatMul}", {laid({2, 4, 8, 16}, Layout::Swapped12), tensor({16, 8})})) ==
        "extra[2, 4, 8, 16]:float32 input1");
  CHECK(saved_of(run_rule("{type: MatMul}", {laid({2, 4, 8, 16}, Layout::TransposedLast), tensor({16, 8})})) ==
        "extra[2, 4, 8, 16]:float32 input1");
  CHECK(saved_of(run_rule("{type: MatMul}", {tensor({8, 16}), laid({2, 4, 16, 8}, Layout::TransposedLast)})) == "input0 input1");
  CHECK(saved_of(run_rule("{type: MatMul}", {tensor({8, 16}), laid({2, 4, 16, 8}, Layout::Swapped12)})) ==
        "input0 extra[2, 4, 16, 8]:float32");
  // Unkept (the other operand needs no gradient, or no training): the copy lives for the call.
  const auto unkept = run_rule("{type: MatMul}", {laid({2, 4, 8, 16}, Layout::Swapped12), laid({2, 4, 16, 8}, Layout::Strided, false)});
  CHECK(saved_of(unkept) == "extra[2, 4, 16, 8]:float32");
  CHECK(scratch_of(unkept.forward_scratch) == "[2, 4, 8, 16]:float32");
  CHECK(scratch_of(run_rule("{type: MatMul}", {laid({2, 4, 8, 16}, Layout::Swapped12), tensor({2, 4, 16, 8})}, kEval)
                       .forward_scratch) == "[2, 4, 8, 16]:float32");
}
