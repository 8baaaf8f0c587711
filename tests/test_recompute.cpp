// Activation checkpointing and gradient accumulation: which segments a plan makes, how the
// spec's marks and --checkpoint relate, and what the step does with them. That the figures are
// PyTorch's (torch.utils.checkpoint in both implementations, accumulation over micro-steps) is
// checked on the measured runs in test_step.cpp.
#include <algorithm>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// Three MLP blocks, marked for checkpointing when `marked`.
std::string mlp(bool marked) {
  return std::string(R"(
inputs: {x: [64]}
blocks:
  Mlp:
    layers:
      - {name: fc1, type: Linear, out_features: 256}
      - {name: gelu, type: GELU}
      - {name: fc2, type: Linear, out_features: 64}
      - {name: add, type: Add, inputs: [in, fc2], functional: true}
layers:
  - {name: stem, type: Linear, out_features: 64}
  - {name: blocks, block: Mlp, repeat: 3)") +
         (marked ? ", checkpoint: true" : "") + R"(}
  - {name: head, type: Linear, out_features: 10}
loss: cross_entropy
)";
}

EstimateOptions cpu(std::int64_t batch = 32) {
  EstimateOptions o;
  o.graph.batch = batch;
  o.graph.device = Device::Cpu;
  o.step.optimizer = OptimizerKind::Sgd;
  return o;
}

EstimateOptions with(EstimateOptions o, CheckpointSegments segments, std::int64_t every = 0,
                     CheckpointImpl impl = CheckpointImpl::NonReentrant) {
  o.step.checkpoint = {segments, every, impl};
  return o;
}

}  // namespace

TEST_CASE("the spec's checkpoint marks and --checkpoint blocks make the same segments") {
  for (const CheckpointImpl impl : {CheckpointImpl::NonReentrant, CheckpointImpl::Reentrant}) {
    CAPTURE(name_of(impl));
    const Estimate marked = estimate_from(mlp(true), with(cpu(), CheckpointSegments::Spec, 0, impl));
    const Estimate blocks = estimate_from(mlp(false), with(cpu(), CheckpointSegments::Blocks, 0, impl));
    CHECK(marked.checkpointed == std::vector<std::string>{"blocks.0", "blocks.1", "blocks.2"});
    CHECK(blocks.checkpointed == marked.checkpointed);
    CHECK(blocks.totals.peak_bytes == marked.totals.peak_bytes);
    CHECK(blocks.totals.saved_bytes == marked.totals.saved_bytes);
  }
  // --checkpoint none ignores the marks.
  const Estimate none = estimate_from(mlp(true), with(cpu(), CheckpointSegments::None));
  const Estimate plain = estimate_from(mlp(false), cpu());
  CHECK(none.checkpointed.empty());
  CHECK(none.totals.peak_bytes == plain.totals.peak_bytes);
}

TEST_CASE("every:K groups the top-level entries, each repeat instance one") {
  const Estimate e = estimate_from(mlp(false), with(cpu(), CheckpointSegments::Every, 2));
  CHECK(e.checkpointed == std::vector<std::string>{"stem..blocks.0", "blocks.1..blocks.2", "head"});
  const Estimate one = estimate_from(mlp(false), with(cpu(), CheckpointSegments::Every, 1));
  CHECK(one.checkpointed == std::vector<std::string>{"stem", "blocks.0", "blocks.1", "blocks.2", "head"});
}

TEST_CASE("a checkpointed segment keeps its inputs instead of its layers' saved tensors") {
  const Estimate plain = estimate_from(mlp(false), cpu());
  const Estimate ckpt = estimate_from(mlp(true), cpu());
  // Each block keeps its input [32, 64]; unmarked, it keeps fc1's input, gelu's input and
  // fc2's input ([32, 64] + 2 x [32, 256]).
  CHECK(plain.totals.saved_bytes - ckpt.totals.saved_bytes == 3 * 2 * 32 * 256 * 4);
  // Recomputation costs one block's activations again; with larger activations than
  // parameters the peak falls.
  CHECK(estimate_from(mlp(true), cpu(1024)).totals.peak_bytes < estimate_from(mlp(false), cpu(1024)).totals.peak_bytes);
  // The per-layer "Saved" column: a segment's inputs are its first layer's.
  const auto fc1 = std::find_if(ckpt.layers.begin(), ckpt.layers.end(), [](const LayerEstimate& l) { return l.name == "blocks.1.fc1"; });
  REQUIRE(fc1 != ckpt.layers.end());
  CHECK(fc1->saved_bytes == 32 * 64 * 4);
}

TEST_CASE("the stashed RNG state is a CPU tensor: on CUDA it costs the device nothing") {
  EstimateOptions o = cpu();
  const Estimate on_cpu = estimate_from(mlp(true), o);
  o.graph.device = Device::Cuda;
  const Estimate on_cuda = estimate_from(mlp(true), o);
  const auto rng_bytes = [](const Estimate& e) {
    std::int64_t most = 0;
    for (const auto& ev : e.timeline)
      if (e.timeline.tensor(ev).find("RNG state") != std::string::npos) most = std::max(most, ev.delta);
    return most;
  };
  CHECK(rng_bytes(on_cpu) == 5056);
  CHECK(rng_bytes(on_cuda) == 0);
}

TEST_CASE("recomputation is in the timeline: 2.x's non-reentrant one stops at the last kept tensor") {
  // The blocks' last layer that keeps something is fc2 (its input); add keeps nothing. 2.13
  // recomputes up to fc2's saved input and stops before fc2's output; 1.13 and the reentrant
  // implementation run the whole block, add included.
  const auto recomputed = [](const Estimate& e) {
    std::vector<std::string> outputs;
    for (const auto& ev : e.timeline)
      if (ev.delta > 0 && e.timeline.layer(ev).rfind("blocks.2.", 0) == 0 && e.timeline.tensor(ev).find("(recomputed)") != std::string::npos)
        outputs.emplace_back(e.timeline.tensor(ev));
    return outputs;
  };
  EstimateOptions o = cpu();
  CHECK(recomputed(estimate_from(mlp(true), o)) ==
        std::vector<std::string>{"output of blocks.2.fc1 (recomputed)", "output of blocks.2.gelu (recomputed)"});
  o.graph.torch = find_torch_profile("1.13");
  const std::vector<std::string> whole = {"output of blocks.2.fc1 (recomputed)", "output of blocks.2.gelu (recomputed)",
                                          "output of blocks.2.fc2 (recomputed)", "output of blocks.2.add (recomputed)"};
  CHECK(recomputed(estimate_from(mlp(true), o)) == whole);
  o.graph.torch = &default_torch_profile();
  CHECK(recomputed(estimate_from(mlp(true), with(o, CheckpointSegments::Spec, 0, CheckpointImpl::Reentrant))) == whole);
}

TEST_CASE("under autocast, a recomputation's parameter copies leave autocast's cache as it exits") {
  // Each recomputation re-enters autocast and casts the blocks' weights again; its exit drops
  // them from the cache, so none outlives the step: its blocks of autocast weight copies are all
  // freed by the step's end (they were not, and the CUDA replay refused the step), and the
  // peak is PyTorch's (the resblock networks' autocast runs, test_step.cpp).
  for (const CheckpointImpl impl : {CheckpointImpl::NonReentrant, CheckpointImpl::Reentrant}) {
    CAPTURE(static_cast<int>(impl));
    EstimateOptions o = with(cpu(), CheckpointSegments::Spec, 0, impl);
    o.graph.amp = DType::BFloat16;
    const Estimate e = estimate_from(mlp(true), o);
    std::int64_t copies = 0, recomputed = 0;
    for (const auto& ev : e.timeline)
      if (ev.kind == MemoryKind::WeightCopies) {
        copies += ev.delta;
        if (ev.delta > 0 && ev.phase == Phase::Backward) ++recomputed;
      }
    CHECK(recomputed == 12);  // fc1's and fc2's weights and biases, cast again in each of the three blocks
    CHECK(copies == 0);
    o.graph.device = Device::Cuda;
    CHECK(estimate_from(mlp(true), o).totals.reserved_bytes > 0);
  }
}

TEST_CASE("checkpointing does nothing in evaluation, and frozen entries are left out of a plan") {
  EstimateOptions o = cpu();
  o.graph.mode = Mode::Eval;
  CHECK(estimate_from(mlp(true), o).checkpointed.empty());
  CHECK(estimate_from(mlp(true), o).totals.peak_bytes == estimate_from(mlp(false), o).totals.peak_bytes);
  const Estimate frozen = estimate_file("examples/frozen_backbone.yaml", with(cpu(8), CheckpointSegments::Every, 1));
  for (const std::string& s : frozen.checkpointed) CHECK(s.rfind("backbone", 0) != 0);
}

TEST_CASE("gradient accumulation: one micro-step is a plain step; more keep .grad and step once") {
  const Estimate plain = estimate_from(mlp(false), cpu());
  EstimateOptions o = cpu();
  o.step.grad_accum = 1;
  CHECK(estimate_from(mlp(false), o).totals.peak_bytes == plain.totals.peak_bytes);
  o.step.grad_accum = 5;
  const Estimate five = estimate_from(mlp(false), o);
  // The first, a middle and the last micro-step are simulated, the optimizer only in the last.
  std::vector<std::int64_t> micro;
  for (const auto& ev : five.timeline)
    if (micro.empty() || micro.back() != five.timeline.micro_step(ev)) micro.push_back(five.timeline.micro_step(ev));
  CHECK(micro == std::vector<std::int64_t>{1, 2, 5});
  for (const auto& ev : five.timeline)
    if (ev.phase == Phase::Optimizer) CHECK(five.timeline.micro_step(ev) == 5);
  // After the first, the gradients exist while the next backward runs: the peak is higher,
  // and in a later micro-step.
  CHECK(five.totals.peak_bytes > plain.totals.peak_bytes);
  CHECK(five.totals.peak_micro_step > 1);
  // The loss is divided by K: a wrapped 8-byte scalar that DivBackward0 keeps (saved under
  // 1.13, whose saved_tensors_hooks see it; 2.x's do not).
  CHECK(five.totals.saved_bytes == plain.totals.saved_bytes);
  o.graph.torch = find_torch_profile("1.13");
  EstimateOptions plain_113 = cpu();
  plain_113.graph.torch = o.graph.torch;
  CHECK(estimate_from(mlp(false), o).totals.saved_bytes == estimate_from(mlp(false), plain_113).totals.saved_bytes + 8);
}
