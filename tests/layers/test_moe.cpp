// MoEExperts (layers/moe.cpp) against HF's MixtralSparseMoeBlock on torch 2.13.0+cpu,
// experts_implementation "grouped_mm": validation/probe_hf_moe.py, hidden 64, intermediate 128,
// 4 experts, top 2, input [2, 32, 64] (64 tokens, 128 token-expert pairs).
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

const char* kExperts = "{type: MoEExperts, num_experts: 4, top_k: 2, intermediate_size: 128}";

std::int64_t saved_bytes(const LayerResult& r) {
  std::int64_t n = 0;
  for (const auto& s : r.saved)
    if (s.of == Saved::Of::Extra) n += s.type.bytes();
  return n;
}

}  // namespace

TEST_CASE("MoEExperts: the experts' stacked weights, and what the grouped_mm path keeps") {
  const auto r = run_rule(kExperts, {tensor({2, 32, 64}), tensor({2, 32, 4})});
  CHECK(out_shape(r) == "[2, 32, 64]");
  CHECK(params_of(r) == "gate_up_proj[4, 256, 64] down_proj[4, 64, 128]");
  // The probe's 350,480 bytes, every seed and routing alike, less the router's input (16,384: the
  // Linear mlp.gate keeps it): softmax 1,024, topk's indices 1,024, the weights 512 and their sum
  // 256, three permutations 3,072, offsets 16, gathered rows 32,768, gate_up output 131,072,
  // silu 65,536, product 65,536, down output 32,768, gathered weights 512.
  CHECK(saved_bytes(r) == 350'480 - 16'384);
  CHECK_HAS(saved_of(r), "extra[4]:int32 extra[128, 64]:float32 extra[128, 256]:float32");
  // Nothing needs a gradient, or evaluation: nothing kept.
  CHECK(saved_of(run_rule(kExperts, {tensor({2, 32, 64}, false), tensor({2, 32, 4}, false)}, kCpu, false)).empty());
  CHECK(saved_of(run_rule(kExperts, {tensor({2, 32, 64}), tensor({2, 32, 4})}, kEval)).empty());
}

TEST_CASE("MoEExperts: its inputs must be the hidden states and their router logits") {
  CHECK(rule_error(kExperts, {tensor({2, 32, 64}), tensor({2, 32, 8})}) ==
        "expected the router's logits over num_experts 4 experts in input 1's last dimension, found [2, 32, 8]");
  CHECK(rule_error(kExperts, {tensor({2, 32, 64}), tensor({2, 16, 4})}) ==
        "expected the router's logits for every token of input 0 [2, 32, 64], found [2, 16, 4]");
  CHECK(rule_error("{type: MoEExperts, num_experts: 4, top_k: 5, intermediate_size: 8}", {tensor({2, 8}), tensor({2, 4})}) ==
        "top_k 5 is more than num_experts 4");
}
