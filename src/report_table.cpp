// The terminal report: a per-layer table in the spirit of torchinfo's summary(), then every
// component of a step's memory on its own line, in bytes and MiB.
#include <sstream>

#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

namespace nnmem {

namespace {

std::string pad(const std::string& s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string shapes(const LayerEstimate& l) {
  std::string s;
  for (std::size_t i = 0; i < l.outputs.size(); ++i) s += (i ? " " : "") + to_string(l.outputs[i].shape);
  return s;
}

class Lines {
 public:
  void row(const std::string& label, std::int64_t bytes, const std::string& note = {}) {
    os_ << "  " << pad(label, 38) << pad(with_commas(bytes), 18, true) << pad(mib_truncated(bytes), 14, true) << " MiB";
    if (!note.empty()) os_ << "   " << note;
    os_ << '\n';
  }
  std::ostringstream& os() { return os_; }

 private:
  std::ostringstream os_;
};

}  // namespace

std::string render_table(const Estimate& e) {
  const bool training = e.mode == Mode::Train;
  const auto& o = e.options;
  Lines out;
  std::ostream& os = out.os();
  os << "Model " << e.model << " (" << e.file << "): batch " << o.graph.batch << ", "
     << (training ? "training" : "inference") << ", " << (o.graph.device == Device::Cuda ? "cuda" : "cpu") << ", "
     << dtype_name(e.float_dtype);
  if (training) os << ", optimizer " << name_of(o.step.optimizer) << ", loss " << name_of(e.loss);
  os << "\n";

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
       << pad(l.params ? with_commas(l.params) + (l.trainable ? "" : "*") : "--", 16, true)
       << pad(l.macs ? human_count(l.macs) : "--", 14, true);
    if (training) os << pad(l.saved_bytes ? human_bytes(l.saved_bytes) : "--", 14, true);
    os << '\n';
  }
  const Totals& t = e.totals;
  os << rule << '\n'
     << "Total params:         " << with_commas(t.params) << '\n'
     << "Trainable params:     " << with_commas(t.trainable_params) << '\n'
     << "Non-trainable params: " << with_commas(t.non_trainable_params)
     << (t.non_trainable_params ? "   (* frozen layer)" : "") << '\n'
     << "Multiply-accumulates: " << with_commas(t.macs) << " (" << human_count(t.macs) << ")\n"
     << rule << '\n'
     << "Memory" << pad("bytes", 52, true) << pad("MiB", 18, true) << '\n';
  out.row("parameters", t.param_bytes);
  out.row("buffers", t.buffer_bytes);
  if (training) {
    out.row("gradients", t.grad_bytes, o.step.keep_grads ? "kept between steps (--keep-grads)" : "");
    out.row("optimizer state (" + std::string(name_of(o.step.optimizer)) + ")", t.optimizer_state_bytes);
    for (const auto& s : e.optimizer_slots) out.row("  " + s.name, s.bytes);
    out.row("weights + optimizer state", checked_add(t.param_bytes, t.optimizer_state_bytes));
  }
  out.row("input", t.input_bytes);
  if (training) out.row("target", t.target_bytes);
  out.row("forward activations (all outputs)", t.activation_bytes);
  if (training) out.row("saved for backward", t.saved_bytes);
  const std::string where = std::string(name_of(t.peak_phase)) + (t.peak_layer.empty() ? "" : ", " + t.peak_layer);
  out.row(training ? "peak of a training step" : "peak of a forward pass", t.peak_bytes, "(" + where + ")");
  if (o.graph.device == Device::Cuda) {
    out.row("CUDA allocator reserve at the peak", t.reserved_bytes, "(segments; a lower bound)");
    out.row("framework overhead (--overhead)", t.overhead_bytes);
    out.row("total on the device", checked_add(t.reserved_bytes, t.overhead_bytes));
  }
  return out.os().str();
}

TorchSummaryFigures torchsummary_figures(const Estimate& e) {
  TorchSummaryFigures f;
  for (const auto& in : e.inputs) f.input_bytes = checked_add(f.input_bytes, checked_mul(in.type.numel(), 4));
  std::int64_t outputs = 0, params = 0;
  for (const auto& l : e.layers) {
    if (l.functional) continue;
    outputs = checked_add(outputs, l.outputs.front().numel());  // torchsummary reads the first output
    params = checked_add(params, l.params);
  }
  f.forward_backward_bytes = checked_mul(checked_mul(outputs, 4), 2);
  f.params_bytes = checked_mul(params, 4);
  f.total_bytes = checked_add(checked_add(f.input_bytes, f.forward_backward_bytes), f.params_bytes);
  return f;
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
    os << pad(l.type + "-" + std::to_string(++index), 25, true) << pad(to_string(s), 25, true)
       << pad(with_commas(l.params), 15, true) << '\n';
  }
  const TorchSummaryFigures f = torchsummary_figures(e);
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
