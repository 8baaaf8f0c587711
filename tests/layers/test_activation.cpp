// Element-wise activations and the softmax family (layers/activation.cpp). What each keeps for
// backward was read in PyTorch 1.13 (CPU) with torch.autograd.graph.saved_tensors_hooks on
// nn.<Type>() applied to a [2, 3, 4] tensor that needs a gradient (a non-leaf, so in-place
// variants are legal); the int64 behaviour by running the module on an int64 tensor.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
struct Case {
  const char* type;
  const char* keeps;  // what out-of-place backward keeps, per the hooks
};
// PyTorch 1.13: ReluBackward0.result, HardtanhBackward0.self, LeakyReluBackward0.self,
// EluBackward0.self, GeluBackward0.self, SiluBackward0.self, MishBackward0.self,
// HardswishBackward0.self, HardsigmoidBackward0.self, SoftplusBackward0.self,
// SigmoidBackward0.result, TanhBackward0.result, SoftmaxBackward0.result, LogSoftmaxBackward0.result
const Case kCases[] = {
    {"ReLU", "output0"},      {"ReLU6", "input0"},     {"LeakyReLU", "input0"}, {"ELU", "input0"},
    {"GELU", "input0"},       {"SiLU", "input0"},      {"Mish", "input0"},      {"Hardswish", "input0"},
    {"Hardsigmoid", "input0"}, {"Softplus", "input0"}, {"Sigmoid", "output0"},  {"Tanh", "output0"},
    {"Softmax", "output0"},   {"LogSoftmax", "output0"},
};
std::string yaml(const std::string& type, const std::string& extra = "") { return "{type: " + type + extra + "}"; }
}  // namespace

TEST_CASE("Activations: shape; no parameters; what backward keeps") {
  for (const Case& c : kCases) {
    CAPTURE(c.type);
    const auto r = run_rule(yaml(c.type), {tensor({2, 3, 4})});
    CHECK(out_shape(r) == "[2, 3, 4]");
    CHECK(r.outputs[0].dtype == DType::Float32);
    CHECK(r.params.empty());
    CHECK(r.buffers.empty());
    CHECK(r.alias == Alias::None);
    CHECK_FALSE(r.grad_passthrough);
    CHECK(saved_of(r) == c.keeps);
    // no gradient needed: no node, nothing kept; evaluation: nothing kept
    CHECK(saved_of(run_rule(yaml(c.type), {tensor({2, 3, 4}, false)})).empty());
    CHECK(saved_of(run_rule(yaml(c.type), {tensor({2, 3, 4})}, kEval)).empty());
    // the output keeps a 16-bit input's dtype
    CHECK(run_rule(yaml(c.type), {tensor({2, 3, 4}, true, DType::Float16)}).outputs[0].dtype == DType::Float16);
  }
}

TEST_CASE("Activations: in-place variants that keep their result") {
  // ReLU(inplace=True): ReluBackward0.result; LeakyReLU/ELU(inplace=True): LeakyReluBackward1 /
  // EluBackward1 .result — the output, which is the input's storage
  for (const std::string type : {"ReLU", "LeakyReLU", "ELU"}) {
    CAPTURE(type);
    const auto r = run_rule(yaml(type, ", inplace: true"), {tensor({2, 3, 4})});
    CHECK(out_shape(r) == "[2, 3, 4]");
    CHECK(r.alias == Alias::InPlace);
    CHECK(saved_of(r) == "output0");
    CHECK(saved_of(run_rule(yaml(type, ", inplace: true"), {tensor({2, 3, 4}, false)})).empty());
    CHECK(run_rule(yaml(type, ", inplace: false"), {tensor({2, 3, 4})}).alias == Alias::None);
  }
}

TEST_CASE("Activations: LeakyReLU / ELU in place refuse a negative slope / alpha, only where backward runs") {
  // torch 1.13 and 2.13: leaky_relu_(x, -0.5) and elu_(x, alpha=-0.5) run forward, then backward
  // raises "In-place leakyReLu (elu) backward calculation is triggered with a negative slope
  // which is not supported"; 0.0 and -0.0 pass; no_grad, or an input needing no gradient (no
  // backward node), pass.
  for (const auto& [type, attr] : {std::pair{"LeakyReLU", "negative_slope"}, std::pair{"ELU", "alpha"}}) {
    CAPTURE(type);
    const std::string negative = yaml(type, std::string(", inplace: true, ") + attr + ": -0.5");
    CHECK(rule_error(negative, {tensor({2, 3})}) ==
          std::string("in place, ") + attr + " must be at least 0 to train (PyTorch's in-place backward reads the input's sign "
                                             "from the result, which a negative value flips), found -0.5; set inplace: false");
    CHECK(saved_of(run_rule(negative, {tensor({2, 3})}, kEval)).empty());
    CHECK(saved_of(run_rule(negative, {tensor({2, 3}, false)})).empty());
    CHECK(saved_of(run_rule(yaml(type, std::string(", inplace: false, ") + attr + ": -0.5"), {tensor({2, 3})})) == "input0");
    for (const char* zero : {"0.0", "-0.0"})
      CHECK(saved_of(run_rule(yaml(type, std::string(", inplace: true, ") + attr + ": " + zero), {tensor({2, 3})})) == "output0");
  }
}

// PyTorch 1.13: relu6_/hardtanh_ need the original input (HardtanhBackward0.self), so autograd
// clones the input before the in-place op and keeps the clone — a new [2, 3, 4] float32 tensor,
// not the output (saved_tensors_hooks: a storage that is neither the input nor the output).
TEST_CASE("Activations: ReLU6(inplace) keeps a clone of its input") {
  const auto r = run_rule(yaml("ReLU6", ", inplace: true"), {tensor({2, 3, 4})});
  CHECK(r.alias == Alias::InPlace);
  CHECK(saved_of(r) == "extra[2, 3, 4]:float32");
}

// PyTorch 1.13: nn.SiLU, nn.Mish, nn.Hardswish and nn.Hardsigmoid take inplace=False too; with
// inplace=True the output is the input's storage and autograd keeps a clone of the input
// (SiluBackward0.self, MishBackward0.self, HardswishBackward0.self, HardsigmoidBackward0.self).
TEST_CASE("Activations: SiLU / Mish / Hardswish / Hardsigmoid accept inplace") {
  for (const std::string type : {"SiLU", "Mish", "Hardswish", "Hardsigmoid"}) {
    CAPTURE(type);
    CHECK_NOTHROW(graph_from(one_layer_spec(yaml(type, ", inplace: true"), {3, 4})));
    LayerResult r;
    try {
      r = run_rule(yaml(type, ", inplace: true"), {tensor({2, 3, 4})});
    } catch (const std::exception& e) {
      FAIL_CHECK(std::string(e.what()));
      continue;
    }
    CHECK(r.alias == Alias::InPlace);
    CHECK(saved_of(r) == "extra[2, 3, 4]:float32");
  }
}

// validation/probe_autocast_113.py (ops_saved_autocast.md): 1.13's CPU mish has no bfloat16 kernel
// ("mish_cpu" not implemented for 'BFloat16'), forward included: refused in eval too. 2.13 runs it.
TEST_CASE("Mish: 1.13 has no CPU bfloat16 kernel") {
  const std::string spec =
      "inputs: {x: [5, 8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8}\n  - {name: act, type: Mish}\n";
  const std::string message = "test.yaml:4:23: error: Mish 'act': PyTorch 1.13's CPU mish has no bfloat16 kernel "
                              "(RuntimeError: \"mish_cpu\" not implemented for 'BFloat16'); expected --torch 2.13, --device "
                              "cuda or no --amp, found --torch 1.13 --device cpu --amp bfloat16";
  CHECK(error_from(spec, cpu_bf16_autocast("1.13")) == message);
  CHECK(error_from(spec, cpu_bf16_autocast("1.13", Mode::Eval)) == message);
  CHECK(error_from(spec, cpu_bf16_autocast("2.13")).empty());
  // on the model's float32 input (autocast leaves Mish alone) it runs
  CHECK(error_from("inputs: {x: [5, 8]}\nlayers:\n  - {name: act, type: Mish}\n  - {name: fc, type: Linear, out_features: 8}\n",
                   cpu_bf16_autocast("1.13")).empty());
}

TEST_CASE("Activations: attributes") {
  // LeakyReLU(negative_slope), ELU(alpha), GELU(approximate), Softplus(beta, threshold)
  CHECK(out_shape(run_rule("{type: LeakyReLU, negative_slope: 0.2}", {tensor({2, 3})})) == "[2, 3]");
  CHECK(out_shape(run_rule("{type: ELU, alpha: 2}", {tensor({2, 3})})) == "[2, 3]");
  CHECK(saved_of(run_rule("{type: GELU, approximate: tanh}", {tensor({2, 3})})) == "input0");  // GELU('tanh'): self
  CHECK(out_shape(run_rule("{type: Softplus, beta: 2, threshold: 10}", {tensor({2, 3})})) == "[2, 3]");
  // PyTorch: "approximate argument must be either none or tanh"
  CHECK(one_layer_error("{type: GELU, approximate: tan}", {3}) ==
        "test.yaml:4:31: error: GELU '0': approximate must be one of none, tanh; found the string 'tan' (did you mean 'tanh'?)");
  CHECK(one_layer_error("{type: ReLU, in_place: true}", {3}) ==
        "test.yaml:4:18: error: ReLU '0': unknown attribute 'in_place'; did you mean 'inplace'?");
  CHECK(one_layer_error("{type: Sigmoid, inplace: true}", {3}) ==
        "test.yaml:4:21: error: Sigmoid '0': unknown attribute 'inplace'; Sigmoid takes no attributes");
  CHECK_HAS(one_layer_error("{type: LeakyReLU, negative_slope: steep}", {3}),
            "test.yaml:4:39: error: LeakyReLU '0': negative_slope must be a number, found");
  CHECK_HAS(one_layer_error("{type: ReLU, inplace: 1}", {3}), "test.yaml:4:27: error: ReLU '0': inplace must be true or false, found");
}

TEST_CASE("Activations: int64 inputs that PyTorch rejects") {
  // PyTorch: "leaky_relu_cpu" / "elu_cpu" / "GeluKernelImpl" / "silu_cpu" / "mish_cpu" /
  // "hardswish_cpu" / "hardsigmoid_cpu" / "softplus_cpu" / "softmax_lastdim_kernel_impl" /
  // "log_softmax_lastdim_kernel_impl" not implemented for 'Long'
  for (const std::string type : {"LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Hardswish", "Hardsigmoid", "Softplus", "Softmax",
                           "LogSoftmax"}) {
    CAPTURE(type);
    CHECK(rule_error(yaml(type), {tensor({2, 3}, false, DType::Int64)}) == "expected a floating-point input, found int64");
  }
  // PyTorch: "Boolean inputs not supported for relu", "Bool inputs not supported for hardtanh"
  CHECK(rule_error("{type: ReLU}", {tensor({2, 3}, false, DType::Bool)}) == "expected a floating-point or integer input, found bool");
  CHECK(rule_error("{type: ReLU6}", {tensor({2, 3}, false, DType::Bool)}) == "expected a floating-point or integer input, found bool");
}

// PyTorch 1.13 (CPU and CUDA): relu and hardtanh (ReLU6) are clamps and accept integer tensors,
// returning int64; sigmoid and tanh accept them and return float32.
TEST_CASE("Activations: int64 inputs that PyTorch accepts") {
  for (const std::string type : {"ReLU", "ReLU6"}) {
    CAPTURE(type);
    CHECK(rule_error(yaml(type), {tensor({2, 3}, false, DType::Int64)}) == "");
  }
  for (const std::string type : {"Sigmoid", "Tanh"}) {
    CAPTURE(type);
    CHECK(rule_error(yaml(type), {tensor({2, 3}, false, DType::Int64)}) == "");
  }
}

// PyTorch 1.13, every integer dtype (ReLU and ReLU6 in place too): relu / hardtanh return the
// input's dtype; sigmoid / tanh return float32 for integers and bool alike.
TEST_CASE("Activations: the output dtype of integer inputs") {
  for (const DType dtype : {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8}) {
    CAPTURE(dtype_name(dtype));
    for (const std::string type : {"ReLU", "ReLU6"}) {
      CAPTURE(type);
      CHECK(run_rule(yaml(type), {tensor({2, 3}, false, dtype)}).outputs[0].dtype == dtype);
      const auto r = run_rule(yaml(type, ", inplace: true"), {tensor({2, 3}, false, dtype)});
      CHECK(r.outputs[0].dtype == dtype);
      CHECK(r.alias == Alias::InPlace);
      CHECK(saved_of(r).empty());
    }
    for (const std::string type : {"Sigmoid", "Tanh"}) {
      CAPTURE(type);
      CHECK(run_rule(yaml(type), {tensor({2, 3}, false, dtype)}).outputs[0].dtype == DType::Float32);
    }
  }
  // float32 even when the model runs in float16: an integer input gets torch's default dtype
  const Context half{Mode::Train, Device::Cpu, DType::Float16, std::nullopt};
  CHECK(run_rule("{type: Sigmoid}", {tensor({2, 3}, false, DType::Bool)}, half).outputs[0].dtype == DType::Float32);
  CHECK(run_rule("{type: Tanh}", {tensor({2, 3}, false, DType::Bool)}).outputs[0].dtype == DType::Float32);
  // through the graph: an int64 input, ReLU keeps it int64, Sigmoid makes float32
  const std::string spec = "inputs: {x: {shape: [3], dtype: int64}}\nlayers:\n  - {type: ReLU}\n  - {type: Sigmoid}\n";
  const Graph g = graph_from(spec);
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].result->outputs[0].dtype == DType::Int64);
  CHECK(g.nodes[1].result->outputs[0].dtype == DType::Float32);
}

TEST_CASE("Activations: what in-place variants keep, by who needs a gradient") {
  // hooks: nothing without a gradient (no node); the clone is of the input's dtype (bfloat16 here)
  for (const std::string type : {"ReLU6", "SiLU", "Mish", "Hardswish", "Hardsigmoid"}) {
    CAPTURE(type);
    auto r = run_rule(yaml(type, ", inplace: true"), {tensor({2, 3, 4}, false)});
    CHECK(r.alias == Alias::InPlace);
    CHECK(saved_of(r).empty());
    CHECK(saved_of(run_rule(yaml(type, ", inplace: true"), {tensor({2, 3, 4})}, kEval)).empty());
    r = run_rule(yaml(type, ", inplace: true"), {tensor({2, 3, 4}, true, DType::BFloat16)});
    CHECK(saved_of(r) == "extra[2, 3, 4]:bfloat16");
    REQUIRE(r.saved.size() == 1);
    CHECK(r.saved[0].what == "input clone");
    // out of place: the input itself (SiluBackward0.self, HardtanhBackward0.self, …)
    CHECK(saved_of(run_rule(yaml(type, ", inplace: false"), {tensor({2, 3, 4})})) == "input0");
  }
}

TEST_CASE("Softmax / LogSoftmax: dim") {
  // any dim in [-rank, rank - 1]; the shape is unchanged
  CHECK(out_shape(run_rule("{type: Softmax, dim: -1}", {tensor({2, 3, 4})})) == "[2, 3, 4]");
  CHECK(out_shape(run_rule("{type: Softmax, dim: -3}", {tensor({2, 3, 4})})) == "[2, 3, 4]");
  CHECK(out_shape(run_rule("{type: LogSoftmax, dim: 2}", {tensor({2, 3, 4})})) == "[2, 3, 4]");
  // without dim: PyTorch's legacy choice (0 for 1-D and 3-D inputs, else 1) — the shape is the same
  CHECK(out_shape(run_rule("{type: Softmax}", {tensor({2, 3, 4, 5})})) == "[2, 3, 4, 5]");
  // PyTorch: "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
  CHECK(rule_error("{type: Softmax, dim: 3}", {tensor({2, 3, 4})}) == "dim must be in [-3, 2] for a 3-D input, found 3");
  CHECK(rule_error("{type: LogSoftmax, dim: -4}", {tensor({2, 3, 4})}) == "dim must be in [-3, 2] for a 3-D input, found -4");
  CHECK(one_layer_error("{type: Softmax, dim: 3}", {3, 4}) ==
        "test.yaml:4:26: error: Softmax '0': dim must be in [-3, 2] for a 3-D input, found 3");
  CHECK_HAS(one_layer_error("{type: Softmax, dim: last}", {3, 4}), "test.yaml:4:26: error: Softmax '0': dim must be an integer");
}

TEST_CASE("Activations: autocast policy") {
  // under autocast, softmax and log_softmax run in float32; element-wise activations inherit
  CHECK(find_layer("Softmax")->autocast == Autocast::Float32);
  CHECK(find_layer("LogSoftmax")->autocast == Autocast::Float32);
  for (const std::string type : {"ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh"}) {
    CAPTURE(type);
    CHECK(find_layer(type)->autocast == Autocast::Inherit);
  }
}

TEST_CASE("Activations: one-layer estimate through the graph") {
  // (evaluation: a model without parameters has nothing to train)
  // an in-place ReLU adds no output memory; an out-of-place one adds its output
  Estimate e = one_layer("{type: ReLU, inplace: true}", {3, 4}, 2, Mode::Eval);
  CHECK(e.layers[0].output_bytes == 0);
  e = one_layer("{type: ReLU}", {3, 4}, 2, Mode::Eval);
  CHECK(e.layers[0].output_bytes == 2 * 3 * 4 * 4);
  CHECK(e.layers[0].params == 0);
}

// F.softmax(x, dim, dtype=D) (transformers' eager attention: softmax(..., dtype=torch.float32)):
// the input is cast to D first, inside aten::softmax, which frees the copy before it returns:
// its workspace, not counted (validation/probe_softmax_dtype.py); the result is D, kept for
// backward, under autocast too. Linear 16 -> 16 then Softmax, batch 2, CPU, bfloat16 autocast:
// the linear's bfloat16 output is 64 B, in float32 128 B.
TEST_CASE("Softmax / LogSoftmax: dtype") {
  const auto run = [](const std::string& softmax, Mode mode = Mode::Train) {
    EstimateOptions o;
    o.graph.device = Device::Cpu;
    o.graph.amp = DType::BFloat16;
    o.graph.batch = 2;
    o.graph.mode = mode;
    return estimate_from("inputs: {x: [16]}\nlayers:\n  - {type: Linear, out_features: 16}\n  - " + softmax + "\n", o);
  };
  const Estimate plain = run("{type: Softmax, dim: -1}");
  const Estimate upcast = run("{type: Softmax, dim: -1, dtype: float32}");
  // CPU autocast runs softmax in bfloat16 and keeps its bfloat16 result; with dtype float32 the
  // float32 result (64 B more), and its output is float32.
  CHECK(upcast.totals.saved_bytes == plain.totals.saved_bytes + 64);
  CHECK(upcast.layers[1].output_bytes == 128);
  CHECK(plain.layers[1].output_bytes == 64);
  // Inference on a bfloat16 model (--dtype bfloat16), input [2, 16] (64 B), no autocast: the
  // float32 result (128 B) where without dtype (or dtype: none, PyTorch's None) the bfloat16 one
  // (64 B); the float32 copy of the input (128 B) is softmax's workspace (hf_llama_eager as a
  // 16-bit model: counting it put the inference peak 1,280 B over the measured 152,576, in
  // the second layer's softmax instead of lm_head).
  const auto eval_peak = [](const std::string& softmax) {
    EstimateOptions o;
    o.graph.device = Device::Cpu;
    o.graph.batch = 2;
    o.graph.mode = Mode::Eval;
    o.graph.float_dtype = DType::BFloat16;
    return estimate_from("inputs: {x: [16]}\nlayers:\n  - " + softmax + "\n", o).totals.peak_bytes;
  };
  CHECK(eval_peak("{type: Softmax, dim: -1, dtype: none}") == eval_peak("{type: Softmax, dim: -1}"));
  CHECK(eval_peak("{type: LogSoftmax, dim: -1, dtype: float32}") - eval_peak("{type: LogSoftmax, dim: -1}") == 128 - 64);
  CHECK(eval_peak("{type: Softmax, dim: -1, dtype: float32}") - eval_peak("{type: Softmax, dim: -1}") == 128 - 64);
  // A dtype equal to the input's converts nothing: the same as none.
  CHECK(run("{type: Softmax, dim: -1, dtype: bfloat16}").totals.peak_bytes == plain.totals.peak_bytes);
  // Only floating-point dtypes (PyTorch: softmax "not implemented for 'Long'").
  CHECK_HAS(one_layer_error("{type: Softmax, dim: -1, dtype: int64}", {3, 4}),
            "test.yaml:4:37: error: Softmax '0': dtype must be one of none, float32, float16, bfloat16, float64, float; "
            "found the string 'int64'");
}
