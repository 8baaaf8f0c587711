// What `fit` compares at each batch of bench_fit's model, and what a check costs: for every
// batch in [FROM, TO], the figure what the device holds (the CUDA allocator replayed in full,
// BatchCurve::needed), the two monotone lower bounds fit searches on (the peak of live
// tensors, the peak of rounded blocks), and the CPU time of the replay in full and of one that
// gives up above the budget, as fit's check of a batch above its answer does:
//   ninja -C build bench/fit_figures && build/bench/fit_figures [BLOCKS FROM TO [BUDGET_GIB]]
// (defaults: 25,000 blocks, batches 505 to 604, 80 GiB; the lines go to stdout as they come).
#include <cstdio>
#include <ctime>
#include <string>

#include "../src/memory/batch_curve.hpp"
#include "deep_spec.hpp"

namespace {

double cpu_ms(std::clock_t since) { return 1000.0 * static_cast<double>(std::clock() - since) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 4 && argc != 5) return std::fprintf(stderr, "usage: fit_figures [BLOCKS FROM TO [BUDGET_GIB]]\n"), 2;
  const int blocks = argc > 1 ? std::stoi(argv[1]) : 25000;
  const long long from = argc > 1 ? std::stoll(argv[2]) : 505, to = argc > 1 ? std::stoll(argv[3]) : 604;
  const std::int64_t budget = (argc > 4 ? std::stoll(argv[4]) : 80) << 30;
  nnmem::LoadOptions load;
  load.max_layers = 2'000'000;
  const nnmem::ModelSpec spec = nnmem::parse_spec(deep_spec(blocks, 256), "deep.yaml", load);
  nnmem::EstimateOptions options;  // CUDA, Adam: bench_fit's
  nnmem::GraphOptions graph = options.graph;
  graph.batch = 1;
  const auto curve = nnmem::BatchCurve::probe(nnmem::build_graph(spec, graph), options.step);
  if (!curve) return std::fprintf(stderr, "the model has no batch curve\n"), 1;
  std::printf("budget %lld bytes (with the overhead of %lld)\n", static_cast<long long>(budget),
              static_cast<long long>(options.step.overhead_bytes));
  std::printf("batch,needed_bytes,fits,peak_bytes,rounded_peak_bytes,full_replay_cpu_ms,checking_replay_cpu_ms\n");
  for (long long b = from; b <= to; ++b) {
    std::clock_t start = std::clock();
    const auto full = curve->needed(b);
    const double full_ms = cpu_ms(start);
    start = std::clock();
    const auto checked = curve->needed(b, budget - options.step.overhead_bytes);
    const double checked_ms = cpu_ms(start);
    if (!full || !checked) return std::fprintf(stderr, "batch %lld: a size overflows\n", b), 1;
    std::printf("%lld,%lld,%d,%lld,%lld,%.1f,%.1f\n", b, static_cast<long long>(full->bytes), full->fits(budget) ? 1 : 0,
                static_cast<long long>(curve->peak_bytes(b).value_or(-1)),
                static_cast<long long>(curve->rounded_peak_bytes(b).value_or(-1)), full_ms, checked_ms);
    std::fflush(stdout);
  }
  return 0;
}
