// Times the CUDA caching allocator's replay alone (replay_cuda_allocator), on the step of a
// spec estimated once: what a change to the allocator model or the replay costs, without the
// load, the graph and the step around it.
//
//   build/bench/bench_replay SPEC [BATCH [RUNS]]    (defaults: the spec's batch, 7 runs)
//
// prints the best and median time of RUNS replays, the iterations they took and the reserved
// peak (which a change to the data structures must not move). Big specs need --max-layers'
// room: up to 2,000,000 layers are read.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../src/memory/step.hpp"
#include "nnmem/estimate.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_replay SPEC [BATCH [RUNS]]\n");
    return 2;
  }
  nnmem::LoadOptions load;
  load.max_layers = 2'000'000;
  nnmem::EstimateOptions options;
  options.step.timeline = false;
  if (argc > 2) options.graph.batch = std::atoi(argv[2]);
  const int runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 7;
  nnmem::detail::StepResult step;
  const nnmem::Estimate e = [&] {
    const nnmem::Graph graph = nnmem::build_graph(nnmem::load_spec_file(argv[1], load), options.graph);
    return nnmem::detail::estimate_with_step(graph, options.step, step);
  }();
  const nnmem::detail::ReplayScript script(std::move(step.replay), step.trace, e.options.step);
  std::vector<double> ms;
  nnmem::CudaAllocatorFigures f;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f = nnmem::detail::replay_cuda_allocator(script, e.timeline.layers, step.trace, step.trace.block_bytes, e.options.step);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s: replay best %.3f ms, median %.3f ms (%d runs, %zu steps, %d iterations, max reserved %lld)\n", argv[1],
              ms.front(), ms[ms.size() / 2], runs, script.steps.size(), f.iterations,
              static_cast<long long>(f.max_reserved_bytes));
  return 0;
}
