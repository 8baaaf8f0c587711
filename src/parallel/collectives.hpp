// Sequence parallelism's collectives as layers of a tensor-parallel rank's spec
// (tensor_parallel.cpp): the scatter into the sequence-parallel region after the layer that
// makes a whole activation, the gather out of it before a layer that needs the whole sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nnmem/spec.hpp"

namespace nnmem {

struct Collective {
  std::size_t at = 0;  // the layer a scatter comes after, a gather before
  LayerSpec layer;
};

/// The `sequence_parallel: ranks` attribute value, located at `at`.
Value ranks_value(std::int64_t ranks, const SourceLoc& at);
/// A ScatterToSequenceParallelRegion or GatherFromSequenceParallelRegion of `value` over `ranks`,
/// in `at`'s unit and checkpointed segment, located at it.
LayerSpec collective_layer(const LayerSpec& at, const char* type, std::string name, const std::string& value, std::int64_t ranks);
/// Puts the scatters in after their layers (their readers, and Python's references, read the
/// shard) and the gathers before theirs (that layer reads the whole sequence); both in the
/// layers' order.
void insert_collectives(ModelSpec& spec, std::vector<Collective> scatters, std::vector<Collective> gathers);

}  // namespace nnmem
