// Other tools' estimators, printed as they print them, with the exact bytes behind their figures
// and nnmem's own figure beside them (docs/conventions.md): DeepSpeed's ZeRO-2/3 model states.
#include <cstdio>
#include <sstream>

#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {
namespace {

std::string gib(std::int64_t bytes, int width) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%*.2fGB", width, static_cast<double>(bytes) / (1 << 30));
  return buf;
}

// DeepSpeed's header: int(total_params / 1e6) "M".
std::string millions(std::int64_t n) { return std::to_string(static_cast<std::int64_t>(static_cast<double>(n) / 1e6)) + "M"; }

}  // namespace

std::string render_deepspeed(const Estimate& e, const DeepSpeedConvention& c) {
  std::ostringstream os;
  const std::string hw = "HW: Setup with " + std::to_string(c.nodes) + (c.nodes > 1 ? " nodes, " : " node, ") +
                         std::to_string(c.gpus_per_node) + (c.gpus_per_node > 1 ? " GPUs" : " GPU") + " per node.\n";
  for (int stage : {2, 3}) {
    os << "ZeRO-" << stage << " (DeepSpeed's estimate_zero" << stage << "_model_states_mem_needs_all_live):\n"
       << "Estimated memory needed for params, optim states and gradients for a:\n"
       << hw << "SW: Model with " << millions(c.total_params) << " total params"
       << (stage == 3 ? ", " + millions(c.largest_layer_params) + " largest layer params." : ".") << "\n"
       << "  per CPU  |  per GPU |   Options\n";
    for (const DeepSpeedFigure& f : c.figures)
      if (f.stage == stage) os << " " << gib(f.cpu_bytes, 7) << " | " << gib(f.gpu_bytes, 6) << " | " << f.options() << "\n";
    os << "\n";
  }
  os << "Exact, in bytes (\"GB\" above is GiB, 2^30 bytes):\n";
  for (const DeepSpeedFigure& f : c.figures)
    os << "  ZeRO-" << f.stage << "  per CPU " << report::pad(with_commas(f.cpu_bytes), 20, true) << "  per GPU "
       << report::pad(with_commas(f.gpu_bytes), 18, true) << "  " << f.options() << "\n";
  os << "DeepSpeed counts model states only, with fixed bytes per parameter (" << with_commas(c.total_params)
     << " parameters; docs/conventions.md).\n"
     << "nnmem's own estimate of this step" << (e.options.step.parallel.strategy.empty() ? "" : ", one rank (" + e.options.step.parallel.strategy + ")")
     << ": peak " << human_bytes_exact(e.totals.peak_bytes) << "\n";
  return os.str();
}

}  // namespace nnmem
