// PyTorch's inference fast paths for blocks that name their module class (`class:` on a block,
// ModelSpec::classed_blocks): which block instances run as one fused op (Node::fused).
#pragma once

#include "nnmem/graph.hpp"

namespace nnmem::detail {

/// Checks each classed block (a known class, the members its forward reads) and, in
/// evaluation, marks the nodes of the instances PyTorch would run as one fused op. Throws a
/// located Error for an unknown class or a missing member.
void mark_fast_paths(Graph& graph);

}  // namespace nnmem::detail
