// A program built against the *installed* nnmem (headers, static library, pkg-config file):
// every layer type must have registered itself despite the static archive, and an example
// must estimate. Built and run by tests/install_consumer.sh.
#include <nnmem/estimate.hpp>
#include <nnmem/report.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const auto types = nnmem::layer_types();
  if (types.size() < 40 || !nnmem::find_layer("Conv2d") || !nnmem::find_layer("Linear")) {
    std::cerr << "only " << types.size() << " layer types registered\n";
    return 1;
  }
  nnmem::EstimateOptions options;
  options.graph.batch = 8;
  const nnmem::Estimate e = nnmem::estimate(nnmem::load_spec_file(argv[1]), options);
  std::cout << types.size() << " layer types; " << e.model << ": " << e.totals.params << " parameters, peak "
            << e.totals.peak_bytes << " bytes\n";
  return e.totals.params == 11689512 ? 0 : 1;
}
