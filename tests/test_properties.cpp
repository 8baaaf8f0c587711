// Property tests: for randomly generated valid specs (chains of convolutions, pools, norms,
// activations and dropout, stochastic depth, resampling and padding, residual blocks, MLPs),
// invariants that no estimate may break.
// The generator is seeded, so a failure names a reproducible spec (printed by CAPTURE).
#include <random>
#include <sstream>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

class SpecGenerator {
 public:
  explicit SpecGenerator(unsigned seed) : rng_(seed) {}

  // A CNN: stages of conv/bn/activation/dropout with occasional pooling and residual adds,
  // then flatten and a classifier.
  std::string cnn() {
    std::ostringstream s;
    int channels = pick(1, 8), size = pick(8, 24);
    s << "inputs:\n  x: [" << channels << ", " << size << ", " << size << "]\nlayers:\n";
    const int stages = pick(1, 5);
    for (int i = 0; i < stages; ++i) {
      const int out = pick(1, 16), k = pick(1, 3);
      s << "  - {name: c" << i << ", type: Conv2d, out_channels: " << out << ", kernel_size: " << k
        << ", padding: " << k / 2 << ", bias: " << (coin() ? "true" : "false") << (coin() ? "" : ", trainable: false") << "}\n";
      if (coin()) s << "  - {name: bn" << i << ", type: BatchNorm2d}\n";
      s << "  - {name: act" << i << ", type: "
        << pick_of({"ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "LeakyReLU", "PReLU", "SELU", "Hardtanh", "Softsign",
                    "Tanhshrink", "LogSigmoid"})
        << "}\n";
      if (coin()) {  // a residual block on this stage's output
        s << "  - {name: r" << i << "a, type: Conv2d, out_channels: " << out << ", kernel_size: 3, padding: 1}\n"
          << "  - {name: r" << i << "b, type: ReLU, inplace: true}\n"
          << "  - {name: r" << i << "sum, type: Add, inputs: [r" << i << "b, act" << i << "]}\n";
      }
      if (coin()) s << "  - {name: d" << i << ", type: " << pick_of({"Dropout", "AlphaDropout"}) << ", p: 0.3}\n";
      if (coin()) s << "  - {name: sd" << i << ", type: StochasticDepth, p: 0.2, mode: " << pick_of({"row", "batch"}) << "}\n";
      if (size <= 12 && coin()) {
        s << "  - {name: up" << i << ", type: Upsample, scale_factor: 2, mode: " << pick_of({"nearest", "bilinear"}) << "}\n"
          << "  - {name: pad" << i << ", type: " << pick_of({"ZeroPad2d", "ReflectionPad2d", "ReplicationPad2d", "CircularPad2d"})
          << ", padding: 1}\n"
          << "  - {name: crop" << i << ", type: ZeroPad2d, padding: -1}\n";
        size *= 2;
      }
      if (size >= 4 && coin()) {
        s << "  - {name: p" << i << ", type: " << (coin() ? "MaxPool2d" : "AvgPool2d") << ", kernel_size: 2}\n";
        size /= 2;
      }
      channels = out;
    }
    s << "  - {name: flat, type: Flatten}\n  - {name: fc, type: Linear, out_features: " << pick(2, 10) << "}\n"
      << "loss: " << pick_of({"cross_entropy", "nll", "mse", "l1", "smooth_l1", "huber", "bce_with_logits", "mean"}) << "\n";
    return s.str();
  }

  // An MLP whose stages are a Linear or two concatenated Linears, then an activation h{i}.
  std::string mlp() {
    std::ostringstream s;
    s << "inputs:\n  x: [" << pick(4, 64) << "]\nlayers:\n  - {name: h0, type: Linear, out_features: " << pick(4, 64)
      << "}\n";
    const int depth = pick(1, 6);
    for (int i = 1; i <= depth; ++i) {
      if (coin()) {
        s << "  - {name: a" << i << ", type: Linear, input: h" << i - 1 << ", out_features: " << pick(2, 32) << "}\n"
          << "  - {name: b" << i << ", type: Linear, input: h" << i - 1 << ", out_features: " << pick(2, 32) << "}\n"
          << "  - {name: c" << i << ", type: Concat, inputs: [a" << i << ", b" << i << "], dim: 1}\n";
      } else {
        s << "  - {name: l" << i << ", type: Linear, out_features: " << pick(2, 64)
          << (coin() ? "" : ", trainable: false") << "}\n";
      }
      s << "  - {name: h" << i << ", type: "
        << pick_of({"ReLU", "GELU", "Tanh", "Dropout", "Identity", "CELU", "Threshold, threshold: 0.1, value: 0", "Softmin"})
        << "}\n";
    }
    s << "  - {name: out, type: Linear, out_features: " << pick(2, 10) << "}\nloss: " << pick_of({"cross_entropy", "mean"})
      << "\n";
    return s.str();
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin() { return pick(0, 1) == 1; }
  const char* pick_of(std::initializer_list<const char*> options) {
    return *(options.begin() + pick(0, static_cast<int>(options.size()) - 1));
  }
  std::mt19937 rng_;
};

EstimateOptions options(std::int64_t batch, OptimizerKind optimizer, bool keep_grads, Mode mode = Mode::Train,
                        Device device = Device::Cuda) {
  EstimateOptions o;
  o.graph.batch = batch;
  o.graph.mode = mode;
  o.graph.device = device;
  o.step.optimizer = optimizer;
  o.step.keep_grads = keep_grads;
  return o;
}

void check_invariants(const std::string& spec) {
  CAPTURE(spec);
  int variant = 0;
  for (const OptimizerKind opt : {OptimizerKind::Sgd, OptimizerKind::Adam, OptimizerKind::Momentum}) {
    const bool keep_grads = ++variant % 2 == 0;
    const Device device = variant == 3 ? Device::Cpu : Device::Cuda;
    std::int64_t previous_peak = 0, previous_saved = 0, previous_activations = 0;
    for (const std::int64_t batch : {1, 2, 3, 8}) {
      const Estimate e = estimate_from(spec, options(batch, opt, keep_grads, Mode::Train, device));
      const Totals& t = e.totals;
      std::int64_t params = 0, allocated = 0, live = 0;
      for (const auto& l : e.layers) params += l.params;
      for (const auto& ev : e.timeline) {
        if (ev.delta > 0) allocated += ev.delta;
        live += ev.delta;
        REQUIRE(live >= 0);
        REQUIRE(ev.live == live);
      }
      CHECK(t.params == params);
      CHECK(t.trainable_params + t.non_trainable_params == t.params);
      CHECK(t.saved_bytes <= allocated);
      CHECK(t.peak_bytes >= t.persistent_bytes + t.input_bytes);
      CHECK(t.peak_bytes >= t.param_bytes + t.grad_bytes);  // gradients all exist at the step
      CHECK(t.peak_bytes <= allocated);
      std::int64_t breakdown = 0;  // what the peak is made of adds up to it
      for (std::int64_t part : t.peak_breakdown) breakdown += part;
      CHECK(breakdown == t.peak_bytes);
      CHECK(t.backward_transient_bytes <= t.peak_bytes);
      // More samples never need less memory.
      CHECK(t.peak_bytes >= previous_peak);
      CHECK(t.saved_bytes >= previous_saved);
      CHECK(t.activation_bytes >= previous_activations);
      previous_peak = t.peak_bytes;
      previous_saved = t.saved_bytes;
      previous_activations = t.activation_bytes;
    }
  }
  const Estimate inference = estimate_from(spec, options(4, OptimizerKind::None, false, Mode::Eval));
  const Estimate training = estimate_from(spec, options(4, OptimizerKind::Sgd, false));
  CHECK(inference.totals.saved_bytes == 0);
  CHECK(inference.totals.peak_bytes <= training.totals.peak_bytes);
}

}  // namespace

TEST_CASE("invariants hold for random CNNs with residual blocks") {
  SpecGenerator gen(20261122);
  for (int i = 0; i < 60; ++i) check_invariants(gen.cnn());
}

TEST_CASE("invariants hold for random MLPs with concatenated branches") {
  SpecGenerator gen(7);
  for (int i = 0; i < 60; ++i) check_invariants(gen.mlp());
}
