#include "references.hpp"

#include <algorithm>

namespace nnmem::detail {

void mark_python_references(Graph& graph, const std::function<int(const std::string&)>& value_of) {
  for (const Reference& r : graph.spec.references) {
    TensorValue& value = graph.values[static_cast<std::size_t>(value_of(r.value))];
    const int until = static_cast<int>(r.until);
    if (until > value.producer) value.held_until = std::max(value.held_until, until);
  }
}

}  // namespace nnmem::detail
