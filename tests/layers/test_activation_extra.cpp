// The activations of layers/activation_extra.cpp against PyTorch 2.13 and 1.13 (CPU), as
// validation/probe_zoo.py measured them (saved_tensors_hooks for what is kept, the profiler for
// what forward and backward allocate; validation/ops_saved_zoo.md).
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Hardtanh, SELU, CELU, Threshold: kept tensors, in place or not") {
  // HardtanhBackward0.self / ThresholdBackward0.self: the input; in place, a new storage (a clone);
  // SELU and CELU: EluBackward0.self / CeluBackward0.self, in place EluBackward1.result / CeluBackward1.result
  struct Case {
    const char* yaml;
    const char* keeps;
    const char* keeps_inplace;
  };
  for (const Case& c : {Case{"{type: Hardtanh, min_val: -2, max_val: 2", "input0", "extra[4, 16]:float32"},
                        Case{"{type: Threshold, threshold: 0.1, value: 20", "input0", "extra[4, 16]:float32"},
                        Case{"{type: SELU", "input0", "output0"}, Case{"{type: CELU, alpha: 0.5", "input0", "output0"}}) {
    CAPTURE(c.yaml);
    for (const Context& ctx : {kCpu, kCpu113}) {
      auto r = run_rule(std::string(c.yaml) + "}", {tensor({4, 16})}, ctx);
      CHECK(out_shape(r) == "[4, 16]");
      CHECK(r.alias == Alias::None);
      CHECK(saved_of(r) == c.keeps);
      r = run_rule(std::string(c.yaml) + ", inplace: true}", {tensor({4, 16})}, ctx);
      CHECK(r.alias == Alias::InPlace);
      CHECK(saved_of(r) == c.keeps_inplace);
      CHECK(saved_of(run_rule(std::string(c.yaml) + "}", {tensor({4, 16}, false)}, ctx)).empty());
    }
  }
  // AssertionError: max_val (0) must be greater than min_val (1); RuntimeError: alpha cannot be 0 for CELU
  CHECK(rule_error("{type: Hardtanh, min_val: 1, max_val: 0}", {tensor({4, 16})}) == "max_val (0) must be greater than min_val (1)");
  CHECK(rule_error("{type: CELU, alpha: 0}", {tensor({4, 16})}) == "alpha cannot be 0 (PyTorch divides by it)");
  // CELU(-0.5, inplace=True): "In-place elu backward calculation is triggered with a negative slope which is not supported"
  CHECK_HAS(rule_error("{type: CELU, alpha: -0.5, inplace: true}", {tensor({4, 16})}), "in place, alpha must be at least 0 to train");
  CHECK(rule_error("{type: CELU, alpha: -0.5}", {tensor({4, 16})}).empty());
  CHECK_HAS(one_layer_error("{type: Threshold, threshold: 0.1}", {16}), "needs attribute 'value'");
}

// validation/probe_autocast_113.py (ops_saved_autocast.md): 1.13's CPU hardtanh_backward has no
// bfloat16 kernel ("hardshrink_backward_cpu" not implemented for 'BFloat16'): Hardtanh and ReLU6
// (its hardtanh(0, 6)) with a bfloat16 input run forward, but training through them fails. 2.13
// runs them.
TEST_CASE("Hardtanh, ReLU6: 1.13's CPU bfloat16 backward is missing") {
  for (const std::string type : {"Hardtanh", "ReLU6"}) {
    CAPTURE(type);
    const std::string spec = "inputs: {x: [5, 8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8}\n"
                             "  - {name: act, type: " + type + "}\n";
    CHECK(error_from(spec, cpu_bf16_autocast("1.13")) ==
          "test.yaml:4:23: error: " + type + " 'act': PyTorch 1.13's CPU hardtanh_backward has no bfloat16 kernel, so "
          "training through it fails in backward (RuntimeError: \"hardshrink_backward_cpu\" not implemented for "
          "'BFloat16'); expected --torch 2.13, --device cuda, --mode eval or no --amp, found --torch 1.13 --device cpu "
          "--amp bfloat16");
    CHECK(error_from(spec, cpu_bf16_autocast("1.13", Mode::Eval)).empty());
    CHECK(error_from(spec, cpu_bf16_autocast("2.13")).empty());
    // nothing needs the input's gradient (a frozen Linear on the model's input): no backward through it
    const std::string frozen = "inputs: {x: [5, 8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8, trainable: false}\n"
                               "  - {name: act, type: " + type + "}\n  - {name: out, type: Linear, out_features: 2}\n";
    CHECK(error_from(frozen, cpu_bf16_autocast("1.13")).empty());
    // a bfloat16 model fails alike
    EstimateOptions bf16_model;
    bf16_model.graph = {.device = Device::Cpu, .float_dtype = DType::BFloat16, .torch = find_torch_profile("1.13")};
    CHECK(error_from(spec, bf16_model).find("expected --torch 2.13, --device cuda, --mode eval or a float32 model, found "
                                            "--torch 1.13 --device cpu and a bfloat16 model") != std::string::npos);
  }
}

TEST_CASE("PReLU: parameters; what backward keeps and allocates, by version") {
  // nn.PReLU(3): weight [3]; PreluKernelBackward0 (2.13) / PreluBackward0 (1.13) keep self and the weight
  auto r = run_rule("{type: PReLU, num_parameters: 3}", {tensor({2, 3, 8, 8})});
  CHECK(out_shape(r) == "[2, 3, 8, 8]");
  CHECK(params_of(r) == "weight[3]");
  CHECK(saved_of(r) == "input0");
  CHECK(kept_params(r) == "param0");
  // 2.13: +1536 +1536 (element-wise weight grad) +12 sum -1536: one input-sized temporary
  CHECK(scratch_of(r.backward_scratch) == "[2, 3, 8, 8]:float32");
  // 2.13, input without grad: +1536 (dropped input grad) +1536 -1536 +12 -1536
  r = run_rule("{type: PReLU, num_parameters: 3}", {tensor({2, 3, 8, 8}, false)});
  CHECK(saved_of(r) == "input0");
  CHECK(scratch_of(r.backward_scratch) == "[2, 3, 8, 8]:float32* [2, 3, 8, 8]:float32");
  // 1.13: +1536 +12 sum; without input grad +1536 +12 -1536
  CHECK(run_rule("{type: PReLU, num_parameters: 3}", {tensor({2, 3, 8, 8})}, kCpu113).backward_scratch.empty());
  CHECK(scratch_of(run_rule("{type: PReLU}", {tensor({2, 3, 8, 8}, false)}, kCpu113).backward_scratch) == "[2, 3, 8, 8]:float32");
  // frozen on an input without grad: no node
  CHECK(saved_of(run_rule("{type: PReLU}", {tensor({2, 3, 8, 8}, false)}, kCpu, false)).empty());
  CHECK(params_of(run_rule("{type: PReLU, num_parameters: 16}", {tensor({4, 16})})) == "weight[16]");
  // "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 4."
  CHECK(rule_error("{type: PReLU, num_parameters: 3}", {tensor({2, 4, 5})}) ==
        "num_parameters is 3, but the input [2, 4, 5] has 4 channels (it must be 1 or the channels)");
}

// Under CPU autocast 2.x casts prelu like a convolution (its lower-precision list): the input and
// the weight to bfloat16, the weight's copy kept (measured with saved_tensors_hooks: x [2, 3, 8, 8]
// float32, PReLU(3): 768 B + 6 B, a bfloat16 output); 1.13's CPU list lacks prelu, which runs on
// the float32 input and keeps it (1,536 B) and the parameter itself, a float32 output.
TEST_CASE("PReLU under CPU autocast: cast in 2.13, not in 1.13") {
  const auto run = [](const char* version) {
    EstimateOptions o;
    o.graph.device = Device::Cpu;
    o.graph.amp = DType::BFloat16;
    o.graph.batch = 2;
    o.graph.torch = find_torch_profile(version);
    return estimate_from("inputs: {x: [3, 8, 8]}\nlayers:\n  - {type: PReLU, num_parameters: 3}\nloss: mean\n", o);
  };
  const Estimate v2 = run("2.13");
  CHECK(v2.totals.saved_bytes == 768 + 6);
  CHECK(v2.layers[0].output_bytes == 768);
  const Estimate v1 = run("1.13");
  CHECK(v1.totals.saved_bytes == 1536);
  CHECK(v1.layers[0].output_bytes == 1536);
  // A frozen PReLU's unused weight gradient is in the dtype the weight is read in.
  const Context amp2{Mode::Train, Device::Cpu, DType::Float32, DType::BFloat16};
  const Context amp1{Mode::Train, Device::Cpu, DType::Float32, DType::BFloat16, find_torch_profile("1.13")};
  CHECK(scratch_of(run_rule("{type: PReLU, num_parameters: 3}", {tensor({2, 3, 8, 8}, true, DType::BFloat16)}, amp2, false)
                       .backward_scratch) == "[2, 3, 8, 8]:bfloat16 [3]:bfloat16");
  CHECK(scratch_of(run_rule("{type: PReLU, num_parameters: 3}", {tensor({2, 3, 8, 8}, true, DType::BFloat16)}, amp1, false)
                       .backward_scratch) == "[3]:float32");
}

TEST_CASE("GLU: halves dim, keeps its input") {
  // GLU(dim=1) on [4, 16] -> [4, 8], GluBackward0.self; GLU() on [2, 3, 8, 8] -> [2, 3, 8, 4]
  auto r = run_rule("{type: GLU, dim: 1}", {tensor({4, 16})});
  CHECK(out_shape(r) == "[4, 8]");
  CHECK(saved_of(r) == "input0");
  CHECK(out_shape(run_rule("{type: GLU}", {tensor({2, 3, 8, 8})})) == "[2, 3, 8, 4]");
  // "Halving dimension must be even, but dimension 1 is size 5"
  CHECK(rule_error("{type: GLU, dim: 1}", {tensor({2, 5})}) == "halves dimension 1, but the input [2, 5] has 5 there, an odd size");
}

TEST_CASE("LogSigmoid, Softsign, Tanhshrink, Softmin: kept tensors and temporaries") {
  // LogSigmoidBackward0.self and .buffer (a new [4, 16] float32 on the CPU)
  auto r = run_rule("{type: LogSigmoid}", {tensor({4, 16})});
  CHECK(saved_of(r) == "input0 extra[4, 16]:float32");
  CHECK(saved_of(run_rule("{type: LogSigmoid}", {tensor({4, 16})}, kCuda)) == "input0");  // CUDA's buffer is empty
  // Softsign: AbsBackward0.self = DivBackward0.self (the input), DivBackward0.other (new);
  // forward +256 abs +8 (the wrapped 1) +256 add -8 -256 +256 div; backward peak 1024 above the grad
  r = run_rule("{type: Softsign}", {tensor({4, 16})});
  CHECK(saved_of(r) == "input0 extra[4, 16]:float32");
  CHECK(scratch_of(r.forward_scratch) == "[]:float64");
  CHECK(run_rule("{type: Softsign}", {tensor({4, 16})}, kCuda).forward_scratch.empty());  // a CPU scalar on CUDA
  CHECK(scratch_of(r.backward_scratch) == "[4, 16]:float32 [4, 16]:float32 [4, 16]:float32");
  r = run_rule("{type: Softsign}", {tensor({4, 16}, false)});
  CHECK(saved_of(r).empty());
  CHECK(scratch_of(r.forward_scratch) == "[]:float64 [4, 16]:float32");
  // Tanhshrink: TanhBackward0.result (new); backward +256 neg +256 tanh_backward … peak 512
  r = run_rule("{type: Tanhshrink}", {tensor({4, 16})});
  CHECK(saved_of(r) == "extra[4, 16]:float32");
  CHECK(scratch_of(r.backward_scratch) == "[4, 16]:float32");
  CHECK(scratch_of(run_rule("{type: Tanhshrink}", {tensor({4, 16}, false)}).forward_scratch) == "[4, 16]:float32");
  // Softmin: SoftmaxBackward0.result; forward +256 neg +256 _softmax -256; backward +256 +256 -256
  r = run_rule("{type: Softmin, dim: 1}", {tensor({4, 16})});
  CHECK(saved_of(r) == "output0");
  CHECK(scratch_of(r.forward_scratch) == "[4, 16]:float32");
  CHECK(scratch_of(r.backward_scratch) == "[4, 16]:float32");
  CHECK(run_rule("{type: Softmax, dim: 1}", {tensor({4, 16})}).forward_scratch.empty());
}

TEST_CASE("Composite activations: integer and bool inputs") {
  // nn.Softsign()/nn.Tanhshrink() on int64 give float32 (1.13 and 2.13); on bool, "abs_cpu" not
  // implemented for 'Bool' / bool subtraction is not supported; LogSigmoid, Softmin, GLU: floats only
  auto r = run_rule("{type: Softsign}", {tensor({2, 4}, false, DType::Int64)});
  CHECK(r.outputs[0].dtype == DType::Float32);
  CHECK(scratch_of(r.forward_scratch) == "[]:int64 [2, 4]:int64");  // |x| + 1 stays int64
  r = run_rule("{type: Tanhshrink}", {tensor({2, 4}, false, DType::Int64)});
  CHECK(r.outputs[0].dtype == DType::Float32);
  CHECK(scratch_of(r.forward_scratch) == "[2, 4]:float32");
  CHECK(rule_error("{type: Softsign}", {tensor({2, 4}, false, DType::Bool)}) == "expected a floating-point or integer input, found bool");
  CHECK(rule_error("{type: Tanhshrink}", {tensor({2, 4}, false, DType::Bool)}) == "expected a floating-point or integer input, found bool");
  for (const std::string yaml : {"{type: LogSigmoid}", "{type: Softmin, dim: 1}", "{type: GLU}", "{type: SELU}", "{type: PReLU}"})
    CHECK(rule_error(yaml, {tensor({2, 4}, false, DType::Int64)}) == "expected a floating-point input, found int64");
  CHECK(run_rule("{type: Hardtanh}", {tensor({2, 4}, false, DType::Int64)}).outputs[0].dtype == DType::Int64);
  CHECK(run_rule("{type: Threshold, threshold: 0.1, value: 20}", {tensor({2, 4}, false, DType::Int64)}).outputs[0].dtype ==
        DType::Int64);
}

TEST_CASE("Composite activations: the step simulated through the graph") {
  // Softmin on [4, 16] in evaluation: the negated input and the output coexist
  const Estimate e = one_layer("{type: Softmin, dim: 1}", {16}, 4, Mode::Eval);
  CHECK(e.totals.peak_bytes == 256 * 3);  // input, -input, output
}
