// What an estimate lets go of before it is done, and when the freed pages are handed back to the
// system (step.hpp): on a deep model, what stays resident decides the process's peak.
#include "step.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace nnmem::detail {

void return_free_pages(std::size_t bytes) {
#if defined(__GLIBC__)
  if (bytes >= (std::size_t{1} << 20)) malloc_trim(0);
#else
  (void)bytes;
#endif
}

void let_go_of_build_inputs(Graph& graph) {
  std::size_t bytes = graph.spec.references.capacity() * sizeof(Reference);
  std::vector<Reference>().swap(graph.spec.references);  // marked on the values (held_until)
  for (LayerSpec& l : graph.spec.layers) {
    bytes += l.attrs.capacity() * sizeof(Attribute) + l.inputs.capacity() * sizeof(std::string) +
             l.input_locs.capacity() * sizeof(SourceLoc);
    std::vector<Attribute>().swap(l.attrs);
    std::vector<std::string>().swap(l.inputs);
    std::vector<SourceLoc>().swap(l.input_locs);
  }
  // Small blocks all over the heap, which the step's records only partly reuse: their pages are
  // handed back, else the build's resident peak is the simulation's floor (bench/README.md,
  // "Reserved, trimmed and walked").
  return_free_pages(bytes);
}

}  // namespace nnmem::detail
