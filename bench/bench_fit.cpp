// Times `fit` on a 100,000-layer model: the generated residual MLP of bench_estimate, 25,000
// blocks of 4 layers and a head (100,001 layers), width 256, training with Adam on CUDA, fitted
// to an 80 GiB budget. Load and fit are timed apart, as wall time and as this process's CPU
// time (the machine is shared):
//   ninja -C build bench/bench_fit && build/bench/bench_fit [cpu] [threads=N]
// (`cpu`: the same fit on the CPU device, whose compared figure is the peak, with no allocator replay;
// `threads=N`: fit checks N batches at once, FitOptions::threads; by default one per core. The CPU
// time is the whole process's, every thread's.)
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include "deep_spec.hpp"
#include "nnmem/plan.hpp"

namespace {

struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  void print(const char* what) const {
    std::printf("%-36s wall %8.1f ms   cpu %8.1f ms\n", what,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count(),
                1000.0 * static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string text = deep_spec(25000, 256);
  nnmem::LoadOptions load;
  load.max_layers = 200000;
  nnmem::EstimateOptions options;
  nnmem::FitOptions fit;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "cpu") options.graph.device = nnmem::Device::Cpu;
    else if (arg.starts_with("threads=")) fit.threads = static_cast<unsigned>(std::stoul(arg.substr(8)));
    else return std::fprintf(stderr, "usage: bench_fit [cpu] [threads=N]\n"), 2;
  }
  fit.budget_bytes = std::int64_t{80} << 30;
  fit.with_estimate = false;
  for (int run = 0; run < 3; ++run) {
    const Clock total;
    const nnmem::ModelSpec spec = nnmem::parse_spec(text, "deep.yaml", load);
    total.print("load (100,001 layers)");
    const Clock searching;
    const nnmem::BatchFit f = nnmem::fit_batch(spec, options, fit);
    searching.print("fit_batch");
    total.print("load + fit_batch");
    std::printf("  batch %lld, %d graphs, %d estimates, %d batches checked (bound %lld)\n\n", static_cast<long long>(f.batch),
                f.graphs_built, f.estimates_made, f.batches_checked, static_cast<long long>(f.bound_batch));
  }
  return 0;
}
