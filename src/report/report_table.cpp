// The terminal report: a per-layer table in the spirit of torchinfo's summary(), then every
// component of a step's memory on its own line, in bytes and MiB.
#include <algorithm>
#include <sstream>
#include <vector>

#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

namespace nnmem {

namespace {

std::string pad(const std::string& s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// A right-aligned column: at least one space before it, so that a value wider than its
// column (a huge model's bytes) cannot run into the column before.
std::string column(const std::string& s, std::size_t width) { return pad(s.size() >= width ? " " + s : s, width, true); }

std::string shapes(const LayerEstimate& l) {
  std::string s;
  for (std::size_t i = 0; i < l.outputs.size(); ++i) {
    if (i) s += ' ';
    s += to_string(l.outputs[i].shape);
  }
  return s;
}

// The memory breakdown: one row per component, in bytes and MiB. Rows are collected first so
// that the columns can widen for a huge model instead of running together.
class MemoryRows {
 public:
  void row(std::string label, std::int64_t bytes, std::string note = {}) {
    rows_.push_back({std::move(label), with_commas(bytes), mib_truncated(bytes), std::move(note)});
  }

  void render(std::ostream& os) const {
    std::size_t bytes_width = 18, mib_width = 14;
    for (const auto& r : rows_) {
      bytes_width = std::max(bytes_width, r.bytes.size() + 2);
      mib_width = std::max(mib_width, r.mib.size() + 2);
    }
    os << "Memory" << pad("bytes", 34 + bytes_width, true) << pad("MiB", mib_width + 4, true) << '\n';
    for (const auto& r : rows_) {
      os << "  " << pad(r.label, 38) << column(r.bytes, bytes_width) << column(r.mib, mib_width) << " MiB";
      if (!r.note.empty()) os << "   " << r.note;
      os << '\n';
    }
  }

 private:
  struct Row {
    std::string label, bytes, mib, note;
  };
  std::vector<Row> rows_;
};

// What PyTorch's CUDA caching allocator does over the loop, by simulation (no GPU measured it).
void cuda_rows(MemoryRows& out, const CudaAllocatorFigures& f, const Totals& t) {
  const std::string run = f.growing     ? "still growing after " + with_commas(f.iterations) +
                                             " iterations: the cache never settles with these settings, see --device-memory"
                         : !f.converged ? "still changing after " + with_commas(f.iterations) + " iterations"
                         : "steady from iteration " + std::to_string(f.steady_from) +
                               (f.period == 1 ? "" : ", in a cycle of " + std::to_string(f.period));
  out.row("CUDA max_memory_allocated(), modelled", t.max_allocated_bytes, "(blocks in use at once, rounded)");
  const auto times = [](std::int64_t n) { return with_commas(n) + (n == 1 ? " time" : " times"); };
  const std::string retries =
      f.alloc_retries == 0 ? ""
                           : "; the cache released " + times(f.alloc_retries) + " to retry" +
                                 (f.converged && f.steady_alloc_retries > 0
                                      ? ", " + times(f.steady_alloc_retries) + " in every cycle"
                                      : "");
  out.row("CUDA max_memory_reserved(), modelled", t.reserved_bytes,
          "(" + with_commas(f.segments) + (f.segments == 1 ? " segment" : " segments") +
              (f.out_of_memory ? "" : "; " + run) + retries + ")");
  if (f.out_of_memory) {
    const std::string when = f.oom_iteration == 0 ? "building the model" : "iteration " + std::to_string(f.oom_iteration);
    out.row("CUDA out of memory, modelled", f.oom_request_bytes,
            "(the request that failed: " + when + ", " + std::string(name_of(f.oom_phase)) +
                (f.oom_layer.empty() ? "" : ", " + f.oom_layer) + ")");
  }
  out.row("framework overhead (--overhead)", t.overhead_bytes);
  out.row("total on the device", t.device_bytes);
}

}  // namespace

std::string render_table(const Estimate& e) {
  const bool training = e.mode == Mode::Train;
  const auto& o = e.options;
  std::ostringstream os;
  os << "Model " << e.model << " (" << e.file << "): batch " << o.graph.batch << ", "
     << (training ? "training" : "inference") << ", " << (o.graph.device == Device::Cuda ? "cuda" : "cpu") << ", "
     << dtype_name(e.float_dtype) << (o.graph.amp ? " with " + std::string(dtype_name(*o.graph.amp)) + " autocast" : "");
  if (training) os << ", optimizer " << name_of(o.step.optimizer) << ", loss " << name_of(e.loss);
  if (training && o.step.loop == Loop::Function) os << ", each step a function returning loss.item()";
  if (!e.checkpointed.empty())
    os << ", " << e.checkpointed.size() << " checkpointed segment" << (e.checkpointed.size() == 1 ? "" : "s") << " ("
       << name_of(o.step.checkpoint.impl) << ")";
  if (training && o.step.grad_accum > 1) os << ", accumulating gradients over " << o.step.grad_accum << " micro-steps";
  os << ", PyTorch " << o.graph.torch->version << "\n";

  std::size_t name_width = 24, shape_width = 18;
  for (const auto& l : e.layers) {
    name_width = std::max(name_width, l.name.size() + l.type.size() + 3);
    shape_width = std::max(shape_width, shapes(l).size());
  }
  name_width = std::min<std::size_t>(name_width, 60);
  const std::string rule(name_width + shape_width + 16 + 14 + (training ? 14 : 0) + 4, '-');
  os << rule << '\n'
     << pad("Layer (type)", name_width) << "  " << pad("Output shape", shape_width) << pad("Params", 16, true)
     << pad("MACs", 14, true) << (training ? pad("Saved", 14, true) : "") << '\n'
     << rule << '\n';
  for (const auto& l : e.layers) {
    os << pad(l.name + " (" + l.type + ")", name_width) << "  " << pad(shapes(l), shape_width)
       << column(l.params ? with_commas(l.params) + (l.trainable ? "" : "*") : "--", 16)
       << column(l.macs ? human_count(l.macs) : "--", 14);
    if (training) os << column(l.saved_bytes ? human_bytes(l.saved_bytes) : "--", 14);
    os << '\n';
  }
  const Totals& t = e.totals;
  os << rule << '\n'
     << "Total params:         " << with_commas(t.params) << '\n'
     << "Trainable params:     " << with_commas(t.trainable_params) << '\n'
     << "Non-trainable params: " << with_commas(t.non_trainable_params)
     << (t.non_trainable_params ? "   (* frozen layer)" : "") << '\n'
     << "Multiply-accumulates: " << with_commas(t.macs) << " (" << human_count(t.macs) << ")\n"
     << rule << '\n';
  MemoryRows out;
  out.row("parameters", t.param_bytes);
  out.row("buffers", t.buffer_bytes);
  if (training) {
    out.row("gradients", t.grad_bytes, o.step.keep_grads ? "kept between steps (--keep-grads)" : "");
    out.row("optimizer state (" + std::string(name_of(o.step.optimizer)) + ")", t.optimizer_state_bytes);
    for (const auto& s : e.optimizer_slots) out.row("  " + s.name, s.bytes);
    // Cannot overflow: estimate() checked the larger persistent_bytes, which includes both.
    out.row("weights + optimizer state", t.param_bytes + t.optimizer_state_bytes);
  }
  out.row("input", t.input_bytes);
  if (training) out.row("target", t.target_bytes);
  out.row("forward activations (all outputs)", t.activation_bytes);
  if (training) {
    out.row("saved for backward", t.saved_bytes);
    out.row("backward transients (most at once)", t.backward_transient_bytes, "activation gradients in flight");
  }
  const std::string where = std::string(name_of(t.peak_phase)) + (t.peak_layer.empty() ? "" : ", " + t.peak_layer) +
                            (o.step.grad_accum > 1 ? ", micro-step " + std::to_string(t.peak_micro_step) + " of " +
                                                         std::to_string(o.step.grad_accum)
                                                   : "");
  out.row(training ? "peak of a training step" : "peak of a forward pass", t.peak_bytes, "(" + where + ")");
  // What the peak is made of: every kind that has a byte there.
  static const char* const labels[kMemoryKinds] = {"parameters",  "buffers",     "optimizer state",
                                                   "gradients",   "input + target", "activations kept",
                                                   "autocast weight copies", "gradients of activations, temporaries"};
  for (std::size_t k = 0; k < kMemoryKinds; ++k)
    if (t.peak_breakdown[k] > 0) out.row(std::string("  ") + labels[k], t.peak_breakdown[k]);
  if (e.cuda_allocator) cuda_rows(out, *e.cuda_allocator, t);

  out.render(os);
  return os.str();
}

std::string render_torchsummary(const Estimate& e) {
  std::ostringstream os;
  const std::string rule(64, '-');
  os << rule << '\n' << pad("Layer (type)", 25, true) << pad("Output Shape", 25, true) << pad("Param #", 15, true) << '\n';
  os << std::string(64, '=') << '\n';
  int index = 0;
  for (const auto& l : e.layers) {
    if (l.functional) continue;
    Shape s = l.outputs.front().shape;
    os << column(l.type + "-" + std::to_string(++index), 25) << column(to_string(s), 25)
       << column(with_commas(l.params), 15) << '\n';
  }
  const TorchSummaryFigures& f = e.torchsummary;
  os << std::string(64, '=') << '\n'
     << "Input size (MB): " << mib(f.input_bytes) << '\n'
     << "Forward/backward pass size (MB): " << mib(f.forward_backward_bytes) << '\n'
     << "Params size (MB): " << mib(f.params_bytes) << '\n'
     << "Estimated Total Size (MB): " << mib(f.total_bytes) << '\n'
     << rule << '\n'
     << "Exact, in bytes (\"MB\" above is MiB, 2^20 bytes):\n"
     << "  input               " << pad(with_commas(f.input_bytes), 18, true) << "  = " << exact_mib(f.input_bytes) << " MiB\n"
     << "  forward/backward    " << pad(with_commas(f.forward_backward_bytes), 18, true) << "  = "
     << exact_mib(f.forward_backward_bytes) << " MiB\n"
     << "  params              " << pad(with_commas(f.params_bytes), 18, true) << "  = " << exact_mib(f.params_bytes) << " MiB\n"
     << "  estimated total     " << pad(with_commas(f.total_bytes), 18, true) << "  = " << exact_mib(f.total_bytes) << " MiB\n"
     << "torchsummary's convention counts every module output twice (\"values and gradients\") at 4 bytes;\n"
     << "what PyTorch really keeps differs (see docs/conventions.md). nnmem's own estimate of this step:\n"
     << "  saved for backward  " << pad(with_commas(e.totals.saved_bytes), 18, true) << '\n'
     << "  peak of the step    " << pad(with_commas(e.totals.peak_bytes), 18, true) << '\n';
  return os.str();
}

}  // namespace nnmem
