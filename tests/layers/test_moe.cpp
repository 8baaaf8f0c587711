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

// The backward program's temporaries in order, "[64, 64]:float32 [128, 64]:float32 ...", and
// where the logits' gradient (input 1) comes: "input1".
std::string program_of(const LayerResult& r) {
  std::string s;
  for (const BackwardEvent& e : r.backward_program({true})) {
    if (e.kind == BackwardEvent::Kind::Temporary)
      s += (s.empty() ? "" : " ") + to_string(e.type.shape) + ":" + std::string(dtype_name(e.type.dtype));
    if (e.kind == BackwardEvent::Kind::InputGrad) s += (s.empty() ? "" : " ") + std::string("input") + std::to_string(e.index);
  }
  return s;
}

const Context kBf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};

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

TEST_CASE("MoEExperts: a 16-bit model's routing stays float32 (the router softmaxes router_logits.float())") {
  using enum DType;
  const auto bf16 = [](const Shape& shape, bool grad = true) { return tensor(shape, grad, BFloat16); };
  const auto r = run_rule(kExperts, {bf16({2, 32, 64}), bf16({2, 32, 4})}, kBf16);
  // probe_hf_moe.py --dtype bfloat16 (and float16 alike): 178,448 bytes, less the router's input
  // (8,192); of them softmax's result [64, 4], the top-k weights [64, 2], their sum [64, 1] and
  // the gathered weights [128] in float32 (2,304 bytes, where 16 bits would be 1,152).
  CHECK(saved_bytes(r) == 178'448 - 8'192);
  CHECK_HAS(saved_of(r), "extra[64, 4]:float32 extra[64, 2]:int64 extra[64, 2]:float32 extra[64, 1]:float32");
  CHECK_HAS(saved_of(r), "extra[128, 64]:bfloat16 extra[128]:float32");
  // Forward: `proj_out * weights` promotes the weighted rows (and their reordering) to float32.
  CHECK(scratch_of(r.forward_scratch) == "[128]:int64 [128, 64]:float32 [128, 64]:float32");
  // Backward (trace_diff.py hf_mixtral_sdpa --dtype bfloat16, event by event): the output's
  // gradient cast up to float32 first (ToCopyBackward0), float32 rows through `* weights`, the
  // down output's gradient cast back to bfloat16 (the engine's), and softmax's float32 gradient
  // before the logits' bfloat16 one.
  const std::string program = program_of(r);
  CHECK(program.starts_with("[64, 64]:float32 [128, 64]:float32 [128, 64]:float32 [128, 64]:float32 [128, 64]:float32 "
                            "[128, 64]:bfloat16 [128, 1]:float32 [128, 128]:bfloat16"));
  CHECK(program.ends_with("[64, 2]:float32 [64, 1]:float32 [64, 2]:float32 [64, 4]:float32 [64, 4]:float32 input1"));
  // A float32 model under autocast: float32 experts, bfloat16 logits: no cast of the rows, the
  // logits' gradient still softmax's cast down.
  const auto amp = run_rule(kExperts, {tensor({2, 32, 64}), bf16({2, 32, 4})});
  CHECK(program_of(amp).starts_with("[128, 64]:float32 [128, 64]:float32 [128, 64]:float32 [128, 64]:float32 [128, 1]:float32 "
                                    "[128, 128]:float32"));
  CHECK(program_of(amp).ends_with("[64, 4]:float32 [64, 4]:float32 input1"));
  const auto f32 = run_rule(kExperts, {tensor({2, 32, 64}), tensor({2, 32, 4})});
  CHECK(program_of(f32).ends_with("[64, 2]:float32 [64, 4]:float32 input1"));
  // Inference: the top-k weights and the gathered weights live in float32 at the call's peak
  // (the 16-bit model's eval peak, 204,064 bytes measured).
  const auto eval = run_rule(kExperts, {bf16({2, 32, 64}, false), bf16({2, 32, 4}, false)},
                             {Mode::Eval, Device::Cpu, BFloat16, std::nullopt});
  CHECK_HAS(scratch_of(eval.forward_scratch),
            "[64, 2]:float32 [64, 2]:int64 [128]:int64 [128]:int64 [128, 64]:bfloat16 [128]:float32");
}
