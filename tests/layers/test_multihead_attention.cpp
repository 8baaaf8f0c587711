// MultiheadAttention (layers/multihead_attention.cpp) against PyTorch 2.13 and 1.13 on the CPU:
// parameters, outputs, and what backward keeps, storage by storage, as validation/probe_mha.py
// measured it (validation/ops_saved_mha.md). N = 2, L = 5, S = 7, E = 16, 4 heads; float32.
#include <algorithm>
#include <map>
#include <numeric>

#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
// Bytes backward keeps beyond the inputs and parameters: new tensors and kept outputs.
std::int64_t kept_new(const LayerResult& r) {
  std::int64_t b = 0;
  for (const auto& s : r.saved) {
    if (s.of == Saved::Of::Extra) b += s.type.bytes();
    if (s.of == Saved::Of::Output) b += r.outputs.at(s.index).bytes();
  }
  return b;
}
bool keeps_input(const LayerResult& r, int i) {
  for (const auto& s : r.saved)
    if (s.of == Saved::Of::Input && s.index == i) return true;
  return false;
}
const std::string kMha = "{type: MultiheadAttention, embed_dim: 16, num_heads: 4";
LayerResult mha(const std::string& attrs, std::vector<InputTensor> in, const Context& ctx = kCpu) {
  return run_rule(kMha + attrs + "}", in, ctx);
}
}  // namespace

TEST_CASE("MultiheadAttention: parameters and outputs as nn.MultiheadAttention's") {
  auto r = mha("", {tensor({5, 2, 16})});
  CHECK(params_of(r) == "in_proj_weight[48, 16] in_proj_bias[48] out_proj.weight[16, 16] out_proj.bias[16]");
  CHECK(param_count(r) == 1088);
  REQUIRE(r.outputs.size() == 2);  // need_weights defaults to true, as forward's
  CHECK(out_shape(r, 0) == "[5, 2, 16]");
  CHECK(out_shape(r, 1) == "[2, 5, 5]");
  r = mha(", average_attn_weights: false", {tensor({5, 2, 16}), tensor({7, 2, 16}), tensor({7, 2, 16})});
  CHECK(out_shape(r, 1) == "[2, 4, 5, 7]");
  r = mha(", need_weights: false, batch_first: true", {tensor({2, 5, 16})});
  CHECK(r.outputs.size() == 1);
  CHECK(out_shape(r, 0) == "[2, 5, 16]");
  // kdim/vdim differ: three projection weights (896); add_bias_kv: bias_k, bias_v (1120); bias=False: 1024
  r = mha(", kdim: 8, vdim: 12", {tensor({5, 2, 16}), tensor({7, 2, 8}), tensor({7, 2, 12})});
  CHECK(params_of(r) == "q_proj_weight[16, 16] k_proj_weight[16, 8] v_proj_weight[16, 12] in_proj_bias[48] "
                        "out_proj.weight[16, 16] out_proj.bias[16]");
  CHECK(param_count(r) == 896);
  CHECK(param_count(mha(", add_bias_kv: true, add_zero_attn: true", {tensor({5, 2, 16})})) == 1120);
  CHECK(out_shape(mha(", add_bias_kv: true, add_zero_attn: true", {tensor({5, 2, 16})}), 1) == "[2, 5, 7]");
  CHECK(param_count(mha(", bias: false", {tensor({5, 2, 16})})) == 1024);
}

TEST_CASE("MultiheadAttention: what backward keeps, torch 2.13 (sdpa without weights) and 1.13") {
  const auto x = tensor({5, 2, 16}), k = tensor({7, 2, 16}), v = tensor({7, 2, 16});
  struct Case {
    std::string attrs;
    std::vector<InputTensor> in;
    std::int64_t kept213, kept113;  // probe_mha.py: distinct storages kept less inputs and parameters
  };
  const Case cases[] = {
      {"", {x}, 4000, 3376},                                            // mha_self_weights
      {", need_weights: false", {x}, 2720, 3368},                       // mha_self_noweights
      {", average_attn_weights: false", {x}, 4000, 3368},               // mha_self_noavg
      {", dropout: 0.1, need_weights: false", {x}, 6240, 4968},         // mha_self_dropout
      {", dropout: 0.1", {x}, 5600, 4976},                              // mha_self_dropout_weights
      {", need_weights: false", {x, k, v}, 3232, 4200},                 // mha_cross
      {"", {x, k, v}, 4192, 4208},                                      // mha_cross_weights
      {", kdim: 8, vdim: 12, need_weights: false", {x, tensor({7, 2, 8}), tensor({7, 2, 12})}, 3232, 4200},  // mha_kvdim
      {", add_bias_kv: true, add_zero_attn: true, need_weights: false", {x}, 4512, 4200},                    // mha_bias_kv
      {", bias: false, need_weights: false", {x}, 2720, 3368},          // mha_nobias
  };
  for (const auto& c : cases) {
    CAPTURE(c.attrs);
    CHECK(kept_new(mha(c.attrs, c.in)) == c.kept213);
    CHECK(kept_new(mha(c.attrs, c.in, kCpu113)) == c.kept113);
    CHECK(keeps_input(mha(c.attrs, c.in), 0));
  }
  // batch_first: the linear copies the transposed query into rows (640 B) instead of keeping it
  const auto bf = mha(", batch_first: true, need_weights: false", {tensor({2, 5, 16})});
  CHECK(kept_new(bf) == 640 + 2720);
  CHECK(!keeps_input(bf, 0));
  CHECK(kept_new(mha(", batch_first: true, need_weights: false", {tensor({2, 5, 16})}, kCpu113)) == 640 + 3368);
  // evaluation keeps nothing
  CHECK(mha("", {x}, Context{Mode::Eval, Device::Cpu, DType::Float32, std::nullopt}).saved.empty());
}

TEST_CASE("MultiheadAttention: located errors name expected and found values") {
  const auto x = tensor({5, 2, 16});
  CHECK(rule_error("{type: MultiheadAttention, embed_dim: 16, num_heads: 3}", {x}) ==
        "embed_dim 16 is not divisible by num_heads 3 (PyTorch: embed_dim must be divisible by num_heads)");
  CHECK(rule_error(kMha + ", kdim: 8}", {x, tensor({7, 2, 16}), tensor({7, 2, 16})}) ==
        "the key's last dimension is 16 ([7, 2, 16]), but kdim is 8");
  CHECK(rule_error(kMha + ", kdim: 8}", {x}) ==
        "one input is self-attention (query, key and value the same tensor), but kdim 8 and vdim 16 are not both "
        "embed_dim 16; give the key and value as inputs 1 and 2");
  CHECK(rule_error(kMha + "}", {tensor({5, 16})}) == "expected a query of 3 dimensions [L, N, E], found [5, 16]");
  CHECK(rule_error(kMha + ", batch_first: true}", {tensor({2, 5, 4, 16})}) ==
        "expected a query of 3 dimensions [N, L, E] (batch_first), found [2, 5, 4, 16]");
  CHECK(rule_error(kMha + "}", {tensor({5, 2, 12})}) == "the query's last dimension is 12 ([5, 2, 12]), but embed_dim is 16");
  CHECK(rule_error(kMha + "}", {x, tensor({7, 3, 16}), tensor({7, 3, 16})}) ==
        "query [5, 2, 16], key [7, 3, 16] and value [7, 3, 16] must have one batch size (dimension 1)");
  // autocast: measured on the CPU for self-attention through in_proj_weight with bool masks
  const Context amp{Mode::Train, Device::Cpu, DType::Float32, DType::BFloat16};
  const Context cuda_amp{Mode::Train, Device::Cuda, DType::Float32, DType::BFloat16};
  const auto x16 = tensor({5, 2, 16}, true, DType::BFloat16);
  CHECK(rule_error_in(amp, kMha + "}", {x16}).empty());
  CHECK(rule_error_in(cuda_amp, kMha + "}", {x16}) ==
        "mixed precision (autocast) on CUDA is not modelled for MultiheadAttention yet (on the CPU it is)");
  const auto k16 = tensor({7, 2, 16}, true, DType::BFloat16);
  CHECK(rule_error_in(amp, kMha + "}", {x16, k16}).empty());  // a key that is the value: modelled
  CHECK(rule_error_in(amp, kMha + "}", {x16, k16, k16}) ==
        "mixed precision (autocast) is modelled for self-attention and a key that is the value (one in_proj_weight); "
        "a value of its own or kdim/vdim (q/k/v_proj_weight) is not measured yet");
  // batch_first under autocast: the input's contiguous cast is the rows in_proj keeps (no copy
  // of its own); a float mask (cast by the graph) is refused
  InputTensor cast = tensor({2, 5, 16}, true, DType::BFloat16);
  cast.cast = true;
  CHECK(keeps_input(mha(", batch_first: true, need_weights: false", {cast}, amp), 0));
  CHECK_FALSE(keeps_input(mha(", batch_first: true, need_weights: false", {tensor({2, 5, 16})}), 0));
  InputTensor mask = tensor({5, 5}, false, DType::BFloat16);
  mask.cast = true;
  CHECK(rule_error_in(amp, kMha + ", need_weights: false, attn_mask: true}", {x16, mask}) ==
        "a floating-point mask under autocast (made the query's dtype, then cast) is not measured yet; give a bool mask");
  CHECK(rule_error(kMha + "}", {x, tensor({7, 2, 16}), tensor({6, 2, 16})}) ==
        "the key [7, 2, 16] and the value [6, 2, 16] must have one length (dimension 0)");
}

// Under CPU bfloat16 autocast, batch_first, dropout 0.1, need_weights=False (validation/probe_mha.py
// DIMS; ops_saved_mha.md, "Autocast"): 2.13's sdpa math composite runs in float32 on q, k, v cast
// from bfloat16 (the packed projection kept by nothing, v float32); cross-attention casts
// in_proj_weight's query rows and its key/value rows at each call, not the parameter.
TEST_CASE("MultiheadAttention: what backward keeps under CPU bfloat16 autocast, torch 2.13 and 1.13") {
  const Context amp{Mode::Train, Device::Cpu, DType::Float32, DType::BFloat16};
  Context amp113 = amp;
  amp113.torch = kCpu113.torch;
  const std::string attrs = ", dropout: 0.1, batch_first: true, need_weights: false";
  InputTensor q = tensor({2, 5, 16}, true, DType::BFloat16), key = tensor({2, 7, 16}, false, DType::BFloat16);
  q.cast = key.cast = true;
  // Self-attention: the probe's 7,008 B less the cast input (320), in_proj's copy (1,536) and out_proj's (512)
  const auto self = mha(attrs, {q}, amp);
  CHECK(kept_new(self) == 7008 - 320 - 1536 - 512);
  // a bfloat16 model without autocast keeps the same 7,008 B: the parameters themselves, the
  // input's rows copy (320) new
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  CHECK(kept_new(mha(attrs, {tensor({2, 5, 16}, true, DType::BFloat16)}, bf16)) == 7008 - 1536 - 512);
  // Cross-attention, the key not needing a gradient: 7,904 B (2.13) and 5,016 B (1.13) less the
  // cast query (320), the cast key (448) and out_proj's copy (512); the query's rows of
  // in_proj_weight as cast (512) are the layer's own
  const auto cross = mha(attrs, {q, key}, amp);
  CHECK(kept_new(cross) == 7904 - 320 - 448 - 512);
  CHECK(kept_new(mha(attrs, {q, key}, amp113)) == 5016 - 320 - 448 - 512);
  for (const ParamDecl& p : cross.params)
    CHECK(p.cast_by_layer == (p.name == "in_proj_weight" || p.name == "in_proj_bias"));
  for (const ParamDecl& p : self.params) CHECK_FALSE(p.cast_by_layer);
  // a key that needs a gradient: its rows of in_proj_weight as cast are kept too, [2E, E]
  key.requires_grad = true;
  CHECK(kept_new(mha(attrs, {q, key}, amp)) == kept_new(cross) + 1024);
}

namespace {
// The program's bookkeeping: every temporary freed once, every kept tensor let go of once.
void check_program(const LayerResult& r) {
  REQUIRE(r.backward_program);
  CHECK(r.backward_scratch.empty());
  std::map<int, int> made;  // temporary -> times freed
  std::vector<int> params, released;
  int inputs = 0;
  for (const BackwardEvent& e : r.backward_program({true})) {
    if (e.kind == BackwardEvent::Kind::Temporary) made[e.index] = 0;
    if (e.kind == BackwardEvent::Kind::Free) ++made.at(e.index);
    if (e.kind == BackwardEvent::Kind::ParamGrad) params.push_back(e.index);
    if (e.kind == BackwardEvent::Kind::ReleaseSaved && e.index >= 0) released.push_back(e.index);
    if (e.kind == BackwardEvent::Kind::InputGrad) ++inputs;
  }
  for (const auto& [slot, freed] : made) CHECK(freed == 1);
  CHECK(params == std::vector<int>{2, 3, 1, 0});  // out_proj's weight and bias first, in_proj's bias before its weight
  CHECK(inputs == 1);
  std::sort(released.begin(), released.end());
  std::vector<int> every(r.saved.size());
  std::iota(every.begin(), every.end(), 0);
  CHECK(released == every);  // each kept tensor let go of once, by the node that kept it last
}

// Bytes the program's temporaries hold at most at once (parameters' and input's gradients aside).
std::int64_t program_peak(const LayerResult& r) {
  std::map<int, std::int64_t> live;
  std::int64_t now = 0, most = 0;
  for (const BackwardEvent& e : r.backward_program({true})) {
    if (e.kind == BackwardEvent::Kind::Temporary) most = std::max(most, now += live[e.index] = e.type.bytes());
    if (e.kind == BackwardEvent::Kind::Free) now -= live.at(e.index);
  }
  return most;
}
}  // namespace

TEST_CASE("MultiheadAttention: backward node by node where measured (batch_first self-attention, no weights)") {
  const std::string attrs = ", dropout: 0.1, batch_first: true, need_weights: false";
  for (const Context& ctx : {kCpu, kCpu113}) check_program(mha(attrs, {tensor({2, 5, 16})}, ctx));
  // With masks (validation/ops_saved_mha.md, mha_masked): 2.13's flash kernel lets go of the
  // float mask it kept, 1.13's BaddbmmBackward0 is BmmBackward0's bytes; and without dropout.
  const std::string masked = ", batch_first: true, need_weights: false, key_padding_mask: true, attn_mask: true";
  const auto x = tensor({2, 5, 16});
  const auto kpm = tensor({2, 5}, false, DType::Bool), causal = tensor({5, 5}, false, DType::Bool);
  // Under bfloat16 autocast (torch_encoder): 2.13's math composite in float32, its casts' nodes
  Context amp{Mode::Train, Device::Cpu, DType::Float32, DType::BFloat16};
  InputTensor x16 = tensor({2, 5, 16}, true, DType::BFloat16);
  x16.cast = true;
  check_program(mha(attrs, {x16}, amp));
  amp.torch = kCpu113.torch;
  check_program(mha(attrs, {x16}, amp));
  for (const Context& ctx : {kCpu, kCpu113}) {
    check_program(mha(masked, {x, kpm, causal}, ctx));
    check_program(mha(", batch_first: true, need_weights: false", {x}, ctx));
  }
  // [L*N, E] = a head's [N*H, L, hd] = 640 B, packed [3, L, N, E] = 1,920 B: the largest moment
  // is where q, k, v's gradients go into the packed one (2.13: zero-filled [3, L, N, E] each,
  // summed in place; 1.13: one cat beside the three)
  CHECK(program_peak(mha(masked, {x, kpm, causal})) == 2 * 1920 + 2 * 640);  // the sum, k's, k and v
  CHECK(program_peak(mha(masked, {x, kpm, causal}, kCpu113)) == 1920 + 3 * 640);
  // Not measured node by node: the one-node bound (need_weights, cross-attention, not batch_first)
  for (const auto& [a, in] : {std::pair{std::string(", dropout: 0.1, batch_first: true"), std::vector{tensor({2, 5, 16})}},
                              std::pair{attrs, std::vector{tensor({2, 5, 16}), tensor({2, 7, 16})}},
                              std::pair{std::string(", dropout: 0.1, need_weights: false"), std::vector{tensor({5, 2, 16})}}}) {
    const auto r = mha(a, in, kCpu113);
    CHECK(!r.backward_program);
    CHECK(r.backward_scratch.size() == 1);
  }
}

// Inference (validation/ops_saved_mha.md, "Inference"): torch_decoder's cross-attention and
// self-attention, width 32, 4 heads, L = S = 8, N = 4 ([L, N, E] = 4,096 B), batch_first.
namespace {
std::int64_t moment_bytes(const std::vector<Scratch>& tensors) {
  std::int64_t b = 0;
  for (const auto& s : tensors) b += s.type.bytes();
  return b;
}
std::int64_t largest_moment(const LayerResult& r) {
  std::int64_t most = 0;
  for (const auto& m : r.forward_moments) most = std::max(most, moment_bytes(m));
  return most;
}
}  // namespace

TEST_CASE("MultiheadAttention in inference: the fast path, and the temporaries around the output elsewhere") {
  const Context eval213{Mode::Eval, Device::Cpu, DType::Float32, std::nullopt};
  const Context eval113{Mode::Eval, Device::Cpu, DType::Float32, std::nullopt, find_torch_profile("1.13")};
  const std::string attn0 = "{type: MultiheadAttention, embed_dim: 32, num_heads: 4, batch_first: true, need_weights: false";
  const std::string attn = attn0 + ", dropout: 0.1";
  const auto x = tensor({4, 8, 32});
  // self-attention: 2.x's fast path whatever the dropout; 1.13 refuses it with dropout 0.1
  const auto self213 = run_rule(attn + "}", {x}, eval213);
  CHECK(self213.forward_moments.empty());
  CHECK(self213.forward_scratch.empty());
  CHECK(run_rule(attn0 + "}", {x}, eval113).forward_moments.empty());
  const auto self113 = run_rule(attn + "}", {x}, eval113);
  CHECK(largest_moment(self113) == 28672);  // the measured peak above the start (nothing else live): bmm's output beside its copy
  CHECK(moment_bytes(self113.forward_scratch) == 24576);  // q, k, v, q scaled, softmax, the copy beside out_proj's output
  // cross-attention (key is value): 2.13 q, the [S, N, 2E] projection and its [2, S, N, E] copy
  const auto cross213 = run_rule(attn + "}", {x, x}, eval213);
  CHECK(largest_moment(cross213) == 4096 + 8192 + 8192);
  CHECK(moment_bytes(cross213.forward_scratch) == 4096);  // sdpa's output, which out_proj reads
  const auto cross113 = run_rule(attn + "}", {x, x}, eval113);
  CHECK(largest_moment(cross113) == 28672);              // the measured peak 32,768 less norm1's output
  // training keeps its tensors and has no inference moments
  CHECK(run_rule(attn + "}", {x, x}, kCpu).forward_moments.empty());
}

// Masks (validation/probe_mha.py mha_self_causal ... mha_cross_kpm; ops_saved_mha.md, "Masks"):
// 2.13's flash kernel keeps the mask made float and merged; 1.13's baddbmm keeps none.
TEST_CASE("MultiheadAttention: masks as inputs, what they add to the kept tensors, and their shapes checked") {
  const auto x = tensor({5, 2, 16});
  const auto causal = tensor({5, 5}, false, DType::Bool);
  const auto kpm = tensor({2, 5}, false, DType::Bool);
  const auto full = tensor({8, 5, 5}, false, DType::Bool);
  const std::string nw = ", need_weights: false";
  CHECK(kept_new(mha(nw + ", attn_mask: true", {x, causal})) == 2720 + 100);
  CHECK(kept_new(mha(nw + ", attn_mask: true", {x, tensor({5, 5}, false)})) == 2720 + 100);  // a float mask
  CHECK(kept_new(mha(nw + ", attn_mask: true, is_causal: true", {x, causal})) == 2720);
  CHECK(kept_new(mha(nw + ", attn_mask: true", {x, full})) == 2720 + 800);
  CHECK(kept_new(mha(nw + ", key_padding_mask: true", {x, kpm})) == 2720 + 160);
  CHECK(kept_new(mha(nw + ", key_padding_mask: true, attn_mask: true", {x, kpm, causal})) == 2720 + 800);
  // the explicit path keeps no mask: need_weights (2.13), and 1.13 always
  CHECK(kept_new(mha(", key_padding_mask: true, attn_mask: true", {x, kpm, causal})) == kept_new(mha("", {x})));
  CHECK(kept_new(mha(nw + ", key_padding_mask: true, attn_mask: true", {x, kpm, causal}, kCpu113)) == 3368);
  // cross-attention: the key padding is over the key's length
  const auto q = tensor({5, 2, 16}), kv = tensor({7, 2, 16});
  CHECK(kept_new(mha(nw + ", key_padding_mask: true", {q, kv, kv, tensor({2, 7}, false, DType::Bool)})) ==
        kept_new(mha(nw, {q, kv, kv})) + 2 * 4 * 7 * 4);  // probe: 9,984 B against 9,760
  // a mask of the wrong shape or dtype, is_causal without its mask or in 1.13, eval
  CHECK(rule_error(kMha + nw + ", attn_mask: true}", {x, tensor({5, 7}, false, DType::Bool)}) ==
        "the attn_mask is [5, 7], expected [5, 5] or [8, 5, 5] ([L, S] or [N * num_heads, L, S]: the query's and the key's lengths)");
  CHECK(rule_error(kMha + nw + ", key_padding_mask: true}", {q, kv, tensor({2, 5}, false, DType::Bool)}) ==
        "the key_padding_mask is [2, 5], expected [2, 7] (the batch and the key's length)");
  CHECK(rule_error(kMha + nw + ", key_padding_mask: true}", {x, tensor({2, 5}, false, DType::Int64)}) ==
        "the key_padding_mask is int64; PyTorch takes a bool or floating-point mask");
  CHECK(rule_error(kMha + nw + ", is_causal: true}", {x}) ==
        "is_causal is a hint that attn_mask is causal; PyTorch needs the attn_mask too (give it as an input, attn_mask: true)");
  CHECK(rule_error_in(kCpu113, kMha + nw + ", attn_mask: true, is_causal: true}", {x, causal}) ==
        "PyTorch 1.13's MultiheadAttention.forward has no is_causal");
  CHECK(rule_error(kMha + nw + ", attn_mask: true}", {x}) ==
        "expected 1 to 3 inputs (query, key, value) and then the 1 mask(s) the attributes name, found 1 inputs");
  CHECK(rule_error_in(Context{Mode::Eval, Device::Cpu, DType::Float32, std::nullopt}, kMha + nw + ", attn_mask: true}", {x, causal}) ==
        "a mask in inference off the fast path (PyTorch 2.x's sdpa or explicit path) is not measured yet");
  CHECK(rule_error(kMha + nw + ", add_bias_kv: true, attn_mask: true}", {x, tensor({5, 5}, false, DType::Bool)}) ==
        "a mask with add_bias_kv or add_zero_attn (the masks padded as the key) is not modelled yet");
}
