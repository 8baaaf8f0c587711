// The layer graph: a spec with every tensor's shape inferred and checked, for one batch size
// and one execution context. Values are tensors; storages are the memory behind them (an
// in-place op's output and a view share their input's storage).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/layer.hpp"
#include "nnmem/small_vector.hpp"
#include "nnmem/spec.hpp"

namespace nnmem {

struct GraphOptions {
  std::int64_t batch = 1;
  Mode mode = Mode::Train;
  Device device = Device::Cuda;
  /// Parameters and floating-point activations; default: the spec's `dtype`, else float32.
  std::optional<DType> float_dtype = std::nullopt;
  /// Mixed precision, as torch.autocast runs the forward pass and loss: ops on autocast's
  /// lower-precision list (convolutions, linear) cast their inputs and parameters to this dtype,
  /// ops on its float32 list cast theirs to float32; parameters stay in float_dtype.
  std::optional<DType> amp = std::nullopt;
  /// The PyTorch version whose behaviour is modelled (never null).
  const TorchProfile* torch = &default_torch_profile();
};

/// A node's per-input, per-output and per-parameter lists, a value's readers: almost every
/// layer and value has one or two of each, held inline (no allocation; bench/README.md,
/// "Small vectors inline").
using NodeIndices = SmallVector<int, 2>;

struct TensorValue {
  std::string name;            // the producing layer's name, or the model input's name
  TensorType type;
  int producer = -1;           // node index; -1 for a model input
  int storage = -1;            // index into Graph::storages
  NodeIndices readers;         // nodes that read it, in execution order
  int copy_of = -1;            // autocast: the value this is a cast copy of
  /// The node after which forward()'s Python code stops referring to it (a caller holding a
  /// block's argument, a variable, a function's argument: ModelSpec::references), when that may
  /// be after its last reader; -1: none (src/graph/references.hpp).
  int held_until = -1;
  // (the one-byte members together, after the others: no padding between them)
  bool requires_grad = false;
  /// The op's own conversion of an input (F.softmax's dtype=, LayerDef::own_dtype) that the op
  /// does not keep: made and let go inside its one call, its workspace, which is not counted
  /// (as validation/memtrace.py leaves out what an aten:: op frees before it returns).
  bool op_workspace = false;
  bool param_copy = false;     // autocast: a parameter's low-precision copy
  bool cached = false;         // autocast keeps it until the forward pass and loss are done
  bool strided = false;        // a non-contiguous view of its storage (LayerResult::output_strided)
  Layout layout = Layout::Contiguous;
};

/// A parameter tensor, once however many layers use it: a module called again (`share`) or a
/// tied weight (`tie`) adds a use, not a tensor; its gradient contributions are summed.
/// Its name ("wte.weight") is its owner's and its rule's: Graph::param_name; so is its shape
/// (Graph::param_shape). It holds the sizes the step reads: 40 bytes, not a shape of its own (a
/// 100,000-layer model has 200,000 of these).
struct Parameter {
  std::int64_t numel = 0;        // its elements
  std::int64_t dim0 = 0;         // its first dimension's size (sharded along; 0: a 0-D tensor)
  std::int64_t sparse_rows = 0;  // > 0: a sparse gradient of this many rows (ParamDecl::sparse_rows)
  int owner = -1;              // the node that declared it
  int decl = -1;               // its index in the owner's LayerResult::params
  int uses = 0;                // nodes that use it
  DType dtype = DType::Float32;  // the model's float dtype
  bool trainable = true;       // the owner is not frozen

  /// Its bytes (numel times the dtype's size; the build checked that they fit).
  std::int64_t bytes() const;
  /// The bytes of its .grad's storages: its own size, or a sparse gradient's int64 indices and values.
  std::int64_t grad_bytes() const;
};

struct Storage {
  std::int64_t bytes = 0;
  int value = -1;              // the value that allocated it
};

/// Inference only: whether a layer runs inside one fused op of a PyTorch fast path (a block of
/// `class: TransformerEncoderLayer`, src/graph/fast_path.cpp), whose intermediate tensors are
/// its workspace: neither the outputs nor the scratch of the layers Inside it are allocated,
/// and of the layer that makes its Output only that output.
enum class Fused : std::uint8_t { No, Inside, Output };

struct Node {
  // (the small members first, together: 8 bytes, not three padded to 8 each)
  int layer = -1;              // index into Graph::spec.layers
  bool trainable = true;
  Fused fused = Fused::No;
  const LayerDef* def = nullptr;
  NodeIndices inputs;          // value indices
  NodeIndices outputs;         // value indices
  /// What its rule gave; layers whose rules gave equal results share one (a repeated block's
  /// instances), so a result is never changed after the graph is built.
  std::shared_ptr<const LayerResult> result;
  std::int64_t param_count = 0;  // the parameters it declares (not those it shares or ties)
  std::int64_t param_bytes = 0;
  std::int64_t buffer_bytes = 0;  // 0 for a module called again
  NodeIndices input_casts;     // per input: the autocast copy the layer reads instead, or -1
  NodeIndices param_casts;     // per parameter: its autocast copy, or -1
  NodeIndices params;          // per parameter: its index in Graph::parameters

  /// The value the layer reads as input i: its autocast copy, if it has one.
  int read(std::size_t i) const { return input_casts[i] >= 0 ? input_casts[i] : inputs[i]; }
  /// The value a kept tensor is: the (copy of the) input, the output, the parameter's copy;
  /// -1 for Extra tensors and for parameters kept in full precision (they cost nothing extra).
  int saved_value(const Saved& s) const {
    const auto i = static_cast<std::size_t>(s.index);
    switch (s.of) {
      case Saved::Of::Input: return read(i);
      case Saved::Of::Output: return outputs[i];
      case Saved::Of::Param: return param_casts[i];
      case Saved::Of::Extra: break;
    }
    return -1;
  }
};

struct Graph {
  ModelSpec spec;
  GraphOptions options;
  DType float_dtype = DType::Float32;  // resolved: --dtype, else the spec's, else float32
  std::vector<TensorValue> values;
  std::vector<Node> nodes;
  std::vector<Storage> storages;
  std::vector<Parameter> parameters;  // every parameter tensor once, in model.parameters()' order
  std::vector<int> inputs;     // value indices of the model inputs
  std::vector<int> outputs;    // value indices of the model outputs

  const LayerSpec& layer(const Node& node) const { return spec.layers[node.layer]; }
  const Node& owner(const Parameter& p) const { return nodes[static_cast<std::size_t>(p.owner)]; }
  /// The name its owner's rule gives a parameter: "weight", MultiheadAttention's "out_proj.weight".
  const std::string& param_own_name(const Parameter& p) const;
  /// A parameter's name, "wte.weight": its owner's name, a dot, its own (made when asked: a
  /// deep model's names were 6 MB of the graph).
  std::string param_name(const Parameter& p) const;
  /// Its shape, as its owner's rule declared it.
  const Shape& param_shape(const Parameter& p) const;
};

/// Infers and checks every layer. Throws nnmem::Error located at the offending layer or
/// attribute: unknown types and attributes, wrong value types, shape mismatches, sizes that
/// overflow, in-place writes over tensors that backward needs, unused inputs and layers.
Graph build_graph(ModelSpec spec, const GraphOptions& options = {});

}  // namespace nnmem
