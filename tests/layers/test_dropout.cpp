// Dropout and Dropout1d/2d/3d (layers/dropout.cpp). CPU behaviour read in PyTorch 1.13 with
// torch.autograd.graph.saved_tensors_hooks (and `y is x` / data_ptr for aliasing). CUDA cannot be
// run here: its expectations follow ATen's Dropout.cpp (1.13), where `dropout` uses the fused
// native_dropout — which keeps a bool mask — only when is_fused_kernel_acceptable(input, p):
// a CUDA input and 0 < p < 1; in-place and feature (channel) dropout never use it.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
LayerResult drop(const std::string& yaml, const Shape& in, Context ctx = kCpu, bool input_grad = true,
                 DType dtype = DType::Float32) {
  return run_rule(yaml, {tensor(in, input_grad, dtype)}, ctx);
}
}  // namespace

TEST_CASE("Dropout: training on the CPU keeps a mask of the input's dtype") {
  // PyTorch 1.13 CPU: noise = empty_like(x).bernoulli_(1-p).div_(1-p); x * noise keeps the noise:
  // Dropout(0.5) on [4, 10] -> saved float32 [4, 10]
  auto r = drop("{type: Dropout}", {4, 10});
  CHECK(out_shape(r) == "[4, 10]");
  CHECK(r.outputs[0].dtype == DType::Float32);
  CHECK(r.params.empty());
  CHECK(r.alias == Alias::None);
  CHECK(saved_of(r) == "extra[4, 10]:float32");
  REQUIRE(r.saved.size() == 1);
  CHECK(r.saved[0].what == "mask");
  CHECK(saved_of(drop("{type: Dropout, p: 0.1}", {4, 10})) == "extra[4, 10]:float32");
  // bfloat16 input: a bfloat16 mask (PyTorch 1.13 CPU, hooks)
  CHECK(saved_of(drop("{type: Dropout}", {4, 10}, kCpu, true, DType::BFloat16)) == "extra[4, 10]:bfloat16");
  // no gradient needed: nothing kept (PyTorch: no node)
  r = drop("{type: Dropout}", {4, 10}, kCpu, false);
  CHECK(saved_of(r).empty());
  CHECK(r.alias == Alias::None);  // still a new tensor
}

TEST_CASE("Dropout: in place") {
  // Dropout(0.5, inplace=True): the output is the input (same data_ptr); the mask is still kept
  auto r = drop("{type: Dropout, inplace: true}", {4, 10});
  CHECK(r.alias == Alias::InPlace);
  CHECK(saved_of(r) == "extra[4, 10]:float32");
  CHECK(saved_of(drop("{type: Dropout, inplace: true}", {4, 10}, kCpu, false)).empty());
  // CUDA: dropout_ is not fused either: a mask of the input's dtype
  r = drop("{type: Dropout, inplace: true}", {4, 10}, kCuda);
  CHECK(r.alias == Alias::InPlace);
  CHECK(saved_of(r) == "extra[4, 10]:float32");
}

TEST_CASE("Dropout: CUDA uses the fused kernel and a bool mask") {
  auto r = drop("{type: Dropout}", {4, 10}, kCuda);
  CHECK(r.alias == Alias::None);
  CHECK(saved_of(r) == "extra[4, 10]:bool");
  CHECK(saved_of(drop("{type: Dropout, p: 0.9}", {4, 10}, kCuda)) == "extra[4, 10]:bool");
  // half precision: still a bool mask
  const Context cuda16{Mode::Train, Device::Cuda, DType::Float16, std::nullopt};
  CHECK(saved_of(drop("{type: Dropout}", {4, 10}, cuda16, true, DType::Float16)) == "extra[4, 10]:bool");
  CHECK(saved_of(drop("{type: Dropout}", {4, 10}, kCuda, false)).empty());
  // channel dropout is never fused: float32 [N, C, 1, 1]
  CHECK(saved_of(drop("{type: Dropout2d}", {2, 3, 4, 5}, kCuda)) == "extra[2, 3, 1, 1]:float32");
}

TEST_CASE("Dropout: evaluation and p = 0 return the input itself") {
  // PyTorch: eval() Dropout returns its input (y is x); so does p=0 in training (_dropout_impl)
  for (const std::string yaml : {"{type: Dropout}", "{type: Dropout, inplace: true}", "{type: Dropout2d}"}) {
    CAPTURE(yaml);
    const Shape in = yaml == "{type: Dropout2d}" ? Shape{2, 3, 4, 5} : Shape{4, 10};
    const auto r = drop(yaml, in, kEval);
    CHECK(r.alias == Alias::View);
    CHECK(saved_of(r).empty());
    CHECK(to_string(r.outputs[0].shape) == to_string(in));
  }
  for (const Context& ctx : {kCpu, kCuda}) {
    for (const std::string yaml : {"{type: Dropout, p: 0}", "{type: Dropout, p: 0.0, inplace: true}"}) {
      CAPTURE(yaml);
      const auto r = drop(yaml, {4, 10}, ctx);
      CHECK(r.alias == Alias::View);
      CHECK(saved_of(r).empty());
      CHECK(out_shape(r) == "[4, 10]");
    }
  }
}

// PyTorch 1.13 _dropout_impl: `if (p == 1) return multiply<inplace>(input, at::zeros({}, …))` — the
// multiply keeps a 0-dim float32 zero (4 bytes), not a full mask; the same on CUDA (p = 1 is not
// fused). Hooks: Dropout(1.0) on [4, 10] -> saved float32 []; Dropout2d(1.0) -> saved float32 [].
TEST_CASE("Dropout: p = 1 keeps only a scalar") {
  CHECK(saved_of(drop("{type: Dropout, p: 1}", {4, 10})) == "extra[]:float32");
  CHECK(saved_of(drop("{type: Dropout, p: 1, inplace: true}", {4, 10})) == "extra[]:float32");
  CHECK(saved_of(drop("{type: Dropout, p: 1}", {4, 10}, kCuda)) == "extra[]:float32");
  CHECK(saved_of(drop("{type: Dropout2d, p: 1}", {2, 3, 4, 5})) == "extra[]:float32");
}

// More of the same, from the hooks: the scalar has the input's dtype (bfloat16 -> bfloat16 []);
// nothing without a gradient; in place the output is still the input; Dropout1d/3d alike.
TEST_CASE("Dropout: p = 1 in detail") {
  auto r = drop("{type: Dropout, p: 1}", {4, 10}, kCpu, true, DType::BFloat16);
  CHECK(saved_of(r) == "extra[]:bfloat16");
  REQUIRE(r.saved.size() == 1);
  CHECK(r.saved[0].what == "zero scalar");
  CHECK(r.alias == Alias::None);
  CHECK(drop("{type: Dropout, p: 1, inplace: true}", {4, 10}).alias == Alias::InPlace);
  CHECK(saved_of(drop("{type: Dropout, p: 1}", {4, 10}, kCpu, false)).empty());
  CHECK(saved_of(drop("{type: Dropout, p: 1}", {4, 10}, kCuda, false)).empty());
  CHECK(saved_of(drop("{type: Dropout1d, p: 1}", {2, 3, 4})) == "extra[]:float32");
  CHECK(saved_of(drop("{type: Dropout3d, p: 1, inplace: true}", {2, 3, 4, 5, 6})) == "extra[]:float32");
  // evaluation ignores p
  CHECK(drop("{type: Dropout, p: 1}", {4, 10}, kEval).alias == Alias::View);
}

TEST_CASE("Dropout1d/2d/3d: a mask per channel") {
  // PyTorch 1.13 CPU (hooks): the feature noise is [N, C, 1…], of the input's dtype
  auto r = drop("{type: Dropout1d}", {2, 3, 7});
  CHECK(out_shape(r) == "[2, 3, 7]");
  CHECK(saved_of(r) == "extra[2, 3, 1]:float32");
  r = drop("{type: Dropout2d}", {2, 3, 4, 5});
  CHECK(out_shape(r) == "[2, 3, 4, 5]");
  CHECK(r.alias == Alias::None);
  CHECK(saved_of(r) == "extra[2, 3, 1, 1]:float32");
  r = drop("{type: Dropout3d}", {2, 3, 4, 5, 6});
  CHECK(saved_of(r) == "extra[2, 3, 1, 1, 1]:float32");
  // in place: the output is the input, the same [N, C, 1, 1] mask
  r = drop("{type: Dropout2d, inplace: true}", {2, 3, 4, 5});
  CHECK(r.alias == Alias::InPlace);
  CHECK(saved_of(r) == "extra[2, 3, 1, 1]:float32");
  CHECK(saved_of(drop("{type: Dropout2d}", {2, 3, 4, 5}, kCpu, false)).empty());
}

TEST_CASE("Dropout: errors") {
  // PyTorch: "result type Float can't be cast to the desired output type Long"
  CHECK(rule_error("{type: Dropout}", {tensor({2, 3}, false, DType::Int64)}) == "expected a floating-point input, found int64");
  // PyTorch: "dropout1d: Expected 2D or 3D input, but received a 4D input"
  CHECK(rule_error("{type: Dropout1d}", {tensor({2, 3, 4, 5})}) == "expected a 3-D input [N, C, ...], found 4-D [2, 3, 4, 5]");
  CHECK(rule_error("{type: Dropout3d}", {tensor({2, 3, 4, 5})}) == "expected a 5-D input [N, C, ...], found 4-D [2, 3, 4, 5]");
  // PyTorch: "dropout probability has to be between 0 and 1, but got 1.5" (and -0.1)
  CHECK(one_layer_error("{type: Dropout, p: 1.5}", {10}) == "test.yaml:4:24: error: Dropout '0': p must be between 0 and 1, found 1.5");
  CHECK(one_layer_error("{type: Dropout, p: -0.1}", {10}) ==
        "test.yaml:4:24: error: Dropout '0': p must be between 0 and 1, found -0.1");
  CHECK_HAS(one_layer_error("{type: Dropout, p: half}", {10}), "test.yaml:4:24: error: Dropout '0': p must be a number, found");
  CHECK(one_layer_error("{type: Dropout, prob: 0.2}", {10}) ==
        "test.yaml:4:21: error: Dropout '0': unknown attribute 'prob'; Dropout takes: p inplace");
  CHECK(one_layer_error("{type: Dropout2d, inplce: true}", {3, 4, 4}) ==
        "test.yaml:4:23: error: Dropout2d '0': unknown attribute 'inplce'; did you mean 'inplace'?");
  // p = 1 is a valid probability
  CHECK_NOTHROW(graph_from(one_layer_spec("{type: Dropout, p: 1}", {10})));
}

TEST_CASE("Dropout: one-layer estimate through the graph") {
  // evaluation: the output is the input's storage, no new memory
  const Estimate e = one_layer("{type: Dropout}", {10}, 4, Mode::Eval);
  CHECK(to_string(e.layers[0].outputs[0].shape) == "[4, 10]");
  CHECK(e.layers[0].output_bytes == 0);
}

// AlphaDropout, measured on 1.13 and 2.13 (validation/ops_saved_zoo.md): MulBackward0.other is a
// new [4, 16] float32 noise; nn.AlphaDropout(inplace=True) is not in place (its forward does not
// pass the flag on); p = 1 keeps a 0-dim zero. Never the fused kernel, so CUDA keeps the same.
TEST_CASE("AlphaDropout: an input-shaped noise of the input's dtype") {
  for (const Context& ctx : {kCpu, kCpu113, kCuda}) {
    auto r = drop("{type: AlphaDropout}", {4, 16}, ctx);
    CHECK(saved_of(r) == "extra[4, 16]:float32");
    CHECK(r.alias == Alias::None);
    r = drop("{type: AlphaDropout, inplace: true}", {4, 16}, ctx);
    CHECK(r.alias == Alias::None);
    CHECK(saved_of(r) == "extra[4, 16]:float32");
    CHECK(saved_of(drop("{type: AlphaDropout, p: 1}", {4, 16}, ctx)) == "extra[]:float32");
  }
  CHECK(saved_of(drop("{type: AlphaDropout}", {4, 16}, kCpu, false)).empty());
  CHECK(drop("{type: AlphaDropout}", {4, 16}, kEval).alias == Alias::View);
}

// torchvision.ops.stochastic_depth (mirrored line for line in probe_zoo.py): MulBackward0.other is
// the noise, [2, 1, 1, 1] (8 B) for mode row, [1, 1, 1, 1] (4 B) for mode batch; forward
// allocates it and the output (+8 +1536); evaluation and p = 0 return the input.
TEST_CASE("StochasticDepth / DropPath: the noise, per sample or per batch") {
  for (const Context& ctx : {kCpu, kCpu113}) {
    auto r = drop("{type: StochasticDepth, p: 0.2, mode: row}", {2, 3, 8, 8}, ctx);
    CHECK(out_shape(r) == "[2, 3, 8, 8]");
    CHECK(r.alias == Alias::None);
    CHECK(saved_of(r) == "extra[2, 1, 1, 1]:float32");
    CHECK(saved_of(drop("{type: StochasticDepth, p: 0.2, mode: batch}", {2, 3, 8, 8}, ctx)) == "extra[1, 1, 1, 1]:float32");
    CHECK(saved_of(drop("{type: StochasticDepth, p: 1.0, mode: row}", {2, 3, 8, 8}, ctx)) == "extra[2, 1, 1, 1]:float32");
  }
  CHECK(saved_of(drop("{type: StochasticDepth, p: 0.2, mode: row}", {2, 3, 8, 8}, kCpu, false)).empty());
  CHECK(drop("{type: StochasticDepth, p: 0.2, mode: row}", {2, 3, 8, 8}, kEval).alias == Alias::View);
  CHECK(drop("{type: StochasticDepth, p: 0, mode: row}", {2, 3, 8, 8}).alias == Alias::View);
  CHECK(saved_of(drop("{type: StochasticDepth, p: 0.1, mode: row}", {2, 3, 8, 8}, kCpu, true, DType::BFloat16)) ==
        "extra[2, 1, 1, 1]:bfloat16");
  // timm's DropPath: per sample
  CHECK(saved_of(drop("{type: DropPath, drop_prob: 0.1}", {2, 5, 7})) == "extra[2, 1, 1]:float32");
  CHECK(drop("{type: DropPath}", {2, 5, 7}).alias == Alias::View);  // drop_prob defaults to 0
  // torchvision's constructor needs both p and mode
  CHECK_HAS(one_layer_error("{type: StochasticDepth, p: 0.2}", {3, 4, 4}), "needs attribute 'mode'");
  CHECK_HAS(one_layer_error("{type: StochasticDepth, p: 1.2, mode: row}", {3, 4, 4}), "p must be between 0 and 1, found 1.2");
  CHECK_HAS(one_layer_error("{type: StochasticDepth, p: 0.2, mode: rows}", {3, 4, 4}), "did you mean 'row'?");
}
