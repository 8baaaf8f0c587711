// The losses (src/memory/loss.cpp): what each adds to a step, as validation/ops_saved_zoo.md
// measured on torch 2.13 and 1.13 (they agree). A Linear(8, 10) on a [4, 8] input that needs no
// gradient keeps that input (128 bytes); the loss keeps the rest.
#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
Estimate with_loss(const std::string& loss, Device device = Device::Cpu) {
  EstimateOptions o;
  o.graph.batch = 4;
  o.graph.device = device;
  return estimate_from("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 10}\nloss: " + loss + "\n", o);
}
}  // namespace

TEST_CASE("Losses: target and saved bytes") {
  struct Case {
    const char* loss;
    std::int64_t target, saved;
  };
  // mse, smooth_l1, bce_with_logits, huber: *Backward0.self (the output, 160) and .target (160);
  // nll: NllLossBackward0.self (the output), .target (int64 [4]: 32) and .total_weight (4);
  // l1: AbsBackward0.self, the difference (160), and not the target;
  // cross_entropy: the log-probabilities (160), the target and total_weight.
  for (const Case& c : {Case{"mse", 160, 128 + 320}, Case{"smooth_l1", 160, 128 + 320}, Case{"bce_with_logits", 160, 128 + 320},
                        Case{"huber", 160, 128 + 320}, Case{"nll", 32, 128 + 196}, Case{"l1", 160, 128 + 160},
                        Case{"cross_entropy", 32, 128 + 196}, Case{"mean", 0, 128}}) {
    CAPTURE(c.loss);
    const Estimate e = with_loss(c.loss);
    CHECK(e.totals.target_bytes == c.target);
    CHECK(e.totals.saved_bytes == c.saved);
    CHECK(name_of(e.loss) == c.loss);
  }
}

TEST_CASE("Losses: the backward's temporaries show in the step") {
  // l1's backward holds div and sgn (160 bytes each) beside the output's gradient; mse's does not,
  // and both keep as much before backward (l1: the difference; mse: the output, already live).
  const Estimate l1 = with_loss("l1"), huber = with_loss("huber");
  CHECK(l1.totals.backward_transient_bytes > huber.totals.backward_transient_bytes);
}

TEST_CASE("Losses: class-index losses need class scores") {
  const std::string spec = "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 1}\n"
                           "  - {name: s, type: Squeeze, dim: 1}\nloss: nll\n";
  CHECK(error_from(spec) == "test.yaml:5:7: error: nll needs a floating-point output of shape [N, C] or [N, C, d1, …] "
                            "(classes in dimension 1); the model's output, Squeeze 's', is [1]");
  CHECK(error_from("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 2}\nloss: hinge\n") ==
        "test.yaml:4:7: error: unknown loss 'hinge'; expected cross_entropy, mse, mean, bce_with_logits, nll, l1, "
        "smooth_l1 or huber");
}

TEST_CASE("Losses: a weighted sum, a loss per output") {
  // Two heads on one Linear: scores [4, 10] with cross_entropy, boxes [4, 4] with mse.
  const auto two = [](const std::string& weights, const char* torch, Device device = Device::Cpu) {
    EstimateOptions o;
    o.graph.batch = 4;
    o.graph.device = device;
    o.graph.torch = find_torch_profile(torch);
    return estimate_from("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 6}\n"
                         "  - {name: cls, type: Linear, out_features: 10}\n  - {name: box, type: Linear, input: fc, out_features: 4}\n"
                         "loss:\n  - {output: cls, kind: cross_entropy" + weights + "}\n  - {output: box, kind: mse" + weights + "}\n", o);
  };
  const Estimate plain = two("", "1.13"), weighted = two(", weight: 0.5", "1.13");
  REQUIRE(plain.losses.size() == 2);
  CHECK(plain.losses[0].output_name == "cls");
  CHECK(plain.losses[1].kind == LossKind::Mse);
  CHECK(weighted.losses[1].weight == 0.5);
  // Both targets: int64 [4] (32 bytes) and float [4, 4] (64).
  CHECK(plain.totals.target_bytes == 32 + 64);
  // MulBackward0 keeps each weight, an 8-byte wrapped number on the CPU, which 1.13's saved-tensor
  // hooks see and 2.13's do not.
  CHECK(weighted.totals.saved_bytes == plain.totals.saved_bytes + 16);
  CHECK(two(", weight: 0.5", "2.13").totals.saved_bytes == two("", "2.13").totals.saved_bytes);
}
