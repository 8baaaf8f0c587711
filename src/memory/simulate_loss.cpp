// The loss of the simulated step: `loss = w1 * l1(out1, t1) + w2 * l2(out2, t2) + …` as one
// Python expression (docs/spec.md, "Losses"), then `/ K` when accumulating. Forward: each term
// in turn (a float32 copy of its output under autocast, what it keeps, its 0-dim loss); a
// weight is a Python number, made a wrapped number (a 0-dim CPU tensor that MulBackward0 keeps;
// nothing on CUDA), the product replacing the term; each `+` adds the next term into a new 0-dim
// sum (AddBackward0 keeps nothing). Backward: the engine runs the loss's nodes before any of the
// model's (they were made last: higher sequence numbers), the last term's first. AddBackward0
// passes its gradient on as it is; MulBackward0 makes a new one.
#include <utility>

#include "step_simulator.hpp"

namespace nnmem::detail {

std::vector<StepSimulator::LossRun> StepSimulator::make_losses(const std::vector<LossTerm>& terms) const {
  std::vector<LossRun> runs;
  if (graph_.options.mode != Mode::Train) return runs;
  for (const LossTerm& t : terms)
    runs.push_back({t, loss_tensors(t.kind, value(t.output).type, t.loc, {}, graph_.options.amp.has_value(), graph_.float_dtype,
                                    t.options, *graph_.options.torch),
                    {}, -1});
  return runs;
}

// The dtype of a term's 0-dim loss (and of its product with a weight: a wrapped number does not
// promote): what the loss ran on, the output or its float32 copy.
DType StepSimulator::term_dtype(const LossRun& run) const { return run.tensors.input(value(run.term.output).type).dtype; }

// The sum's: two 0-dim floating tensors promote to the wider dtype (float16 + bfloat16: float32).
DType StepSimulator::total_dtype() const {
  DType d = term_dtype(losses_.front());
  for (const LossRun& l : losses_) {
    const DType t = term_dtype(l);
    if (dtype_size(t) > dtype_size(d)) d = t;
    else if (dtype_size(t) == dtype_size(d) && t != d) d = DType::Float32;
  }
  return d;
}

// The storage behind the loss the step binds: under gradient accumulation the 0-dim `loss / K`;
// else a single unweighted term's own (mse's holds an output-sized one), else the 0-dim product
// or sum's. (Taking mse's for `loss / K` made the previous step's loss output-sized: the CUDA
// replay, matching it by size, then never freed the 4-byte quotient the step had left, and a
// block a step piled up until it gave up after 1,000 iterations, unconverged.)
std::int64_t StepSimulator::total_bytes() const {
  if (options_.grad_accum > 1) return dtype_size(total_dtype());
  if (losses_.size() == 1 && !losses_.front().term.weight) return losses_.front().tensors.loss_bytes;
  return dtype_size(total_dtype());
}

void StepSimulator::loss_forward() {
  memory_.at(Phase::Forward, "loss");
  const std::int64_t wrapped = graph_.options.device == Device::Cpu ? kWrappedNumberBytes : 0;
  const std::int64_t sum_bytes = dtype_size(total_dtype());  // (once: per term, 20,000 losses took 5 s)
  int total = -1;
  for (LossRun& l : losses_) {
    const LossTensors& t = l.tensors;
    const int input = t.cast ? memory_.alloc(MemoryKind::Activations, t.cast->bytes(), "output as float32", 1)
                             : block_of(l.term.output);
    for (const auto& k : t.kept) l.kept.push_back(memory_.alloc(MemoryKind::Activations, k.bytes(), "kept by the loss", 1));
    if (t.keeps_input) {
      memory_.hold(input);
      l.kept.push_back(input);
    }
    int term = memory_.alloc(MemoryKind::Activations, t.loss_bytes, "loss");
    if (t.cast) memory_.release(input);
    if (l.term.weight) {  // weight * loss: the weight kept, the loss let go
      l.weight = memory_.alloc(MemoryKind::Activations, wrapped, "the loss's weight");
      memory_.release(std::exchange(term, memory_.alloc(MemoryKind::Activations, dtype_size(term_dtype(l)), "weight * loss")));
    }
    if (total < 0) {
      total = term;
      continue;
    }
    const int sum = memory_.alloc(MemoryKind::Activations, sum_bytes, "sum of the losses");
    memory_.release(total);
    memory_.release(term);
    total = sum;
  }
  loss_block_ = total;
  if (options_.grad_accum > 1) {
    // loss / K: K as a wrapped scalar (a CPU tensor, which DivBackward0 keeps), the quotient,
    // and the undivided loss let go.
    divisor_ = memory_.alloc(MemoryKind::Activations, wrapped, "the loss's divisor K");
    const int undivided = std::exchange(loss_block_, memory_.alloc(MemoryKind::Activations, sum_bytes, "loss / K"));
    memory_.release(undivided);
  }
  checkpoint_.release_previous();  // the previous step's graph dies as its loss is let go
  if (previous_loss_ >= 0) memory_.release(previous_loss_);
  if (graph_.options.amp) release_autocast_cache();
}

// The loss's backward, down to the model's outputs' gradients; returns the root gradient
// (ones_like(loss)), which torch.autograd.backward() holds until it returns.
int StepSimulator::loss_backward() {
  memory_.at(Phase::Backward, "loss");
  const std::int64_t scalar = dtype_size(total_dtype());
  const int root = memory_.alloc(MemoryKind::Transients, scalar, "grad of loss");
  // What AddBackward0 hands every term: the same tensor, one reference per term's node.
  const int terms = static_cast<int>(losses_.size());
  int shared = root;
  if (divisor_ >= 0) {  // loss / K: DivBackward0's gradient of the undivided loss, then its divisor let go
    shared = memory_.alloc(MemoryKind::Transients, scalar, "grad of the undivided loss", terms);
    memory_.release(std::exchange(divisor_, -1));
  } else {
    memory_.hold(root, terms);
  }
  for (auto it = losses_.rbegin(); it != losses_.rend(); ++it) {
    LossRun& l = *it;
    const int out = l.term.output;
    const std::int64_t in_bytes = l.tensors.input(value(out).type).bytes();
    int incoming = shared;
    if (l.weight >= 0) {  // MulBackward0: grad * weight, then the weight let go
      incoming = memory_.alloc(MemoryKind::Transients, dtype_size(term_dtype(l)), "grad of the weighted loss");
      memory_.release(shared);
      memory_.release(std::exchange(l.weight, -1));
    }
    int grad_in = -1;
    if (l.term.kind == LossKind::CrossEntropy) {
      // Label smoothing: (1 - ls) * nll + ls / C * smoothed.sum() / count; the two products'
      // scalar gradients, the quotient's (DivBackward0 then lets the count go), then the [N]
      // gradients of the masked fill (which lets the mask go) and the negation, whose sum over the
      // classes reaches the log-probabilities as an expanded view.
      int nll_scale = -1, smoothed = -1;
      if (l.tensors.smoothed) {
        const std::int64_t n = l.tensors.smoothed->bytes(), term_scalar = dtype_size(term_dtype(l));
        const int smooth_scale = memory_.alloc(MemoryKind::Transients, term_scalar, "grad of the smoothed term");
        nll_scale = memory_.alloc(MemoryKind::Transients, term_scalar, "grad of the nll term");
        const int mean = memory_.alloc(MemoryKind::Transients, term_scalar, "grad of the smoothed sum");
        memory_.release(l.kept[2]);  // 2.x: the count (1.13: the smoothed loss)
        memory_.release(smooth_scale);
        const int masked = memory_.alloc(MemoryKind::Transients, n, "grad of the masked smoothed loss");
        for (std::size_t k = 3; k < l.kept.size(); ++k) memory_.release(l.kept[k]);  // the mask (1.13: and ~mask)
        memory_.release(mean);
        smoothed = memory_.alloc(MemoryKind::Transients, n, "grad of the smoothed loss");
        memory_.release(masked);
      }
      // NllLossBackward0, then LogSoftmaxBackward0; each frees what it kept once it has run.
      int grad_logp = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of log_softmax");
      memory_.release(l.kept[1]);  // total_weight
      if (nll_scale >= 0) memory_.release(nll_scale);
      memory_.release(incoming);
      if (smoothed >= 0) {  // the expanded view and nll's gradient summed into a new tensor
        const int sum = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of log_softmax (summed)");
        memory_.release(smoothed);
        memory_.release(std::exchange(grad_logp, sum));
      }
      grad_in = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of output");
      memory_.release(grad_logp);
      memory_.release(l.kept[0]);  // log-probabilities
    } else {
      std::vector<int> scratch;
      for (const TensorType& t : l.tensors.backward_scratch)
        scratch.push_back(memory_.alloc(MemoryKind::Transients, t.bytes(), "loss backward temporary"));
      grad_in = memory_.alloc(MemoryKind::Transients, in_bytes, "grad of output");
      memory_.release(incoming);
      for (int b : scratch) memory_.release(b);
      for (int b : l.kept) memory_.release(b);
    }
    l.kept.clear();
    if (l.tensors.cast) grad_in = cast_back(grad_in, value(out).type.bytes(), "grad of output");
    accumulate(out, grad_in);
  }
  return root;
}

}  // namespace nnmem::detail
