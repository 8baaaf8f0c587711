// LayerNorm, LayerNorm2d, RMSNorm, GroupNorm, InstanceNorm (layers/norm.cpp). Parameter counts from PyTorch;
// what each keeps read on torch 2.13.0+cpu with saved_tensors_hooks
// (validation/probe_transformer_ops.py, and the bfloat16 and autocast cases beside it).
#include <algorithm>
#include <map>
#include <string>

#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("LayerNorm: parameters; keeps the input, weight, bias, mean and rstd") {
  const auto r = run_rule("{type: LayerNorm, normalized_shape: 64}", {tensor({2, 8, 64})});
  CHECK(params_of(r) == "weight[64] bias[64]");
  CHECK(saved_of(r) == "input0 extra[2, 8, 1]:float32 extra[2, 8, 1]:float32");
  CHECK(kept_params(r) == "param0 param1");
  CHECK(params_of(run_rule("{type: LayerNorm, normalized_shape: [8, 64], bias: false}", {tensor({2, 8, 64})})) ==
        "weight[8, 64]");
  CHECK(saved_of(run_rule("{type: LayerNorm, normalized_shape: [8, 64]}", {tensor({2, 8, 64})})) ==
        "input0 extra[2, 1, 1]:float32 extra[2, 1, 1]:float32");
  const auto plain = run_rule("{type: LayerNorm, normalized_shape: 64, elementwise_affine: false}", {tensor({2, 8, 64})});
  CHECK(params_of(plain).empty());
  CHECK(saved_of(plain) == "input0 extra[2, 8, 1]:float32 extra[2, 8, 1]:float32");
  // bfloat16 model: bfloat16 statistics; a bfloat16 input beside float32 weights (CPU autocast): float32
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  CHECK(saved_of(run_rule("{type: LayerNorm, normalized_shape: 64}", {tensor({2, 8, 64}, true, DType::BFloat16)}, bf16)) ==
        "input0 extra[2, 8, 1]:bfloat16 extra[2, 8, 1]:bfloat16");
  CHECK(saved_of(run_rule("{type: LayerNorm, normalized_shape: 64}", {tensor({2, 8, 64}, true, DType::BFloat16)})) ==
        "input0 extra[2, 8, 1]:float32 extra[2, 8, 1]:float32");
  CHECK(rule_error("{type: LayerNorm, normalized_shape: 32}", {tensor({2, 8, 64})}) ==
        "normalized_shape is [32], but the input [2, 8, 64] does not end with it (after the batch dimension)");
}

// torchvision's LayerNorm2d: layer_norm on the input permuted to [N, H, W, C] (a view: the input's
// storage is what it keeps), statistics per pixel (validation/probe_zoo.py, ops_saved_zoo.md)
TEST_CASE("LayerNorm2d: LayerNorm over the channels of [N, C, H, W]") {
  const auto r = run_rule("{type: LayerNorm2d, eps: 1e-6}", {tensor({2, 3, 8, 8})});
  CHECK(params_of(r) == "weight[3] bias[3]");
  CHECK(r.outputs[0].shape == Shape{2, 3, 8, 8});
  CHECK(r.layout == Layout::ChannelsLast);  // layer_norm's contiguous [N, H, W, C] result, permuted back
  CHECK(saved_of(r) == "input0 extra[2, 8, 8, 1]:float32 extra[2, 8, 8, 1]:float32");
  CHECK(kept_params(r) == "param0 param1");
  CHECK(params_of(run_rule("{type: LayerNorm2d, bias: false}", {tensor({2, 3, 8, 8})})) == "weight[3]");
  CHECK(params_of(run_rule("{type: LayerNorm2d, normalized_shape: 3}", {tensor({2, 3, 8, 8})})) == "weight[3] bias[3]");
  CHECK(rule_error("{type: LayerNorm2d, normalized_shape: 4}", {tensor({2, 3, 8, 8})}) ==
        "normalized_shape is 4, but the input [2, 3, 8, 8] has 3 channels");
  CHECK(rule_error("{type: LayerNorm2d}", {tensor({2, 3, 8})}) == "expected a 4-D input [N, C, H, W], found 3-D [2, 3, 8]");
}

TEST_CASE("RMSNorm: the torch and hf forms keep different tensors") {
  const auto t = run_rule("{type: RMSNorm, normalized_shape: 64}", {tensor({2, 8, 64})});
  CHECK(params_of(t) == "weight[64]");
  CHECK(saved_of(t) == "input0 extra[2, 8, 1]:float32 extra[2, 8, 64]:float32");
  CHECK(saved_of(run_rule("{type: RMSNorm, normalized_shape: 64, elementwise_affine: false}", {tensor({2, 8, 64})})) ==
        "input0 extra[2, 8, 1]:float32");
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  const auto in = std::vector<InputTensor>{tensor({2, 8, 64}, true, DType::BFloat16)};
  // F.rms_norm on bfloat16: a float32 copy of x, rstd and x * rstd in float32
  CHECK(saved_of(run_rule("{type: RMSNorm, normalized_shape: 64}", in, bf16)) ==
        "extra[2, 8, 64]:float32 extra[2, 8, 1]:float32 extra[2, 8, 64]:float32");
  // LlamaRMSNorm: the normalised input is kept cast back to bfloat16
  const auto hf = run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in, bf16);
  CHECK(saved_of(hf) == "extra[2, 8, 64]:float32 extra[2, 8, 1]:float32 extra[2, 8, 64]:bfloat16");
  CHECK(hf.outputs[0].dtype == DType::BFloat16);
  // beside a float32 weight (autocast), HF's weight * x.to(bfloat16) is float32
  CHECK(run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in).outputs[0].dtype == DType::Float32);
  // T5LayerNorm multiplies x itself by rstd: a bfloat16 model's keeps x beside its float32 copy
  // (hf_t5_sdpa --dtype bfloat16, torch 2.13: MulBackward0.self, 8,192 bytes per norm)
  const auto t5 = run_rule("{type: RMSNorm, normalized_shape: 64, form: t5}", in, bf16);
  CHECK(saved_of(t5) == "extra[2, 8, 64]:float32 input0 extra[2, 8, 1]:float32 extra[2, 8, 64]:bfloat16");
  CHECK(t5.outputs[0].dtype == DType::BFloat16);
  // a float32 input: the same as form: hf
  CHECK(saved_of(run_rule("{type: RMSNorm, normalized_shape: 64, form: t5}", {tensor({2, 8, 64})})) ==
        saved_of(run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", {tensor({2, 8, 64})})));
  // beside a float32 weight (autocast) the product stays float32, kept so, and so is the output
  const auto t5_amp = run_rule("{type: RMSNorm, normalized_shape: 64, form: t5}", in);
  CHECK(saved_of(t5_amp) == "extra[2, 8, 64]:float32 input0 extra[2, 8, 1]:float32 extra[2, 8, 64]:float32");
  CHECK(t5_amp.outputs[0].dtype == DType::Float32);
}

TEST_CASE("RMSNorm runs its backward node by node where it was measured") {
  // validation/trace_diff.py hf_llama_sdpa: the final norm's backward, event by event; its peak
  // is five input-sized tensors (the input's gradient among them) once the incoming one is let
  // go, where one node made two.
  using Kind = BackwardEvent::Kind;
  const auto most_live = [](const std::vector<BackwardEvent>& events, const TensorType& x) {
    int live = 0, most = 0;
    std::map<int, bool> sized;
    for (const BackwardEvent& e : events) {
      if (e.kind == Kind::Temporary) sized[e.index] = e.type == x, live += e.type == x;
      if (e.kind == Kind::Free) live -= sized[e.index];
      if (e.kind == Kind::InputGrad) ++live;  // (the input's gradient stays: the node above takes it)
      most = std::max(most, live);
    }
    return most;
  };
  const TensorType x{{2, 8, 64}, DType::Float32};
  const auto releases = [](const std::vector<BackwardEvent>& events) {
    return std::count_if(events.begin(), events.end(), [](const BackwardEvent& e) { return e.kind == Kind::ReleaseSaved; });
  };
  for (const char* form : {"hf", "t5", "torch"}) {  // (nn.RMSNorm: rms_mlp_torch)
    CAPTURE(form);
    const auto r = run_rule(std::string("{type: RMSNorm, normalized_shape: 64, form: ") + form + "}", {tensor({2, 8, 64})});
    REQUIRE(r.backward_program);
    const auto events = r.backward_program({true});
    CHECK(most_live(events, x) == 5);
    CHECK(releases(events) == 3);
    CHECK(std::count_if(events.begin(), events.end(), [](const BackwardEvent& e) { return e.kind == Kind::ParamGrad; }) == 1);
    // x's gradient in two parts, the first handed to x as x * r's node returns (where x has
    // a gradient already, a residual stream's, the engine adds it in and frees it there)
    std::string kinds;
    for (const BackwardEvent& e : events)
      if (e.kind == Kind::InputGrad || e.kind == Kind::InputGradsOut) kinds += e.kind == Kind::InputGrad ? "grad " : "out ";
    CHECK(kinds == "grad out grad ");
  }
  // A bfloat16 model's LlamaRMSNorm (trace_diff.py hf_llama_sdpa --dtype bfloat16): the same in
  // float32 between two casts; its peak five float32 input-sized tensors, h's gradient among them.
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  const auto in16 = std::vector<InputTensor>{tensor({2, 8, 64}, true, DType::BFloat16)};
  const auto hf16 = run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in16, bf16);
  REQUIRE(hf16.backward_program);
  const auto events16 = hf16.backward_program({true});
  CHECK(most_live(events16, x) == 5);
  CHECK(events16[events16.size() - 2].kind == Kind::InputGrad);  // after the float32 parts are summed
  CHECK(std::count_if(events16.begin(), events16.end(), [](const BackwardEvent& e) { return e.kind == Kind::InputGrad; }) == 1);
  CHECK(releases(events16) == 3);
  // nn.RMSNorm in a bfloat16 model (rms_mlp_torch --dtype bfloat16) casts back last: its
  // backward starts with the gradient in float32, both products in float32 beside it and the
  // weight's summed in float32 and cast to bfloat16; its peak five float32 tensors too.
  const auto torch16 = run_rule("{type: RMSNorm, normalized_shape: 64}", in16, bf16);
  REQUIRE(torch16.backward_program);
  const auto cast_last = torch16.backward_program({true});
  CHECK(most_live(cast_last, x) == 5);
  CHECK(cast_last.front().kind == Kind::Temporary);
  CHECK(cast_last.front().type == x);
  CHECK(cast_last[1].kind == Kind::ReleaseGradOut);
  CHECK(releases(cast_last) == 3);
  // Under autocast (a bfloat16 input, the float32 weight; rms_mlp and rms_mlp_torch --amp
  // bfloat16): LlamaRMSNorm's weight product in float32, the normalised input's gradient cast
  // to bfloat16 (five float32 tensors at once still); nn.RMSNorm's as in a bfloat16 model, but
  // the weight's gradient summed in float32 is the gradient.
  const auto hf_amp = run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in16);
  REQUIRE(hf_amp.backward_program);
  const auto amp_events = hf_amp.backward_program({true});
  CHECK(most_live(amp_events, x) == 5);
  CHECK(amp_events[0].type == x);
  CHECK(std::any_of(amp_events.begin(), amp_events.end(), [](const BackwardEvent& e) {
    return e.kind == Kind::Temporary && e.type == TensorType{{2, 8, 64}, DType::BFloat16};
  }));
  const auto torch_amp = run_rule("{type: RMSNorm, normalized_shape: 64}", in16);
  REQUIRE(torch_amp.backward_program);
  const auto torch_amp_events = torch_amp.backward_program({true});
  CHECK(std::none_of(torch_amp_events.begin(), torch_amp_events.end(),
                     [](const BackwardEvent& e) { return e.kind == Kind::Temporary && e.type.shape == Shape{64}; }));
  CHECK(cast_last.size() == torch_amp_events.size() + 2);  // (no float32 weight gradient to make and free)
  // 1.13 adds h's two float32 parts out of place once the pow's node has let go of h
  // (rms_mlp --torch 1.13 --dtype bfloat16 and --amp bfloat16: `PowBackward0 > aten::add`).
  const Context bf16_113{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt, find_torch_profile("1.13")};
  const auto old16 = run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in16, bf16_113).backward_program({true});
  // (three events more: the sum made and freed, and h^2 let go, which 1.13's MeanBackward1 keeps)
  CHECK(old16.size() == events16.size() + 3);
  const auto sum = std::find_if(old16.begin(), old16.end(), [](const BackwardEvent& e) { return e.what.find("summed") != std::string::npos; });
  REQUIRE(sum != old16.end());
  REQUIRE(sum != old16.begin());
  CHECK(std::prev(sum)->kind == Kind::ReleaseSaved);  // h, let go first
  CHECK(most_live(old16, x) == 5);
  // T5LayerNorm on a bfloat16 x (rms_mlp_t5 as a bfloat16 model and under autocast): x * r's
  // node makes x's first part in x's dtype and lets go of x; the second comes at the end.
  for (const Context* ctx : {&bf16, &kCpu}) {
    const auto t5_16 = run_rule("{type: RMSNorm, normalized_shape: 64, form: t5}", in16, *ctx);
    REQUIRE(t5_16.backward_program);
    const auto t5_events = t5_16.backward_program({true});
    CHECK(most_live(t5_events, x) == 5);
    std::string kinds;
    for (const BackwardEvent& e : t5_events)
      if (e.kind == Kind::InputGrad || e.kind == Kind::InputGradsOut || e.kind == Kind::ReleaseSaved)
        kinds += e.kind == Kind::InputGrad ? "grad " : e.kind == Kind::InputGradsOut ? "out " : "release ";
    CHECK(kinds == "release grad release out release release grad ");  // n; x's part; x; r; h; x's part
  }
  // Where it was not measured, one node: a frozen weight, an input without a gradient.
  CHECK(!run_one("{type: RMSNorm, normalized_shape: 64, form: hf}", {2, 8, 64}, true, false).backward_program);
  CHECK(!run_one("{type: RMSNorm, normalized_shape: 64, form: hf}", {2, 8, 64}, false).backward_program);
}

// validation/probe_autocast_113.py (ops_saved_autocast.md): under CPU bfloat16 autocast a float32
// model's LayerNorm, LayerNorm2d and GroupNorm get a bfloat16 input from the layer before (autocast
// leaves them alone) and 1.13's layer_norm and group_norm raise "expected scalar type BFloat16 but
// found Float", in eval too; without weights, or with a float32 input, they run; 2.13 runs them all.
TEST_CASE("RMSNorm: the training forward's temporaries beside the output (HF's forms)") {
  // trace_diff.py rms_mlp and rms_mlp_t5 --segments: each norm's forward peak, float32, as a
  // bfloat16 model and under autocast. LlamaRMSNorm makes its output beside the mean and, when it
  // keeps a cast of x * rsqrt, beside that float32 product; T5LayerNorm lets go of the product
  // once cast, before its output: a moment of five tensors.
  const Context bf16{Mode::Train, Device::Cpu, DType::BFloat16, std::nullopt};
  const auto in16 = std::vector<InputTensor>{tensor({2, 8, 64}, true, DType::BFloat16)};
  const auto hf = run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", {tensor({2, 8, 64})});
  CHECK(scratch_of(hf.forward_scratch) == "[2, 8, 1]:float32");
  CHECK(scratch_of(run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in16, bf16).forward_scratch) ==
        "[2, 8, 1]:float32 [2, 8, 64]:float32");
  CHECK(scratch_of(run_rule("{type: RMSNorm, normalized_shape: 64, form: hf}", in16).forward_scratch) ==
        "[2, 8, 1]:float32 [2, 8, 64]:float32");  // autocast: the normalised input cast to bfloat16
  const auto t5 = run_rule("{type: RMSNorm, normalized_shape: 64, form: t5}", in16, bf16);
  CHECK(scratch_of(t5.forward_scratch) == "[2, 8, 1]:float32");
  REQUIRE(t5.forward_moments.size() == 1);
  CHECK(scratch_of(t5.forward_moments[0]) == "[2, 8, 64]:float32 [2, 8, 1]:float32 [2, 8, 1]:float32 [2, 8, 64]:float32 [2, 8, 64]:bfloat16");
  CHECK(run_rule("{type: RMSNorm, normalized_shape: 64, form: t5}", in16).forward_moments.empty());  // autocast: kept in float32
  // nn.RMSNorm is one op, aten::rms_norm, whose temporaries are its workspace
  CHECK(run_rule("{type: RMSNorm, normalized_shape: 64}", {tensor({2, 8, 64})}).forward_scratch.empty());
}

TEST_CASE("LayerNorm, LayerNorm2d, GroupNorm: 1.13's CPU kernels refuse a bfloat16 input beside float32 weights") {
  const std::string seq = "inputs: {x: [5, 8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8}\n";
  const std::string img = "inputs: {x: [4, 6, 6]}\nlayers:\n  - {name: conv, type: Conv2d, out_channels: 4, kernel_size: 1}\n";
  const std::string ln = seq + "  - {name: norm, type: LayerNorm, normalized_shape: 8}\n";
  CHECK(error_from(ln, cpu_bf16_autocast("1.13")) ==
        "test.yaml:4:24: error: LayerNorm 'norm': PyTorch 1.13's CPU layer_norm refuses a bfloat16 input beside float32 "
        "weights (RuntimeError: expected scalar type BFloat16 but found Float); expected --torch 2.13, --device cuda or no "
        "--amp, found --torch 1.13 --device cpu --amp bfloat16");
  CHECK(error_from(ln, cpu_bf16_autocast("1.13", Mode::Eval)).find("refuses a bfloat16 input") != std::string::npos);
  CHECK(error_from(seq + "  - {name: norm, type: LayerNorm, normalized_shape: 8, bias: false}\n", cpu_bf16_autocast("1.13"))
            .find("refuses a bfloat16 input") != std::string::npos);
  const std::string ln2d = img + "  - {name: norm, type: LayerNorm2d, normalized_shape: 4}\n";
  CHECK(error_from(ln2d, cpu_bf16_autocast("1.13")).find("LayerNorm2d 'norm': PyTorch 1.13's CPU layer_norm refuses") !=
        std::string::npos);
  const std::string gn = img + "  - {name: norm, type: GroupNorm, num_groups: 2}\n";
  CHECK(error_from(gn, cpu_bf16_autocast("1.13")).find("GroupNorm 'norm': PyTorch 1.13's CPU group_norm refuses") !=
        std::string::npos);
  // what runs: 2.13; CUDA; no weights; a float32 input (the model's input, autocast not casting it)
  for (const std::string& spec : {ln, ln2d, gn}) {
    CAPTURE(spec);
    CHECK(error_from(spec, cpu_bf16_autocast("2.13")).empty());
    EstimateOptions cuda = cpu_bf16_autocast("1.13");
    cuda.graph.device = Device::Cuda;
    CHECK(error_from(spec, cuda).empty());
  }
  CHECK(error_from(seq + "  - {name: norm, type: LayerNorm, normalized_shape: 8, elementwise_affine: false}\n",
                   cpu_bf16_autocast("1.13")).empty());
  CHECK(error_from(img + "  - {name: norm, type: GroupNorm, num_groups: 2, affine: false}\n", cpu_bf16_autocast("1.13")).empty());
  CHECK(error_from("inputs: {x: [5, 8]}\nlayers:\n  - {name: norm, type: LayerNorm, normalized_shape: 8}\n",
                   cpu_bf16_autocast("1.13")).empty());
  // a bfloat16 model: weights and input agree (1.13 runs it)
  EstimateOptions bf16_model;
  bf16_model.graph = {.device = Device::Cpu, .float_dtype = DType::BFloat16, .torch = find_torch_profile("1.13")};
  CHECK(error_from(ln, bf16_model).empty());
}

TEST_CASE("GroupNorm and InstanceNorm") {
  const auto g = run_rule("{type: GroupNorm, num_groups: 2}", {tensor({2, 8, 4, 4})});
  CHECK(params_of(g) == "weight[8] bias[8]");
  CHECK(saved_of(g) == "input0 extra[2, 2]:float32 extra[2, 2]:float32");
  CHECK(kept_params(g) == "param0");
  CHECK(rule_error("{type: GroupNorm, num_groups: 3}", {tensor({2, 8, 4, 4})}) ==
        "num_groups 3 does not divide the input's 8 channels (input [2, 8, 4, 4])");
  CHECK(saved_of(run_rule("{type: InstanceNorm2d}", {tensor({2, 8, 4, 4})})) == "input0 extra[16]:float32 extra[16]:float32");
  const auto full = run_rule("{type: InstanceNorm2d, affine: true, track_running_stats: true}", {tensor({2, 8, 4, 4})});
  CHECK(params_of(full) == "weight[8] bias[8]");
  CHECK(buffers_of(full) == "running_mean[8]:float32 running_var[8]:float32 num_batches_tracked[]:int64");
  CHECK(saved_of(full) == "input0 extra[16]:float32 extra[16]:float32 extra[16]:float32 extra[16]:float32 extra[16]:float32");
  CHECK(rule_error("{type: InstanceNorm1d}", {tensor({2, 8, 4, 4})}) == "expected a 3-D input [N, C, L], found 4-D [2, 8, 4, 4]");
}
