// The layer rule interface. One file per layer family under layers/ defines LayerDefs and
// registers them; each rule declares its attributes and, given its inputs, infers its outputs,
// parameters, buffers, multiply-accumulates and what its backward pass keeps — like an ONNX
// op's schema with its shape-inference function beside it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "nnmem/profile.hpp"
#include "nnmem/shape.hpp"
#include "nnmem/spec.hpp"

namespace nnmem {

// ---------------------------------------------------------------------------------------------
// Attribute schemas

enum class AttrKind {
  Int,       // 3
  Float,     // 1e-5 (an integer is accepted)
  Bool,      // true
  String,    // one of `words`
  IntTuple,  // 3 or [3, 1]: one value per spatial dimension (`rank` of them, or any number when
             // `rank` is 0; a scalar then reads as one value); may also be a word
  IntList,   // [1, -1, 7]: any length (shapes)
  FloatTuple,  // 2 or [2, 1.5]: one number per spatial dimension, any number of them (a scalar reads as one)
};

/// One attribute of a layer type: its name, kind, default, constraints and a line of help.
struct AttrDef {
  std::string name;
  AttrKind kind = AttrKind::Int;
  Value fallback;              // used when the spec omits the attribute; Null = no default
  bool required = false;
  bool nullable = false;       // `null` is accepted and means "not given" (e.g. in_channels)
  std::int64_t min = std::numeric_limits<std::int64_t>::min();  // for integers
  double min_real = -std::numeric_limits<double>::infinity();   // for Float
  double max_real = std::numeric_limits<double>::infinity();
  int rank = 1;                // IntTuple: number of values in a list (0: any number, at least one)
  bool int_is_list = false;    // IntList: an integer n stands for [n] (normalized_shape: 768)
  std::vector<std::string> words;  // String: accepted values; IntTuple: accepted alternatives
  std::string help;

  static AttrDef integer(std::string name, std::string help);
  static AttrDef real(std::string name, std::string help);
  static AttrDef flag(std::string name, bool fallback, std::string help);
  static AttrDef word(std::string name, std::vector<std::string> words, std::string help);
  static AttrDef tuple(std::string name, int rank, std::string help);
  static AttrDef list(std::string name, std::string help);
  static AttrDef reals(std::string name, std::string help);  // FloatTuple

  AttrDef&& needed() &&;                        // required
  AttrDef&& optional() &&;                      // may be omitted or null, no default
  AttrDef&& or_else(std::int64_t v) &&;         // integer / tuple default
  AttrDef&& or_else_real(double v) &&;
  AttrDef&& or_else_word(std::string v) &&;
  AttrDef&& at_least(std::int64_t v) &&;
  AttrDef&& between(double lo, double hi) &&;
  AttrDef&& or_words(std::vector<std::string> w) &&;  // IntTuple alternatives ("same", "valid")
  AttrDef&& or_int() &&;                        // IntList: also an integer n, meaning [n]

  /// "int ≥ 1, required", "float, default 1e-05", … for `nnmem layers TYPE`.
  std::string describe() const;
};

/// Typed, validated access to a layer's attributes (defaults applied). Built by the graph after
/// checking every attribute against the schema, so the accessors here cannot see a wrong type.
class Attrs {
 public:
  Attrs(const std::vector<AttrDef>& defs, const LayerSpec& layer);

  std::int64_t integer(std::string_view name) const;
  double real(std::string_view name) const;
  bool flag(std::string_view name) const;
  const std::string& text(std::string_view name) const;
  /// An IntTuple: a scalar is repeated `rank` times. Empty if the attribute holds a word.
  /// IntTuples and IntLists are per-dimension figures (kernel sizes, strides, paddings, sizes of
  /// a view), so they come as a Shape: rules combine them with shapes without converting.
  Shape tuple(std::string_view name) const;
  Shape list(std::string_view name) const;
  /// A FloatTuple: one value, or one per dimension as written.
  std::vector<double> reals(std::string_view name) const;
  /// Whether the spec gave this attribute (not null).
  bool given(std::string_view name) const;
  /// Whether the attribute holds the given word (IntTuple alternatives, String).
  bool is(std::string_view name, std::string_view word) const;

 private:
  const Value& value(std::string_view name) const;
  const AttrDef& def(std::string_view name) const;
  const std::vector<AttrDef>* defs_;
  std::vector<const Value*> values_;  // parallel to defs_, nullptr when absent
};

// ---------------------------------------------------------------------------------------------
// What a rule sees and what it says

enum class Mode { Train, Eval };
enum class Device { Cuda, Cpu };

struct Context {
  Mode mode = Mode::Train;
  Device device = Device::Cuda;
  DType float_dtype = DType::Float32;  // the dtype of parameters and float activations
  std::optional<DType> amp = std::nullopt;  // autocast's low-precision dtype, when mixed precision is on
  const TorchProfile* torch = &default_torch_profile();  // the PyTorch version modelled (never null)
  std::int64_t batch = 1;  // the model inputs' dimension 0 (Expand's shape is per sample)
};

/// How a tensor's elements lie in memory, as far as nnmem follows it: whether `.contiguous()`
/// copies, and how attention kernels lay out their output.
enum class Layout : std::uint8_t {
  Contiguous,
  Swapped12,  // stored as .transpose(1, 2) of a contiguous tensor ([B, L, H, D] viewed as [B, H, L, D])
  TransposedLast,  // a contiguous tensor of 4 or more dimensions with its last two swapped (k.transpose(-2, -1))
  ChannelsLast,  // [N, C, H, W] stored as a contiguous [N, H, W, C] permuted (ConvNeXt's Permute, LayerNorm2d)
  SplitRows,  // a part of a contiguous tensor of 3 or more dimensions split along its next-to-last one (YOLO11's
              // q, k, v of one [B, heads, 2·key_dim + head_dim, N] projection): its leading dimensions
              // merge, so matmul folds it without a copy; an element-wise result of it is contiguous
  Strided,    // anything else
};

struct InputTensor {
  TensorType type;
  bool requires_grad = false;
  Layout layout = Layout::Contiguous;
  bool strided = false;  // a non-contiguous view (a batch_first RNN's output): ops that need rows copy it
  bool cast = false;     // autocast's copy of the tensor given, made for this call (contiguous)
};

struct LayerCall {
  const std::string& name;
  const Attrs& attrs;
  std::span<const InputTensor> inputs;
  Context ctx;
  bool trainable = true;  // the layer's parameters require grad

  const TensorType& input(std::size_t i = 0) const { return inputs[i].type; }
  const Shape& shape(std::size_t i = 0) const { return inputs[i].type.shape; }
  bool input_requires_grad(std::size_t i = 0) const { return inputs[i].requires_grad; }
  bool any_input_requires_grad() const;
  bool training() const { return ctx.mode == Mode::Train; }
};

/// How output 0 relates to input 0's memory (or, for Alias::Parameter and Buffer, to parameter
/// or buffer 0).
enum class Alias {
  None,     // a fresh tensor
  InPlace,  // the same storage, modified (ReLU(inplace=True), x += y)
  View,     // the same storage, reinterpreted (view, flatten, squeeze)
  Parameter,  // parameter 0 itself (an nn.Parameter read in forward): no memory of its own
  Buffer,     // buffer 0 itself (a registered buffer read in forward): no memory of its own
};

/// A tensor an op keeps alive for its backward pass.
struct Saved {
  /// Param: one of the layer's parameters, free in full precision (it is persistent), but under
  /// autocast the op keeps the parameter's low-precision copy, which is memory of its own.
  enum class Of { Input, Output, Extra, Param };
  /// Where an Extra comes from, which matters when nothing keeps it (activation checkpointing):
  ///   Result    one of the op's results (indices, statistics, CUDA's dropout mask): kept after
  ///             the output exists; unkept, it is gone before the op's call returns;
  ///   Operand   made inside the op's call as an operand of its kernel (the CPU dropout mask, an
  ///             in-place activation's clone): kept before the output exists; unkept, likewise;
  ///   Separate  made by an op of its own before this one (F.pad's copy): kept before the
  ///             output exists; unkept, it lives until this op has run.
  enum class Made { Result, Operand, Separate };
  Of of = Of::Input;
  int index = 0;            // which input / output / parameter
  TensorType type;          // for Extra: a tensor the op creates (indices, mask, statistics)
  std::string what;         // for reports: "indices", "save_mean", …
  Made made = Made::Result;  // for Extra
  /// An Extra that is a wrapped Python number (`0.5 * x`, `x * 0.125`: the number made a 0-dim
  /// float64 CPU tensor, which the Mul's backward keeps): memory on the CPU only, and counted as
  /// saved only where the profile's saved_tensors_hooks see it (TorchProfile::hooks_see_wrapped_numbers).
  bool wrapped_number = false;

  friend bool operator==(const Saved&, const Saved&) = default;
  /// Autograd packs it before the op's output exists (inputs, parameters, operands).
  bool before_output() const { return of == Of::Input || of == Of::Param || (of == Of::Extra && made != Made::Result); }
};

/// A tensor an op allocates and frees again within one call of its forward or backward,
/// beyond what it returns and keeps: Softmin's negated input, the element-wise weight gradient
/// 2.x's PReLU sums down. Forward scratch coexists with the op's outputs; backward scratch with
/// the input gradients, and (unless freed early) with the parameters' gradients.
struct Scratch {
  TensorType type;
  std::string what;
  bool freed_before_param_grads = false;  // backward: released before the parameters' gradients exist
  friend bool operator==(const Scratch&, const Scratch&) = default;
};

struct ParamDecl {
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  /// Its gradient is the output's gradient summed down by the engine after the node has run
  /// (validate_outputs' sum_to), not by the node itself: Linear's bias.
  bool grad_summed = false;
  /// A buffer in the module's state_dict (register_buffer's `persistent`); parameters always are.
  bool persistent = true;
  /// Its gradient comes with other strides than the parameter's (a 2-D convolution's weight on a
  /// channels-last input gets a channels-last gradient): AccumulateGrad, which keeps a new
  /// gradient as .grad only when its strides are the parameter's, copies it when .grad is None.
  bool grad_restrided = false;
  /// > 0: a sparse gradient (Embedding's `sparse: true`), a COO tensor of this many rows — the
  /// ids looked up, repeats included, not coalesced: int64 indices [1, rows] viewing the ids and
  /// values [rows, *shape[1:]], which are the output's gradient itself (AccumulateGrad keeps it).
  std::int64_t sparse_rows = 0;
  /// Under autocast the layer casts views of it (not a leaf: never cached) at each call and keeps
  /// those copies itself (save_extra): the graph makes no copy of it (MultiheadAttention's
  /// cross-attention, whose in_proj_weight is split into the query's and the key's weights).
  bool cast_by_layer = false;
  /// Its gradient is a view of another tensor (nn.Linear's weight: F.linear multiplies by
  /// weight.t(), whose TBackward0 transposes mm's result back): torch 2.x's InputBuffer does not
  /// add a later use's gradient into it in place (a tied weight's: lm_head's, then the embedding's).
  bool grad_view = false;
  friend bool operator==(const ParamDecl&, const ParamDecl&) = default;
};

/// One event of a backward PyTorch runs as several autograd nodes — a recurrent layer's layers,
/// directions and steps, a cell's gates and states — in the order the engine runs them. A
/// layer that gives such a program has its backward played event by event instead of as one
/// node (input gradients, parameters' gradients, then everything it kept freed at once).
struct BackwardEvent {
  enum class Kind {
    Temporary,       // a tensor of `type`, made now; `index` names it for its Free
    Free,            // frees temporary `index`
    InputGrad,       // input `index`'s gradient, when it needs one (again: another part of it)
    InputGradsOut,   // the input gradients made so far go to their inputs now, as the autograd
                     // node that made them returns (added into a gradient an input already has)
    ParamGrad,       // parameter `index`'s gradient (none when the layer is frozen)
    ParamGradsDone,  // the parameters' gradients made so far go to .grad (AccumulateGrad)
    ReleaseSaved,    // saved entry `index` is let go (its tensor freed when nothing else holds it)
    ReleaseGradOut,  // output `index`'s gradient is freed
  };
  Kind kind;
  int index = 0;
  TensorType type = {};
  std::string what = {};
};
/// Writes the program for the outputs that got a gradient (output_has_grad[k] for output k).
/// A program is code, not data: results compare equal only when neither has one.
class BackwardProgram {
 public:
  using Write = std::function<std::vector<BackwardEvent>(const std::vector<bool>& output_has_grad)>;
  BackwardProgram() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, BackwardProgram>)
  BackwardProgram(F write) : write_(std::move(write)) {}  // NOLINT: a lambda assigned as it is
  explicit operator bool() const { return static_cast<bool>(write_); }
  std::vector<BackwardEvent> operator()(const std::vector<bool>& output_has_grad) const { return write_(output_has_grad); }
  friend bool operator==(const BackwardProgram& a, const BackwardProgram& b) { return !a && !b; }

 private:
  Write write_;
};

struct LayerResult {
  std::vector<TensorType> outputs;
  Alias alias = Alias::None;
  /// Output 0 is a non-contiguous view of its storage: a batch_first RNN's output is its
  /// time-major result transposed. A Linear reading it copies it first (`reshape`).
  bool output_strided = false;
  std::vector<ParamDecl> params;   // trainable unless the layer is frozen
  std::vector<ParamDecl> buffers;  // running statistics and the like
  std::int64_t macs = 0;
  std::vector<Saved> saved;        // training mode: what backward keeps, given who needs grads
  /// Backward hands the output's gradient itself (or a view of it) to each input, allocating
  /// nothing: add, cat, and every view (Alias::View implies it).
  bool grad_passthrough = false;
  /// Inputs are broadcast to the output's shape (add, mul): a smaller input's gradient is an
  /// output-shaped gradient summed down to its shape (for mul, computed at the output's shape
  /// first, a temporary as large as the output).
  bool broadcasts = false;
  /// A view of part of the input (slice, select, split): backward writes the outputs' gradients
  /// into a new input-sized tensor (zeros where no gradient reached), rather than passing a view.
  bool grad_scatters = false;
  /// The outputs' layout when the rule knows it; otherwise a view or in-place output keeps its
  /// input's, an output shaped like input 0 follows it (element-wise ops keep their input's
  /// strides), and anything else is contiguous.
  std::optional<Layout> layout = std::nullopt;
  /// Output 0's storage when the kernel gives it more than its elements take (on the CPU,
  /// slow_conv_transpose3d resizes an input-sized buffer down); 0: the output's own size.
  std::int64_t output_storage_bytes = 0;
  /// The storage backward's gradient for input 0 comes in, when it is not input-sized: col2im
  /// (Unfold's backward) resizes an output-sized buffer down to the input's shape.
  std::optional<TensorType> input_grad_storage;
  /// Backward's gradient for input 0 is a view of another tensor (a Linear on more than two
  /// dimensions reshapes mm's 2-D result; a view op views its output's gradient back; not
  /// Identity, which passes the tensor itself on): it shares that tensor's storage, so torch 2.x's
  /// InputBuffer cannot add a later gradient of the same input into it in place and makes a sum
  /// (validation/torch2-differences.md, R1).
  bool input_grad_view = false;
  std::vector<Scratch> forward_scratch;   // training or not
  /// The forward scratch is made and let go before the output exists (the call's peak is
  /// midway, its result made last: Mixtral's experts without autograd); otherwise beside it.
  bool scratch_before_output = false;
  /// Forward, before the outputs exist: the moments of a composite op at which the most of its
  /// temporaries are live (F.multi_head_attention_forward's projections and copies), each the
  /// tensors live at once, all freed by the time the outputs are made.
  std::vector<std::vector<Scratch>> forward_moments;
  std::vector<Scratch> backward_scratch;  // when its backward runs
  BackwardProgram backward_program;        // unset: backward runs as one node
  /// Every field: the graph shares one result between layers whose rules gave equal ones.
  friend bool operator==(const LayerResult&, const LayerResult&) = default;

  void save_input(int i, std::string what = "input");
  void save_output(int i, std::string what = "output");
  void save_extra(TensorType type, std::string what, Saved::Made made = Saved::Made::Result);
  void save_param(int i, std::string what = "weight");
  /// A Python number the op multiplies by and keeps (`x * 0.5`): 8 bytes on the CPU, none on a GPU.
  void save_wrapped_number(const Context& ctx, std::string what);
};

/// A rule's complaint about its inputs or attributes. `attribute` (if not empty) names the
/// attribute at fault, so the error can point at it; the graph adds the file position and the
/// layer's type and name.
class LayerError : public std::runtime_error {
 public:
  explicit LayerError(const std::string& message, std::string attribute = {})
      : std::runtime_error(message), attribute_(std::move(attribute)) {}
  const std::string& attribute() const { return attribute_; }

 private:
  std::string attribute_;
};

/// How a layer runs under autocast (mixed precision).
enum class Autocast {
  Inherit,  // in its input's dtype (activations, pooling, views, batch norm)
  Lower,    // in the low-precision dtype (convolutions, linear, matmul)
  Float32,  // in float32 (softmax, log-softmax, losses, norms)
};

struct LayerDef {
  std::string type;                 // PyTorch's class name
  std::string summary;              // one line for `nnmem layers`
  std::vector<AttrDef> attrs;
  int min_inputs = 1;
  int max_inputs = 1;               // -1: any number
  Autocast autocast = Autocast::Inherit;           // on CUDA
  std::function<LayerResult(const LayerCall&)> infer;
  std::optional<Autocast> autocast_cpu = std::nullopt;  // on the CPU, where its op list differs
  std::string versions = {};        // where PyTorch versions differ for it (`nnmem layers TYPE`)
  /// The dtype the op itself converts its floating-point inputs to before computing, when its
  /// attributes give one (F.softmax's `dtype=`: `x.to(dtype)` first); it replaces autocast's
  /// policy. The copy is made and let go as autocast's are, and backward casts the gradient back.
  std::function<std::optional<DType>(const Attrs&, const Context&)> own_dtype = nullptr;

  Autocast autocast_on(Device device) const {
    return device == Device::Cpu && autocast_cpu ? *autocast_cpu : autocast;
  }
};

// ---------------------------------------------------------------------------------------------
// The registry

/// Registers a layer type; used from static initialisers in layers/*.cpp. Returns true.
bool register_layer(LayerDef def);
/// nullptr when the type is unknown.
const LayerDef* find_layer(std::string_view type);
/// Every registered type, sorted.
std::vector<std::string> layer_types();
/// What to suggest for an unknown type, by meaning as well as by spelling: "; did you mean
/// 'Concat'?" for Cat, "; did you mean 'ConvTranspose2d'?" for Conv2dTranspose, "; did you mean
/// 'BatchNorm1d', 'BatchNorm2d' or 'BatchNorm3d'?" for BatchNormalization; "" when nothing fits,
/// and for PyTorch layers nnmem does not model (RReLU gets no 'ReLU').
std::string layer_type_hint(std::string_view type);

}  // namespace nnmem
