// How long forward()'s Python code holds a tensor beyond its last reader (docs/memory-model.md,
// "Python references"): the spec's references (ModelSpec::references) made into the node after
// which each value's last one ends.
#pragma once

#include <functional>
#include <string>

#include "nnmem/graph.hpp"

namespace nnmem::detail {

/// Sets TensorValue::held_until from graph.spec.references; `value_of` finds a value by name.
void mark_python_references(Graph& graph, const std::function<int(const std::string&)>& value_of);

}  // namespace nnmem::detail
