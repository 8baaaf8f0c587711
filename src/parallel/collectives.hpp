// Sequence parallelism's collectives as layers of a tensor-parallel rank's spec
// (tensor_parallel.cpp): the scatter into the sequence-parallel region after the layer that
// makes a whole activation, the gather out of it before a layer that needs the whole sequence;
// and the global memory buffer a pipeline stage's ColumnParallelLinear layers gather into
// (pipeline.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nnmem/graph.hpp"
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

/// Megatron's global memory buffer (megatron/core/utils.py, GlobalMemoryBuffer.get_tensor(shape,
/// dtype, "mpu")): every ColumnParallelLinear of a rank all-gathers its sequence shard into one
/// buffer per dtype, forward and backward, allocated as large as the largest gather and kept
/// for good. Marks `stage`'s ColumnParallelLinear layers `global_buffer` (they allocate no gather
/// of their own) and appends the buffer, a non-persistent Buffer layer per dtype sized to the
/// largest of its gathers (their input shapes read from `g`, the graph the stage was cut from).
/// Nothing without sequence parallelism. Modelled.
void add_global_memory_buffer(ModelSpec& stage, const Graph& g);

}  // namespace nnmem
