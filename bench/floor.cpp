// The floor under `nnmem estimate` as a whole process: a C++ program linked as the command line
// is (the nnmem library, yaml-cpp, libstdc++). What a process of nnmem costs beyond this is
// nnmem's own work; bench/vs_torchinfo.sh times both side by side.
//   build/bench/floor               exits 0 at once
//   build/bench/floor --parse FILE  reads FILE and parses it with yaml-cpp into a plain tree
//                                   (parse_yaml_tree), nothing more: what any process that reads a
//                                   spec with yaml-cpp costs at least
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "nnmem/spec.hpp"
#include "nnmem/yaml_tree.hpp"

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--parse") == 0) {
    std::ifstream in(argv[2], std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return nnmem::parse_yaml_tree(text.str(), argv[2]).kind == nnmem::YamlNode::Kind::Map ? 0 : 1;
  }
  // Never taken: it keeps the library's loader, and so yaml-cpp, linked and loaded as nnmem's is.
  if (argc > 1000) return static_cast<int>(nnmem::parse_spec(argv[1], "floor.yaml").layers.size());
  return std::fflush(stdout);
}
