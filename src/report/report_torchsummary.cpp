// torchsummary's convention: its layer list and four figures, with the exact bytes behind its
// "MB" and how they differ from what nnmem estimates (docs/conventions.md).
#include <sstream>

#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {

namespace {
using report::pad;

// A right-aligned column: at least one space before it, so that a value wider than its column
// (a huge model's bytes) cannot run into the column before.
std::string column(const std::string& s, std::size_t width) { return pad(s.size() >= width ? " " + s : s, width, true); }
}  // namespace

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
