// The floor under `nnmem estimate` as a whole process: a C++ program linked as the command line
// is (the nnmem library, yaml-cpp, libstdc++) that does nothing. What a process of nnmem costs
// beyond this is nnmem's own work; bench/vs_torchinfo.sh times both side by side.
//   build/bench/floor             exits 0 at once
#include <cstdio>

#include "nnmem/spec.hpp"

int main(int argc, char** argv) {
  // Never taken: it keeps the library's loader, and so yaml-cpp, linked and loaded as nnmem's is.
  if (argc > 1000) return static_cast<int>(nnmem::parse_spec(argv[1], "floor.yaml").layers.size());
  return std::fflush(stdout);
}
