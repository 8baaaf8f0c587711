// Other tools' estimators, printed as they print them, with the exact bytes behind their figures
// and nnmem's own figure beside them (docs/conventions.md): DeepSpeed's ZeRO-2/3 model states.
#include <cstdio>
#include <sstream>

#include "nnmem/diagnostic.hpp"
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

namespace nnmem {
namespace {

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Bytes with thousands separators, and the fraction the formulas may leave: 19,494,425,395.2.
std::string bytes_of(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  const std::string s = buf;
  const std::size_t dot = s.find('.');
  const std::string tail = s.substr(dot) == ".0" ? "" : s.substr(dot);
  return with_commas(std::stoll(s.substr(0, dot))) + tail;
}

}  // namespace

std::string render_megatron(const TransformerShape& m, const MegatronSetup& s) {
  const MegatronMemory mem = megatron_theoretical_memory(m, s);
  std::ostringstream os;
  os << "Megatron-LM's theoretical memory (megatron/training/theoretical_memory_usage.py) of the most loaded rank, "
        "modelled: tensor and pipeline parallelism need GPUs, nothing here is measured\n"
     << "Shape: hidden " << m.hidden << ", " << m.layers << " layers, " << m.heads << " heads"
     << (m.query_groups > 0 ? " in " + std::to_string(m.query_groups) + " query groups" : "") << ", FFN " << m.ffn_hidden
     << (m.swiglu ? " (SwiGLU)" : "") << ", vocabulary " << m.vocab << ", " << (m.rmsnorm ? "RMSNorm" : "LayerNorm")
     << (m.untied ? ", untied embeddings" : ", tied embeddings") << ": " << with_commas(static_cast<long long>(mem.total_parameters))
     << " parameters\n"
     << "Setup: sequence " << s.seq << ", micro-batch " << s.micro_batch << ", TP " << s.tp << ", PP " << s.pp
     << (s.vpp ? " (interleaved, " + std::to_string(*s.vpp) + " virtual stages)" : "") << ", DP " << s.dp
     << (s.num_microbatches ? ", " + std::to_string(*s.num_microbatches) + " micro-batches" : "")
     << (s.distributed_optimizer ? ", distributed optimizer" : "") << (s.sequence_parallel ? ", sequence parallel" : "")
     << (s.selective_recompute ? ", selective recomputation" : "") << "\n"
     << "Theoretical memory footprints: weight and optimizer=" << fixed2(mem.weight_and_optimizer_mb())
     << " MB, activation=" << fixed2(mem.activation_mb()) << " MB, total="
     << fixed2(mem.weight_and_optimizer_mb() + mem.activation_mb()) << " MB\n"
     << "  (\"MB\" is MiB; bytes: weights and optimizer " << bytes_of(mem.weight_and_optimizer_bytes) << ", activations "
     << bytes_of(mem.activation_bytes) << ", by " << (mem.sequence_parallel_formula ? "Table 2's sequence-parallel formula" : "the formula without sequence parallelism")
     << ")\n\n"
     << "Korthikanti et al.'s activations of one layer, bytes (s·b·h·(34 + 5·a·s/h) and its variants):\n";
  const auto row = [&](const std::string& what, std::int64_t tp, bool sp, Recompute r) {
    os << "  " << report::pad(what, 44) << report::pad(bytes_of(korthikanti_layer_bytes(s.seq, s.micro_batch, m.hidden, m.heads, tp, sp, r)), 22, true)
       << "\n";
  };
  row("no parallelism", 1, false, Recompute::None);
  row("tensor parallel over " + std::to_string(s.tp), s.tp, false, Recompute::None);
  row("tensor and sequence parallel over " + std::to_string(s.tp), s.tp, true, Recompute::None);
  row("tensor parallel, selective recomputation", s.tp, false, Recompute::Selective);
  row("tensor and sequence parallel, selective", s.tp, true, Recompute::Selective);
  row("full recomputation (the layer's input)", s.tp, s.sequence_parallel, Recompute::Full);
  os << "What each term is, and where nnmem's op-by-op figures differ: docs/conventions.md.\n";
  return os.str();
}

}  // namespace nnmem
