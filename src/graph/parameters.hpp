// A layer's parameters in the graph: each tensor once, however many layers use it. A layer
// declares its own, calls another layer's module again (`share: NAME`: the same parameters and
// buffers, counted once, as `sum(p.numel() for p in model.parameters())` counts them), or ties
// one of its parameters to another layer's (`tie: {weight: wte.weight}`, GPT-2's LM head).
#pragma once

#include <string>
#include <vector>
#include "nnmem/graph.hpp"
#include "value_names.hpp"

namespace nnmem::detail {

/// Fills node.params (indices into graph.parameters, adding the tensors the layer declares),
/// node.param_count/param_bytes (its own tensors only) and node.buffer_bytes (0 when it shares
/// a module). `values` finds a model input or an earlier layer's output by name (a layer's first
/// output is named by the layer's qualified name). Throws Error located
/// at the spec for a share or tie that names no layer or parameter, or whose shapes differ, and
/// SizeError for counts beyond 64 bits.
void assign_parameters(Graph& graph, Node& node, int node_index, const ValueNames& values,
                       DType float_dtype);

/// Puts graph.parameters in model.parameters()' order, which the optimizer's loop follows: the
/// module tree (from the qualified names) in pre-order, a module's own tensors before its
/// children's, siblings in registration order (ModelSpec::registrations, else the order forward
/// first reaches them). Remaps node.params.
void order_parameters(Graph& graph);

}  // namespace nnmem::detail
