// Linear (layers/linear.cpp). Shapes and parameter counts printed by PyTorch 1.13 (CPU) for
// nn.Linear run on a tensor of the same shape; what backward keeps was read with
// torch.autograd.graph.saved_tensors_hooks (the transposed weight it keeps is a view of the
// parameter and costs nothing).
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Linear: shapes; parameters and MACs") {
  SUBCASE("2-D input") {  // Linear(20, 30) on [128, 20] -> [128, 30], 630 params
    const auto r = run_one("{type: Linear, out_features: 30}", {128, 20});
    CHECK(out_shape(r) == "[128, 30]");
    CHECK(params_of(r) == "weight[30, 20] bias[30]");
    CHECK(param_count(r) == 630);
    CHECK(r.macs == 128 * 20 * 30);
    CHECK(r.alias == Alias::None);
    CHECK(r.buffers.empty());
    CHECK_FALSE(r.grad_passthrough);
  }
  SUBCASE("no bias") {  // Linear(20, 30, bias=False) -> 600 params
    const auto r = run_one("{type: Linear, out_features: 30, bias: false}", {128, 20});
    CHECK(params_of(r) == "weight[30, 20]");
    CHECK(param_count(r) == 600);
    CHECK(r.macs == 128 * 20 * 30);
  }
  SUBCASE("3-D input: over the last dimension") {  // Linear(64, 10) on [4, 16, 64] -> [4, 16, 10], 650
    const auto r = run_one("{type: Linear, in_features: 64, out_features: 10}", {4, 16, 64});
    CHECK(out_shape(r) == "[4, 16, 10]");
    CHECK(param_count(r) == 650);
    CHECK(r.macs == 4 * 16 * 64 * 10);  // torch.profiler(with_flops=True): addmm 81,920 FLOPs = 2 × MACs
  }
  SUBCASE("4-D input") {  // Linear(8, 3) on [2, 3, 4, 8] -> [2, 3, 4, 3], 27
    const auto r = run_one("{type: Linear, out_features: 3}", {2, 3, 4, 8});
    CHECK(out_shape(r) == "[2, 3, 4, 3]");
    CHECK(param_count(r) == 27);
    CHECK(r.macs == 2 * 3 * 4 * 8 * 3);
  }
  SUBCASE("the output keeps the input's float dtype") {
    const auto r = run_rule("{type: Linear, out_features: 3}", {tensor({2, 8}, true, DType::Float16)});
    CHECK(r.outputs[0].dtype == DType::Float16);
  }
  SUBCASE("a large layer") {  // Linear(3136, 1000): 3,137,000 params (VGG-like classifier head)
    const auto r = run_one("{type: Linear, out_features: 1000}", {2, 3136});
    CHECK(param_count(r) == 3137000);
    CHECK(r.macs == std::int64_t{2} * 3136 * 1000);
  }
}

TEST_CASE("Linear: what backward keeps") {
  const std::string yaml = "{type: Linear, out_features: 30}";
  // addmm keeps mat1 (the input) when the weight needs a grad, mat2 (the weight, a parameter)
  // when the input does. PyTorch 1.13: [weight, input] / [input] / [weight] / [].
  CHECK(saved_of(run_one(yaml, {128, 20}, true, true)) == "input0");
  CHECK(saved_of(run_one(yaml, {128, 20}, false, true)) == "input0");
  CHECK(saved_of(run_one(yaml, {128, 20}, true, false)).empty());   // frozen: only the weight
  CHECK(saved_of(run_one(yaml, {128, 20}, false, false)).empty());
  // Without bias (mm) and for 3-D/4-D inputs (a view of the input as [rows, in]): the same.
  CHECK(saved_of(run_one("{type: Linear, out_features: 30, bias: false}", {128, 20})) == "input0");
  CHECK(saved_of(run_one("{type: Linear, out_features: 30, bias: false}", {128, 20}, true, false)).empty());
  CHECK(saved_of(run_one("{type: Linear, out_features: 10}", {4, 16, 64})) == "input0");
  CHECK(saved_of(run_one("{type: Linear, out_features: 10}", {4, 16, 64}, true, false)).empty());
  CHECK(saved_of(run_one("{type: Linear, out_features: 3}", {2, 3, 4, 8})) == "input0");
  // Evaluation keeps nothing.
  CHECK(saved_of(run_rule(yaml, {tensor({128, 20})}, kEval)).empty());
  // The weight (mat2 = weight.t()) is kept when the input needs a grad: free in float32, but
  // under autocast it is the weight's low-precision copy (tf_mnist_cnn's fixture: fc1 keeps a
  // bfloat16 [3136, 1024] mat2).
  CHECK(kept_params(run_one(yaml, {128, 20}, true, true)) == "param0");
  CHECK(kept_params(run_one(yaml, {128, 20}, true, false)) == "param0");
  CHECK(kept_params(run_one(yaml, {128, 20}, false, true)).empty());
}

TEST_CASE("Linear on a transposed input: its bias's gradient handed over first (AddBackward0 before MmBackward0)") {
  InputTensor transposed = tensor({4, 8, 32});
  transposed.strided = true;
  const auto r = run_rule("{type: Linear, out_features: 32}", {transposed});
  REQUIRE(r.backward_program);
  std::string order;
  for (const BackwardEvent& e : r.backward_program({true})) {
    if (e.kind == BackwardEvent::Kind::ParamGrad) order += e.index == 1 ? "bias " : "weight ";
    if (e.kind == BackwardEvent::Kind::ParamGradsDone) order += "| ";
    if (e.kind == BackwardEvent::Kind::InputGrad) order += "input ";
  }
  CHECK(order == "bias | input weight | ");
  // one addmm (a contiguous or 2-D input), no bias, or under autocast (the bias's cast back
  // waits behind the mm): one node
  CHECK_FALSE(run_rule("{type: Linear, out_features: 32}", {tensor({4, 8, 32})}).backward_program);
  CHECK_FALSE(run_rule("{type: Linear, out_features: 32, bias: false}", {transposed}).backward_program);
  const Context amp{Mode::Train, Device::Cpu, DType::Float32, DType::BFloat16};
  CHECK_FALSE(run_rule("{type: Linear, out_features: 32}", {transposed}, amp).backward_program);
}

TEST_CASE("Linear: errors name the expected and the actual value") {
  // PyTorch: "mat1 and mat2 shapes cannot be multiplied (2x3200 and 3136x10)"
  auto msg = rule_error("{type: Linear, in_features: 3136, out_features: 10}", {tensor({2, 3200})});
  CHECK(msg == "in_features is 3,136, but the input [2, 3200] has 3,200 features in its last dimension");
  CHECK_HAS(msg, "3,136");
  CHECK_HAS(msg, "3,200");
  // PyTorch: "mat1 and mat2 must have the same dtype" (an int64 input)
  msg = rule_error("{type: Linear, out_features: 10}", {tensor({2, 4}, false, DType::Int64)});
  CHECK(msg == "expected a floating-point input, found int64");
  // nnmem shapes include the batch, so a Linear input has at least 2 dimensions
  msg = rule_error("{type: Linear, out_features: 10}", {tensor({4})});
  CHECK(msg == "expected a 2-D to 64-D input [N, *, in_features], found 1-D [4]");
}

TEST_CASE("Linear: located errors in a spec") {
  CHECK(one_layer_error("{type: Linear, in_features: 3136, out_features: 10}", {3200}) ==
        "test.yaml:4:33: error: Linear '0': in_features is 3,136, but the input [1, 3200] has 3,200 features in its last dimension");
  CHECK(one_layer_error("{type: Linear, out_feature: 10}", {64}) ==
        "test.yaml:4:20: error: Linear '0': unknown attribute 'out_feature'; did you mean 'out_features'?");
  CHECK(one_layer_error("{type: Linear, out_features: 0}", {64}) ==
        "test.yaml:4:34: error: Linear '0': out_features must be at least 1, found 0");
  auto msg = one_layer_error("{type: Linear, out_features: 10, bias: 1}", {64});
  CHECK_HAS(msg, "test.yaml:4:44: error: Linear '0': bias must be true or false, found");
  msg = one_layer_error("{type: Linear, out_features: ten}", {64});
  CHECK_HAS(msg, "test.yaml:4:34: error: Linear '0': out_features must be an integer, found");
  CHECK(one_layer_error("{type: Linear}", {64}) ==
        "test.yaml:4:5: error: Linear '0': needs attribute 'out_features' (int >= 1; required)");
  // in_features: null means "not given"
  CHECK(one_layer_error("{type: Linear, in_features: null, out_features: 10}", {64}).empty());
}

TEST_CASE("Linear: one-layer estimate through the graph") {
  // per-sample [16, 64], batch 4: Linear(64, 10) -> [4, 16, 10], 650 params
  const Estimate e = one_layer("{type: Linear, out_features: 10}", {16, 64}, 4);
  REQUIRE(e.layers.size() == 1);
  CHECK(to_string(e.layers[0].outputs[0].shape) == "[4, 16, 10]");
  CHECK(e.layers[0].params == 650);
  CHECK(e.layers[0].trainable_params == 650);
  CHECK(e.layers[0].param_bytes == 650 * 4);
  CHECK(e.layers[0].macs == 4 * 16 * 64 * 10);
  CHECK(e.layers[0].output_bytes == 4 * 16 * 10 * 4);
}

// Megatron's ColumnParallelLinear and RowParallelLinear under sequence parallelism, one rank's
// share, and the scatter into the sequence-parallel region: modelled from Megatron-LM's code
// (megatron/core/tensor_parallel/layers.py and mappings.py; docs/parallel.md), [N, s, h] here
// where Megatron's tensors are [s, N, h].
TEST_CASE("ColumnParallelLinear, RowParallelLinear, ScatterToSequenceParallelRegion: a sequence shard in, gathered, scattered") {
  SUBCASE("column-parallel: the shard all-gathered, the shard kept, not the gathered input") {
    const auto r = run_one("{type: ColumnParallelLinear, out_features: 48, sequence_parallel: 4}", {2, 8, 64});
    CHECK(out_shape(r) == "[2, 32, 48]");
    CHECK(params_of(r) == "weight[48, 64] bias[48]");
    CHECK(r.macs == 2 * 32 * 64 * 48);
    CHECK(saved_of(r) == "input0");  // save_for_backward(input, weight): the rank's [s/t, b, h]
    CHECK(scratch_of(r.forward_scratch) == "[2, 32, 64]:float32");
    CHECK(scratch_of(r.backward_scratch) == "[2, 32, 64]:float32 [2, 32, 64]:float32");  // gathered again; the whole dgrad
    CHECK(scratch_of(run_one("{type: ColumnParallelLinear, out_features: 48, sequence_parallel: 4}", {2, 8, 64}, false).backward_scratch) ==
          "[2, 32, 64]:float32");
    // Gathered into the rank's global memory buffer: no gather of its own, forward or backward;
    // the whole input gradient it reduce-scatters is still a fresh tensor.
    const auto shared = run_one("{type: ColumnParallelLinear, out_features: 48, sequence_parallel: 4, global_buffer: true}", {2, 8, 64});
    CHECK(shared.forward_scratch.empty());
    CHECK(scratch_of(shared.backward_scratch) == "[2, 32, 64]:float32");
    CHECK(saved_of(shared) == "input0");
  }
  SUBCASE("row-parallel: the whole partial output reduce-scattered to the shard") {
    const auto r = run_one("{type: RowParallelLinear, out_features: 64, sequence_parallel: 4}", {2, 32, 12});
    CHECK(out_shape(r) == "[2, 8, 64]");
    CHECK(params_of(r) == "weight[64, 12] bias[64]");
    CHECK(saved_of(r) == "input0");
    CHECK(scratch_of(r.forward_scratch) == "[2, 32, 64]:float32");
    CHECK(scratch_of(r.backward_scratch) == "[2, 32, 64]:float32");  // the output's gradient all-gathered
  }
  SUBCASE("without sequence parallelism they are Linear") {
    const auto r = run_one("{type: RowParallelLinear, out_features: 64}", {2, 32, 12});
    CHECK(out_shape(r) == "[2, 32, 64]");
    CHECK(r.forward_scratch.empty());
  }
  SUBCASE("the scatter: the rank's shard, a tensor of its own, nothing kept") {
    const auto r = run_rule("{type: ScatterToSequenceParallelRegion, sequence_parallel: 4}", {tensor({2, 32, 64}, true)});
    CHECK(out_shape(r) == "[2, 8, 64]");
    CHECK(r.alias == Alias::None);
    CHECK(saved_of(r).empty());
  }
  SUBCASE("the gather: the whole sequence, a tensor of its own, nothing kept") {
    const auto r = run_rule("{type: GatherFromSequenceParallelRegion, sequence_parallel: 4}", {tensor({2, 8, 64}, true)});
    CHECK(out_shape(r) == "[2, 32, 64]");
    CHECK(r.alias == Alias::None);
    CHECK(saved_of(r).empty());
  }
  SUBCASE("a sequence that does not divide") {
    CHECK_THROWS_WITH(run_rule("{type: ScatterToSequenceParallelRegion, sequence_parallel: 4}", {tensor({2, 30, 64}, true)}),
                      "splits the sequence over 4 ranks: expected its length (dimension 1) to divide by 4, found 30");
    CHECK_THROWS_WITH(run_one("{type: RowParallelLinear, out_features: 64, sequence_parallel: 4}", {2, 30, 12}),
                      "reduce-scatters its output's sequence over 4 ranks: expected its length (dimension 1) to divide by 4, found 30");
  }
}

// transformers' Conv1D (GPT-2's c_attn, c_proj, c_fc): torch.addmm(bias, x.view(-1, nx), weight)
// with the weight [nx, nf]. Shapes and counts: transformers.pytorch_utils.Conv1D(192, 64) on
// [2, 8, 64] gives [2, 8, 192], weight [64, 192], bias [192]; what it keeps was read with
// saved_tensors_hooks (validation/probe_transformer_ops.py linear hf_conv1d linear_autocast
// hf_conv1d_autocast, torch 2.13 and 1.13): Linear's, the input's rows [16, 64] and the weight.
TEST_CASE("Conv1D: Linear with its weight stored [nx, nf]") {
  const auto r = run_one("{type: Conv1D, nf: 192}", {2, 8, 64});
  CHECK(out_shape(r) == "[2, 8, 192]");
  CHECK(params_of(r) == "weight[64, 192] bias[192]");
  CHECK(param_count(r) == 64 * 192 + 192);
  CHECK(r.macs == 2 * 8 * 64 * 192);
  CHECK(saved_of(r) == "input0");
  CHECK(kept_params(r) == "param0");
  CHECK(saved_of(run_one("{type: Conv1D, nf: 192}", {2, 8, 64}, true, false)).empty());  // frozen: only the weight
  CHECK(kept_params(run_one("{type: Conv1D, nf: 192}", {2, 8, 64}, false, true)).empty());
  CHECK(saved_of(run_rule("{type: Conv1D, nf: 192}", {tensor({2, 8, 64})}, kEval)).empty());
  // As nn.Linear, the same memory: the parameters' numbers and bytes, the outputs, what is kept.
  const auto l = run_one("{type: Linear, out_features: 192}", {2, 8, 64});
  CHECK(param_count(l) == param_count(r));
  CHECK(l.macs == r.macs);
  CHECK(saved_of(l) == saved_of(r));
}

TEST_CASE("Conv1D: errors") {
  CHECK(rule_error("{type: Conv1D, nx: 32, nf: 10}", {tensor({2, 64})}) ==
        "nx is 32, but the input [2, 64] has 64 features in its last dimension");
  CHECK(rule_error("{type: Conv1D, nf: 10}", {tensor({2, 4}, false, DType::Int64)}) == "expected a floating-point input, found int64");
  // A transposed input with rows in two dimensions: PyTorch's x.view(-1, nx) raises "view size is
  // not compatible with input tensor's size and stride".
  InputTensor transposed = tensor({2, 8, 64});
  transposed.strided = true;
  CHECK(rule_error("{type: Conv1D, nf: 10}", {transposed}) ==
        "views its input as rows (x.view(-1, nx)), which PyTorch refuses for the non-contiguous input [2, 8, 64]; make it "
        "Contiguous first");
  transposed.type.shape = {1, 8, 64};  // one sample: the rows are one dimension, the view works
  CHECK(rule_error("{type: Conv1D, nf: 10}", {transposed}).empty());
  CHECK(one_layer_error("{type: Conv1D}", {64}) == "test.yaml:4:5: error: Conv1D '0': needs attribute 'nf' (int >= 1; required)");
}
