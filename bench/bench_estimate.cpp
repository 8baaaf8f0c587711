// Times the library on the bundled examples and on a generated deep network:
//   ninja -C build bench/bench_estimate && build/bench/bench_estimate [examples/resnet50.yaml …]
// (the generated residual MLPs are timed only when no spec is named).
// Each spec is loaded, built and estimated (a training step with Adam) repeatedly; the best
// and median wall times of one full pass are printed. Speed is measured here, never asserted
// by a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"
#include "deep_spec.hpp"
#include "nnmem/report.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
void time_it(const std::string& label, int repeats, F&& run) {
  std::vector<double> ms;
  std::size_t sink = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    sink += run();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-34s best %9.3f ms   median %9.3f ms   (%d runs, %zu)\n", label.c_str(), ms.front(), ms[ms.size() / 2],
              repeats, sink % 10);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files(argv + 1, argv + argc);
  const bool named = !files.empty();  // the generated models only when no spec is named
  if (!named) files = {"examples/seed_conv.yaml", "examples/resnet18.yaml", "examples/resnet50.yaml", "examples/vgg16.yaml"};
  nnmem::EstimateOptions options;
  options.graph.batch = 32;
  for (const auto& file : files)
    time_it(file, 50, [&] {
      const nnmem::Estimate e = nnmem::estimate(nnmem::load_spec_file(file), options);
      return e.timeline.size();
    });
  // ResNet-50 by stage: reading the spec, then the graph and the step from a spec already read,
  // with and without the timeline (the command line keeps it only when its output reads it).
  time_it("resnet50: load_spec_file only", 200, [&] { return nnmem::load_spec_file("examples/resnet50.yaml").layers.size(); });
  const nnmem::ModelSpec resnet50 = nnmem::load_spec_file("examples/resnet50.yaml");
  time_it("resnet50: estimate of a read spec", 200, [&] { return nnmem::estimate(resnet50, options).timeline.size(); });
  nnmem::EstimateOptions quiet = options;
  quiet.step.timeline = false;
  time_it("resnet50: the same, no timeline", 200, [&] { return nnmem::estimate(resnet50, quiet).layers.size(); });
  // The CPU device: no caching-allocator replay (CUDA's), so the graph and the step alone.
  nnmem::EstimateOptions cpu = quiet;
  cpu.graph.device = nnmem::Device::Cpu;
  time_it("resnet50: the same, --device cpu", 200, [&] { return nnmem::estimate(resnet50, cpu).layers.size(); });
  time_it("resnet50: load + estimate, no timeline", 200,
          [&] { return nnmem::estimate(nnmem::load_spec_file("examples/resnet50.yaml"), quiet).layers.size(); });
  time_it("examples/resnet50.yaml + JSON", 20, [&] {
    return nnmem::render_json(nnmem::estimate(nnmem::load_spec_file("examples/resnet50.yaml"), options)).size();
  });
  for (int blocks : {1000, 10000}) {
    if (named) break;
    const std::string text = deep_spec(blocks, 1024);
    time_it("generated " + std::to_string(blocks * 4 + 1) + "-layer residual MLP", 5, [&] {
      return nnmem::estimate(nnmem::parse_spec(text, "deep.yaml"), options).timeline.size();
    });
  }
  return 0;
}
