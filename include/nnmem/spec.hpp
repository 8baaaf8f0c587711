// The model spec: what a YAML file says, after blocks, `repeat` and variables are expanded.
// Every element keeps its source position so that later stages can report located errors.
// The format is documented in docs/spec.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nnmem/diagnostic.hpp"
#include "nnmem/rare.hpp"
#include "nnmem/shape.hpp"

namespace nnmem {

/// An attribute value as written (after `$expression` substitution): a scalar, a list (whose
/// items may be lists) or a mapping. The layer's schema decides later whether it has the right
/// type, so that the error can say what was expected; no schema accepts a mapping or a nested
/// list, but they are kept (a mapping without its contents) to be described in that error.
struct Value {
  enum class Kind { Null, Bool, Int, Float, String, List, Map };

  Kind kind = Kind::Null;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0.0;
  std::string text;           // String
  std::vector<Value> items;   // List
  SourceLoc loc;

  /// For messages: "the integer 3", "the string 'same'", "the list [3, 1]" ("a list of 1000 values"
  /// when long), "a mapping", …
  std::string describe() const;
  /// As a person would write it: 3, 1e-05, nan, true, same, [3, 1], {…}.
  std::string str() const;
};

/// Reads a plain (unquoted) scalar as YAML's core schema does: null, true/false, an integer,
/// a real, or else a string. Throws Error at `loc` for an integer that does not fit in 64 bits.
Value parse_literal(const std::string& text, const SourceLoc& loc);

struct Attribute {
  std::string name;
  Value value;
  SourceLoc key_loc;
};

/// `tie: {weight: wte.weight}`: the layer's parameter `param` is another layer's parameter.
struct ParamTie {
  std::string param;                 // the tying layer's own parameter name
  std::string layer;                 // the qualified name of the layer that owns the tensor
  std::string target;                // that layer's parameter name
  SourceLoc loc;
};

/// What few layers have: a module called again, tied parameters, a checkpointed segment. Held
/// apart from the LayerSpec (LayerSpec::links()), so that a layer with none of it costs a pointer.
struct LayerLinks {
  std::string shares;                // `share: NAME`: calls the module of that (qualified) layer again
  SourceLoc shares_loc;
  std::vector<ParamTie> ties;
  /// Activation checkpointing (`checkpoint: true`): the entry that asked for it — this layer, or
  /// the block instance it belongs to ("layer1.0"); its layers form one checkpointed segment.
  std::string checkpoint;
  SourceLoc checkpoint_loc;          // that entry's `checkpoint` key
};

struct LayerSpec {
  std::string name;                  // fully qualified: "layer1.0.conv1"
  std::string type;                  // PyTorch class name: "Conv2d"
  std::vector<std::string> inputs;   // qualified names of the values it reads, in order
  std::vector<SourceLoc> input_locs;
  std::vector<Attribute> attrs;
  bool trainable = true;             // false: its parameters get no gradient and no optimizer state
  bool functional = false;           // called as a function in PyTorch (F.relu, x.view): no module
  /// The top-level entry (a layer or a block instance; each `repeat` instance its own) this
  /// layer belongs to, and whether it is a block instance: --checkpoint blocks|every:K.
  bool unit_is_block = false;
  std::string unit;
  Rare<LayerLinks> linked;           // read it with links(), change it with edit_links()
  SourceLoc loc;                     // the layer's mapping
  SourceLoc type_loc;

  const Attribute* find_attr(std::string_view attr) const;
  /// Its sharing, ties and checkpointed segment (all empty for most layers).
  const LayerLinks& links() const;
  /// Its LayerLinks, to change (made empty first when it has none).
  LayerLinks& edit_links() { return linked.edit(); }

  /// How messages name the layer: "Conv2d 'stage2.conv'".
  std::string title() const { return type + " '" + name + "'"; }
};

/// `register: [cv1, cv2, m]` on a block: the order in which its instance (`module`, qualified:
/// "model.2") registers its members in `__init__`, which is `model.parameters()`'s order and so
/// the optimizer's; without it, the order forward first reaches them.
struct Registration {
  std::string module;
  std::vector<std::string> members;  // local names: a layer's, a block instance's, or a prefix ("m" of m.0, m.1)
};

/// A reference forward()'s Python code holds to a tensor beyond its readers, until a layer has
/// run (docs/memory-model.md, "Python references"): a caller holding a call's argument until the
/// call returns, or a variable (`var: x`) until it is assigned again or its function returns.
struct Reference {
  std::string value;                 // qualified value name
  std::size_t until = 0;             // index into ModelSpec::layers
};

/// A block instance whose block names the PyTorch module class it is (`class:
/// TransformerEncoderLayer`): PyTorch may run such a module's forward as one fused op in
/// inference (src/graph/fast_path.cpp).
struct ClassedBlock {
  std::string cls;                   // "TransformerEncoderLayer"
  std::string instance;              // qualified: "encoder.layers.0"
  std::size_t first = 0, end = 0;    // its layers: ModelSpec::layers[first, end)
  std::string output;                // the qualified value it returns
  SourceLoc loc;                     // the block's `class` key
};

struct InputSpec {
  std::string name;
  Shape shape;                       // per sample, without the batch dimension
  DType dtype = DType::Float32;
  bool dtype_given = false;          // an explicit float dtype is still overridden by --dtype
  SourceLoc loc;
};

/// One term of the training loss (`loss:`): `weight * kind(output, target)`, the terms summed
/// in order as one Python expression, `w1 * l1 + w2 * l2`.
struct LossSpec {
  std::string output;             // the value it reads: resolved; "" = the model's only output
  std::string kind;               // cross_entropy | nll | mse | l1 | smooth_l1 | huber | bce_with_logits | mean
  std::optional<double> weight;   // none: the loss enters the sum as it is (no multiplication)
  std::vector<Attribute> attrs;   // its options (cross_entropy's ignore_index, label_smoothing, upcast), evaluated
  SourceLoc loc, output_loc, kind_loc, weight_loc;
};

struct ModelSpec {
  std::string file;
  std::string name;
  std::optional<DType> dtype;        // the model's float dtype, when the spec names one
  std::vector<InputSpec> inputs;
  std::vector<LayerSpec> layers;     // in execution order; every input refers to an earlier name
  std::vector<Registration> registrations;  // blocks whose registration order is given
  /// `modules:`: modules __init__ registers that no layer stands for (a dropout forward never
  /// calls, an activation inside a fused layer), qualified; in a checkpoint's list of modules.
  std::vector<std::string> unnamed_modules;
  std::vector<Reference> references;
  std::vector<ClassedBlock> classed_blocks;  // in execution order
  std::vector<std::string> outputs;  // the values the model returns (default: the last layer)
  std::vector<SourceLoc> output_locs;
  std::vector<LossSpec> losses;      // summed into the training loss; empty: `out.mean()`
  std::vector<std::pair<std::string, Value>> variables;  // final values, after --set
  /// What it was loaded with: LoadOptions' --set and --input texts, for reports.
  std::vector<std::pair<std::string, std::string>> set, input_shapes;
  SourceLoc loc;                     // the document
};

struct LoadOptions {
  /// --set NAME=VALUE overrides of the spec's `variables` (an unknown NAME is an error).
  std::vector<std::pair<std::string, std::string>> overrides;
  /// --input NAME=[d1, d2, …] overrides of an input's per-sample shape (without the batch): each
  /// size an integer or a `$expression` of the spec's variables. An unknown NAME is an error.
  std::vector<std::pair<std::string, std::string>> input_shapes;
  /// Upper bound on layers after expanding blocks and `repeat`: bounds time and memory.
  std::int64_t max_layers = 100000;
  /// Larger files are refused before parsing.
  std::int64_t max_file_bytes = 16 << 20;
};

/// Reads and expands a spec file. Throws nnmem::Error (located) on any problem.
ModelSpec load_spec_file(const std::string& path, const LoadOptions& options = {});
/// The same for text already in memory; `file` is used in locations.
ModelSpec parse_spec(const std::string& text, const std::string& file,
                     const LoadOptions& options = {});

}  // namespace nnmem
