// The layer graph: a spec with every tensor's shape inferred and checked, for one batch size
// and one execution context. Values are tensors; storages are the memory behind them (an
// in-place op's output and a view share their input's storage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/layer.hpp"
#include "nnmem/spec.hpp"

namespace nnmem {

struct GraphOptions {
  std::int64_t batch = 1;
  Mode mode = Mode::Train;
  Device device = Device::Cuda;
  /// Parameters and floating-point activations; default: the spec's `dtype`, else float32.
  std::optional<DType> float_dtype;
};

struct TensorValue {
  std::string name;            // the producing layer's name, or the model input's name
  TensorType type;
  int producer = -1;           // node index; -1 for a model input
  int storage = -1;            // index into Graph::storages
  bool requires_grad = false;
  std::vector<int> readers;    // nodes that read it, in execution order
};

struct Storage {
  std::int64_t bytes = 0;
  int value = -1;              // the value that allocated it
};

struct Node {
  int layer = -1;              // index into Graph::spec.layers
  const LayerDef* def = nullptr;
  std::vector<int> inputs;     // value indices
  std::vector<int> outputs;    // value indices
  LayerResult result;
  bool trainable = true;
  std::int64_t param_count = 0;
  std::int64_t param_bytes = 0;
  std::int64_t buffer_bytes = 0;
};

struct Graph {
  ModelSpec spec;
  GraphOptions options;
  std::vector<TensorValue> values;
  std::vector<Node> nodes;
  std::vector<Storage> storages;
  std::vector<int> inputs;     // value indices of the model inputs
  std::vector<int> outputs;    // value indices of the model outputs

  const LayerSpec& layer(const Node& node) const { return spec.layers[node.layer]; }
};

/// Infers and checks every layer. Throws nnmem::Error located at the offending layer or
/// attribute: unknown types and attributes, wrong value types, shape mismatches, sizes that
/// overflow, in-place writes over tensors that backward needs, unused inputs and layers.
Graph build_graph(ModelSpec spec, const GraphOptions& options = {});

}  // namespace nnmem
