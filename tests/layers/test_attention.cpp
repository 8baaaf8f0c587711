// ScaledDotProductAttention (layers/attention.cpp). What each kernel keeps was read on torch
// 2.13.0+cpu with saved_tensors_hooks (validation/probe_transformer_ops.py): B=2, H=4, L=S=8, E=16.
#include <algorithm>

#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
std::vector<InputTensor> qkv(DType dtype = DType::Float32, std::int64_t kv_heads = 4) {
  return {tensor({2, 4, 8, 16}, true, dtype), tensor({2, kv_heads, 8, 16}, true, dtype), tensor({2, kv_heads, 8, 16}, true, dtype)};
}
}  // namespace

TEST_CASE("ScaledDotProductAttention: what each kernel keeps on the CPU") {
  SUBCASE("auto picks flash: q, k, v, the output and a float32 log-sum-exp [N, H, L]") {
    const auto r = run_rule("{type: ScaledDotProductAttention, is_causal: true}", qkv());
    CHECK(out_shape(r) == "[2, 4, 8, 16]");
    CHECK(saved_of(r) == "input0 input1 input2 output0 extra[2, 4, 8]:float32");
    CHECK(r.macs == 2 * 4 * 8 * 8 * 16 * 2);
  }
  SUBCASE("flash with a bool mask keeps it converted to the query's dtype") {
    auto in = qkv();
    in.push_back(tensor({2, 1, 8, 8}, false, DType::Bool));
    CHECK(saved_of(run_rule("{type: ScaledDotProductAttention}", in)) ==
          "input0 input1 input2 output0 extra[2, 4, 8]:float32 extra[2, 1, 8, 8]:float32");
  }
  SUBCASE("dropout sends auto to math: two L x S tensors, a third for dropout, scaled q and k") {
    const auto r = run_rule("{type: ScaledDotProductAttention, dropout_p: 0.1}", qkv());
    CHECK(saved_of(r) == "extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 8]:float32 "
                         "extra[2, 4, 8, 8]:float32 extra[2, 4, 8, 8]:float32 input2");
  }
  SUBCASE("math upcasts bfloat16 on the CPU; every kept tensor is float32, v a copy") {
    const auto r = run_rule("{type: ScaledDotProductAttention, kernel: math}", qkv(DType::BFloat16));
    CHECK(r.outputs[0].dtype == DType::BFloat16);
    CHECK(saved_of(r) == "extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 8]:float32 "
                         "extra[2, 4, 8, 8]:float32 extra[2, 4, 8, 16]:float32");
  }
  SUBCASE("grouped-query attention: flash keeps the small k and v; math repeats them") {
    CHECK(saved_of(run_rule("{type: ScaledDotProductAttention, enable_gqa: true}", qkv(DType::Float32, 2))) ==
          "input0 input1 input2 output0 extra[2, 4, 8]:float32");
    CHECK(saved_of(run_rule("{type: ScaledDotProductAttention, enable_gqa: true, kernel: math}", qkv(DType::Float32, 2))) ==
          "extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 8]:float32 extra[2, 4, 8, 8]:float32 "
          "extra[2, 4, 8, 16]:float32");
  }
  SUBCASE("3-D inputs go to math") {
    const auto r = run_rule("{type: ScaledDotProductAttention}",
                            {tensor({2, 8, 16}), tensor({2, 8, 16}), tensor({2, 8, 16})});
    CHECK(saved_of(r) == "extra[2, 8, 16]:float32 extra[2, 8, 16]:float32 extra[2, 8, 8]:float32 extra[2, 8, 8]:float32 input2");
  }
  SUBCASE("flash lays its output out as the query; math's is contiguous") {
    auto in = qkv();
    in[0].layout = Layout::Swapped12;
    CHECK(run_rule("{type: ScaledDotProductAttention}", in).layout == Layout::Swapped12);
    CHECK(run_rule("{type: ScaledDotProductAttention, kernel: math}", in).layout == Layout::Contiguous);
  }
  SUBCASE("evaluation keeps nothing") {
    CHECK(saved_of(run_rule("{type: ScaledDotProductAttention}", qkv(), kEval)).empty());
  }
}

TEST_CASE("ScaledDotProductAttention: a mask that needs a gradient (T5's position bias) on the CPU") {
  // torch 2.13: the CPU flash kernel gives attn_mask no gradient, so PyTorch runs math for one
  // that needs it, dropout or not ("No available kernel" if flash is forced); math's backward
  // adds the mask's gradient after the scores' (AddBackward0), summed to the mask's shape: a
  // float32 sum, then the 16-bit gradient, for a 16-bit input (validation/trace_diff.py
  // hf_t5_sdpa, as a float32 and a bfloat16 model: AddBackward0 > aten::sum, aten::empty).
  const auto with_mask = [](DType dtype) {
    auto in = qkv(dtype);
    in.push_back(tensor({1, 4, 8, 8}, true, dtype));
    return in;
  };
  CHECK(saved_of(run_rule("{type: ScaledDotProductAttention}", with_mask(DType::Float32))) ==
        "extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 16]:float32 extra[2, 4, 8, 8]:float32 extra[2, 4, 8, 8]:float32 input2");
  CHECK(rule_error("{type: ScaledDotProductAttention, kernel: flash}", with_mask(DType::Float32)) ==
        "kernel flash on the CPU gives attn_mask (input 3) no gradient, and it needs one; use math");
  using Kind = BackwardEvent::Kind;
  for (const DType dtype : {DType::Float32, DType::BFloat16}) {
    CAPTURE(dtype_name(dtype));
    const auto r = run_rule("{type: ScaledDotProductAttention, dropout_p: 0.1}", with_mask(dtype));
    REQUIRE(r.backward_program);
    const auto events = r.backward_program({true});
    const auto at = [&](Kind kind, int index) {
      return std::find_if(events.begin(), events.end(), [&](const BackwardEvent& e) { return e.kind == kind && e.index == index; });
    };
    const auto mask_grad = at(Kind::InputGrad, 3);
    REQUIRE(mask_grad != events.end());
    const auto scores = std::find_if(events.begin(), events.end(), [](const BackwardEvent& e) { return e.what == "grad of the scores"; });
    CHECK(scores < mask_grad);
    CHECK(mask_grad < at(Kind::ReleaseSaved, 0));  // before q @ k^T's backward lets go of the scaled q
    const bool upcast = dtype == DType::BFloat16;
    CHECK((std::prev(mask_grad)->what == "grad of attn_mask, summed (float32)") == upcast);
    if (upcast) CHECK(std::prev(mask_grad)->type == TensorType{{1, 4, 8, 8}, DType::Float32});
  }
  // A mask without a gradient: none in the program.
  auto plain = qkv();
  plain.push_back(tensor({1, 4, 8, 8}, false));
  const auto r = run_rule("{type: ScaledDotProductAttention, dropout_p: 0.1}", plain);
  const auto events = r.backward_program({true});
  CHECK(std::none_of(events.begin(), events.end(), [](const BackwardEvent& e) { return e.kind == BackwardEvent::Kind::InputGrad && e.index == 3; }));
}

TEST_CASE("ScaledDotProductAttention: CUDA kernels as derivatives.yaml says") {
  const auto flash = run_rule("{type: ScaledDotProductAttention}", qkv(DType::BFloat16), kCuda);
  CHECK(saved_of(flash) == "input0 input1 input2 output0 extra[2, 4, 8]:float32");
  const auto efficient = run_rule("{type: ScaledDotProductAttention}", qkv(), kCuda);  // float32: no flash
  CHECK(saved_of(efficient) == "input0 input1 input2 output0 extra[2, 4, 32]:float32");
  const auto cudnn = run_rule("{type: ScaledDotProductAttention, kernel: cudnn, dropout_p: 0.1}", qkv(DType::Float16), kCuda);
  CHECK(saved_of(cudnn) == "input0 input1 input2 output0 extra[2, 4, 8, 1]:float32 extra[]:int64 extra[]:int64");
}

TEST_CASE("ScaledDotProductAttention: errors name the expected and the found value") {
  CHECK(rule_error("{type: ScaledDotProductAttention}", qkv(DType::Float32, 2)) ==
        "the query [2, 4, 8, 16] has 4 in dimension 1 (heads), the key [2, 2, 8, 16] has 2; grouped-query attention "
        "needs enable_gqa: true");
  CHECK(rule_error("{type: ScaledDotProductAttention, enable_gqa: true}", qkv(DType::Float32, 3)) ==
        "the query [2, 4, 8, 16] has 4 in dimension 1 (heads), the key [2, 3, 8, 16] has 3; with enable_gqa the key's "
        "heads must divide the query's");
  auto masked = qkv();
  masked.push_back(tensor({2, 1, 8, 7}, false, DType::Bool));
  CHECK(rule_error("{type: ScaledDotProductAttention}", masked) ==
        "attn_mask (input 3) is [2, 1, 8, 7], which does not broadcast to the attention weights [2, 4, 8, 8]");
  CHECK(rule_error("{type: ScaledDotProductAttention}", {tensor({2, 4, 8, 16}), tensor({2, 4, 8, 12}), tensor({2, 4, 8, 16})}) ==
        "the key's head size 12 (its last dimension, [2, 4, 8, 12]) must equal the query's 16 ([2, 4, 8, 16])");
  CHECK(rule_error("{type: ScaledDotProductAttention, kernel: efficient}", qkv()) ==
        "kernel efficient runs only on CUDA; on the CPU there are math and flash");
  CHECK_HAS(rule_error("{type: ScaledDotProductAttention, kernel: fast}", qkv()), "kernel must be one of");
  CHECK(rule_error("{type: ScaledDotProductAttention}", {tensor({2, 4, 8, 16}, true, DType::Int64), tensor({2, 4, 8, 16}),
                                                          tensor({2, 4, 8, 16})}) ==
        "expected a floating-point input, found int64");
}

TEST_CASE("ScaledDotProductAttention and nn.RMSNorm: torch 1.13 has neither; the hand-written RMSNorm runs on it") {
  CHECK_FALSE(find_torch_profile("1.13")->has_layer("ScaledDotProductAttention"));  // the graph refuses it at its type
  CHECK(default_torch_profile().has_layer("ScaledDotProductAttention"));
  CHECK_THROWS_WITH_AS(run_rule("{type: RMSNorm, normalized_shape: 16}", {tensor({2, 8, 16})}, kCpu113),
                       "PyTorch 1.13 has no nn.RMSNorm (2.4 added it); form: hf, the hand-written LlamaRMSNorm, runs on it",
                       LayerError);
  CHECK(run_rule("{type: RMSNorm, normalized_shape: 16, form: hf}", {tensor({2, 8, 16})}, kCpu113).params.size() == 1);
}
