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

TEST_CASE("Losses: cross_entropy's options, as validation/probe_lm_loss.py measured them") {
  const auto run = [](const std::string& loss, const char* torch = "2.13", const std::string& dtype = "") {
    EstimateOptions o;
    o.graph.batch = 4;
    o.graph.device = Device::Cpu;
    o.graph.torch = find_torch_profile(torch);
    return estimate_from(dtype + "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 10}\nloss: " + loss + "\n", o);
  };
  const Estimate plain = run("cross_entropy");
  // ignore_index: the same tensors, whatever the class (probe: ignore_index, ignore_index_hit).
  const Estimate ignore = run("{type: cross_entropy, ignore_index: 3}");
  CHECK(ignore.totals.saved_bytes == plain.totals.saved_bytes);
  CHECK(ignore.totals.peak_bytes == plain.totals.peak_bytes);
  // label_smoothing 0 is F.cross_entropy's plain path.
  CHECK(run("{type: cross_entropy, label_smoothing: 0}").totals.peak_bytes == plain.totals.peak_bytes);
  // label_smoothing > 0, 2.13: the bool mask [4] and the int64 count; 1.13: the smoothed loss
  // [4] (float32), the mask and ~mask (fixtures lstm_lm_smoothed.json of both versions).
  CHECK(run("{type: cross_entropy, label_smoothing: 0.1}").totals.saved_bytes == plain.totals.saved_bytes + 4 + 8);
  CHECK(run("{type: cross_entropy, label_smoothing: 0.1}", "1.13").totals.saved_bytes ==
        run("cross_entropy", "1.13").totals.saved_bytes + 16 + 4 + 4);
  // nll's gradient of the log-probabilities and the smoothed sum's (an expanded view of a [4]
  // gradient) are summed into a new [4, 10] tensor: at that add, two [4, 10] gradients and the
  // [4] one are live where plain has two [4, 10] (its own, and the output's after it).
  CHECK(run("{type: cross_entropy, label_smoothing: 0.1}").totals.backward_transient_bytes ==
        plain.totals.backward_transient_bytes + 16);
  // upcast (logits.float()): nothing on float32 logits; on bfloat16 ones, a float32 copy the loss
  // runs on: float32 log-probabilities (160 bytes instead of 80) and total_weight (4 instead of 2).
  CHECK(run("{type: cross_entropy, upcast: true}").totals.peak_bytes == plain.totals.peak_bytes);
  const Estimate bf16 = run("cross_entropy", "2.13", "dtype: bfloat16\n");
  const Estimate bf16_up = run("{type: cross_entropy, upcast: true}", "2.13", "dtype: bfloat16\n");
  CHECK(bf16_up.totals.saved_bytes == bf16.totals.saved_bytes + 80 + 2);
  CHECK(bf16_up.totals.peak_bytes > bf16.totals.peak_bytes);
}

TEST_CASE("Losses: the options belong to the spec's loss; --loss and extends replace them with it") {
  EstimateOptions o;
  o.step.loss = LossKind::Mse;  // mse takes no options: the spec's cross_entropy options are not its
  const std::string spec = "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 10}\n"
                           "loss: {type: cross_entropy, label_smoothing: 0.1}\n";
  CHECK(error_from(spec, o).empty());
  CHECK(error_from("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 10}\n"
                   "loss: {type: nll, label_smoothing: 0.1}\n") ==
        "test.yaml:4:19: error: nll 'loss': unknown attribute 'label_smoothing'; nll takes: ignore_index");
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
                         "loss:\n  - {output: cls, type: cross_entropy" + weights + "}\n  - {output: box, type: mse" + weights + "}\n", o);
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
