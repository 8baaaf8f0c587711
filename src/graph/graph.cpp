// Builds the layer graph: resolves each layer's rule, checks its attributes, infers shapes layer
// by layer, assigns storages (in-place ops and views share their input's), and checks what only
// the whole graph can show (unused inputs and layers, in-place writes over saved tensors).
// Every check is O(1) per layer (or per tensor dimension, bounded by kMaxRank), so a spec of
// 100,000 layers builds in well under a second.
#include "nnmem/graph.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "cpu_kernels.hpp"
#include "fast_path.hpp"
#include "parameters.hpp"
#include "references.hpp"
#include "result_pool.hpp"
#include "value_names.hpp"

namespace nnmem {

namespace {


class Builder {
 public:
  Builder(ModelSpec spec, const GraphOptions& options) {
    graph_.spec = std::move(spec);
    graph_.options = options;
    ctx_.batch = options.batch;
    ctx_.mode = options.mode;
    ctx_.device = options.device;
    ctx_.float_dtype = options.float_dtype.value_or(graph_.spec.dtype.value_or(DType::Float32));
    ctx_.amp = options.amp;
    ctx_.torch = options.torch;
    graph_.float_dtype = ctx_.float_dtype;
  }

  Graph build() {
    const ModelSpec& spec = graph_.spec;
    if (graph_.options.batch < 1)
      throw Error(spec.loc, "the batch size must be at least 1, found " + std::to_string(graph_.options.batch));
    if (graph_.options.amp && (dtype_size(*graph_.options.amp) != 2 || !is_floating(*graph_.options.amp)))
      throw Error(spec.loc, "mixed precision runs in float16 or bfloat16, found " +
                                std::string(dtype_name(*graph_.options.amp)));
    if (graph_.options.amp == DType::Float16 && ctx_.device == Device::Cpu && !ctx_.torch->cpu_autocast_float16)
      throw Error(spec.loc, "PyTorch " + std::string(ctx_.torch->version) +
                                "'s CPU autocast takes bfloat16 only (RuntimeError: Currently, AutocastCPU only support "
                                "Bfloat16 as the autocast_cpu_dtype); expected --amp bfloat16, --device cuda or --torch " +
                                std::string(default_torch_profile().version) + ", found --torch " +
                                std::string(ctx_.torch->version) + " --device cpu --amp float16");
    graph_.nodes.reserve(spec.layers.size());
    graph_.values.reserve(spec.inputs.size() + spec.layers.size());
    graph_.storages.reserve(spec.inputs.size() + spec.layers.size());
    first_saver_.reserve(spec.inputs.size() + spec.layers.size());
    names_.reserve(spec.inputs.size() + spec.layers.size());
    // Two parameters a layer (a weight and a bias) hold most models without a move: grown by
    // doubling, a 100,000-layer model's old arrays were 20 MB of free but resident heap when
    // its layers were added, the build's peak (bench/README.md, "Reserved, trimmed and
    // walked"). Pages of the reserve that no parameter fills are never touched, so never resident.
    graph_.parameters.reserve(2 * spec.layers.size());
    for (const auto& in : spec.inputs) add_input(in);
    for (std::size_t i = 0; i < spec.layers.size(); ++i) add_layer(static_cast<int>(i));
    for (std::size_t i = 0; i < spec.outputs.size(); ++i)
      graph_.outputs.push_back(value_of(spec.outputs[i], i < spec.output_locs.size() ? spec.output_locs[i] : spec.loc,
                                       [] { return std::string("'outputs'"); }));
    check_everything_used();
    detail::mark_python_references(graph_, [&](const std::string& name) {
      return value_of(name, spec.loc, [] { return std::string("a reference"); });
    });
    // Nothing is found by name from here: the table is let go before the parameters' order is
    // worked out, the build's heap peak on a deep model (a 100,000-layer one's table: 6 MB).
    names_ = {};
    detail::order_parameters(graph_);
    detail::mark_fast_paths(graph_);
    return std::move(graph_);
  }

 private:
  // Every name was resolved by the expander; only an output number (`lstm:3`) can be wrong here.
  // `who()` names the reader in the message, built only for an error.
  template <typename Who>
  int value_of(const std::string& name, const SourceLoc& at, const Who& who) const {
    if (const int v = names_.find(name); v >= 0) return v;
    no_such_output(name, at, who());
  }

  [[noreturn]] void no_such_output(const std::string& name, const SourceLoc& at, const std::string& who) const {
    const std::string base = name.substr(0, name.rfind(':'));
    int count = 0;
    while (names_.find(count == 0 ? base : base + ":" + std::to_string(count)) >= 0) ++count;
    const int producer = count > 0 ? graph_.values[names_.find(base)].producer : -1;
    const std::string what = producer >= 0 ? graph_.layer(graph_.nodes[producer]).title() : "input '" + base + "'";
    throw Error(at, who + ": reads '" + name + "', but " + what + " has " + std::to_string(count) + " output" +
                        (count == 1 ? " ('" + base + "')" : "s ('" + base + "' to '" + base + ":" + std::to_string(count - 1) + "')"));
  }

  // Throws unless the tensor can exist in nnmem: at most kMaxRank dimensions, and a size in
  // bytes that fits in 64 bits (else a SizeError). `what()` starts the message: "Linear 'fc':
  // the output". Messages are built only for an error: this runs for every tensor.
  template <typename What>
  static void check_fits(const TensorType& type, const SourceLoc& at, const What& what) {
    check_fits(type.shape, type.dtype, at, what);
  }

  // The same for a shape and dtype not held as a TensorType (a parameter's, a buffer's), without
  // copying the shape into one.
  template <typename What>
  static std::int64_t check_fits(const Shape& shape, DType dtype, const SourceLoc& at, const What& what) {
    if (shape.size() > kMaxRank)
      throw Error(at, what() + " would have " + std::to_string(shape.size()) + " dimensions; nnmem supports at most " +
                          std::to_string(kMaxRank));
    try {
      return checked_mul(numel(shape), dtype_size(dtype));  // TensorType::bytes()
    } catch (const OverflowError& e) {
      throw SizeError(at, what() + " " + to_string(shape) + " is too large (" + e.what() + ")");
    }
  }

  // The tensor must fit (check_fits): every caller has checked. Only named values (model
  // inputs, layer outputs) can be read by name: `key` is the name as a view that outlives the
  // builder (the spec's, or extra_names_'), none for a value no layer reads by name.
  int new_value(std::string name, TensorType type, int producer, std::optional<std::string_view> key = std::nullopt) {
    TensorValue v;
    v.name = std::move(name);
    v.type = std::move(type);
    v.producer = producer;
    graph_.values.push_back(std::move(v));
    const int id = static_cast<int>(graph_.values.size()) - 1;
    if (key) names_.add(*key, id);
    return id;
  }

  // An autocast copy made as the layer runs: a fresh storage, read by the layer alone.
  int new_copy(const std::string& name, TensorType type, int producer, bool requires_grad) {
    const int id = new_value(name, std::move(type), producer);
    graph_.values[id].requires_grad = requires_grad;
    graph_.values[id].storage = new_storage(id);
    return id;
  }

  // `at_least`: a kernel may give the tensor a larger storage than its elements take.
  int new_storage(int value, std::int64_t at_least = 0) {
    graph_.storages.push_back({std::max(graph_.values[value].type.bytes(), at_least), value});
    first_saver_.emplace_back(-1, -1);
    return static_cast<int>(graph_.storages.size()) - 1;
  }

  void add_input(const InputSpec& in) {
    TensorType type;
    type.shape.push_back(graph_.options.batch);
    type.shape.insert(type.shape.end(), in.shape.begin(), in.shape.end());
    type.dtype = is_floating(in.dtype) ? ctx_.float_dtype : in.dtype;
    check_fits(type, in.loc, [&] { return "input '" + in.name + "': the tensor"; });
    const int id = new_value(in.name, std::move(type), -1, in.name);
    graph_.values[id].storage = new_storage(id);
    graph_.inputs.push_back(id);
  }

  void add_layer(int index) {
    const LayerSpec& layer = graph_.spec.layers[index];
    const LayerDef* def = find_layer(layer.type);
    if (!def) {
      const std::string msg = "unknown layer type '" + layer.type + "'" + layer_type_hint(layer.type) +
                               " (`nnmem layers` lists the known types)";
      throw Error(layer.type_loc, msg);
    }
    if (!ctx_.torch->has_layer(layer.type))
      throw Error(layer.type_loc, layer.title() + ": PyTorch " + std::string(ctx_.torch->version) + " has no nn." + layer.type +
                                      " (--torch " + std::string(default_torch_profile().version) + " has it)");
    const int n = static_cast<int>(layer.inputs.size());
    if (n < def->min_inputs || (def->max_inputs >= 0 && n > def->max_inputs)) {
      const std::string expected = def->min_inputs == def->max_inputs ? std::to_string(def->min_inputs)
                                   : def->max_inputs < 0 ? "at least " + std::to_string(def->min_inputs)
                                                         : std::to_string(def->min_inputs) + " to " + std::to_string(def->max_inputs);
      throw Error(layer.loc, layer.title() + ": takes " + expected + " input(s), found " + std::to_string(n));
    }
    const Attrs attrs(def->attrs, layer);

    Node node;
    node.layer = index;
    node.def = def;
    node.trainable = layer.trainable;
    const int node_index = static_cast<int>(graph_.nodes.size());
    // Under autocast, a layer on the lower-precision list runs in the amp dtype and one on the
    // float32 list in float32: floating-point inputs of another dtype are cast first, except
    // float64 ones, which autocast never casts (a float64 model runs in float64).
    // A layer that converts its inputs itself (F.softmax's dtype) does so instead, float64 too.
    const std::optional<DType> own = def->own_dtype ? def->own_dtype(attrs, ctx_) : std::nullopt;
    const bool cpu = ctx_.device == Device::Cpu;
    const Autocast policy = !graph_.options.amp || own || (cpu && ctx_.torch->cpu_autocast_uncasts(def->type))
                                ? Autocast::Inherit
                            : cpu && ctx_.torch->cpu_autocast_in_float32(def->type) ? Autocast::Float32
                                                                                     : def->autocast_on(ctx_.device);
    const bool casts = policy != Autocast::Inherit || own;
    const DType cast_to = own ? *own : policy == Autocast::Lower ? *graph_.options.amp : DType::Float32;
    std::vector<InputTensor> inputs;
    inputs.reserve(layer.inputs.size());
    node.inputs.reserve(layer.inputs.size());
    node.input_casts.reserve(layer.inputs.size());
    for (std::size_t i = 0; i < layer.inputs.size(); ++i) {
      const std::string& name = layer.inputs[i];
      const int v = value_of(name, i < layer.input_locs.size() ? layer.input_locs[i] : layer.loc, [&] { return layer.title(); });
      node.inputs.push_back(v);
      TensorType type = graph_.values[v].type;
      int copy = -1;
      if (casts && (own ? is_floating(type.dtype) : autocast_eligible(type.dtype)) && type.dtype != cast_to) {
        type.dtype = cast_to;
        copy = new_copy(name + " as " + std::string(dtype_name(type.dtype)), type, node_index, graph_.values[v].requires_grad);
        graph_.values[copy].copy_of = v;
      }
      node.input_casts.push_back(copy);
      // The cast is .to(dtype), memory_format preserve: a dense permutation keeps its strides (a
      // transposed query cast for attention stays transposed, and so does the attention's output;
      // a channels-last tensor stays channels-last; measured, validation/ops_saved_transformers.md
      // and ops_saved_zoo.md), anything else comes out contiguous.
      const Layout source = graph_.values[v].layout;
      const Layout layout =
          copy < 0 || source == Layout::Swapped12 || source == Layout::ChannelsLast ? source : Layout::Contiguous;
      inputs.push_back({std::move(type), graph_.values[v].requires_grad, layout, copy < 0 && graph_.values[v].strided, copy >= 0});
    }
    const LayerCall call{layer.name, attrs, inputs, ctx_, layer.trainable && ctx_.mode == Mode::Train};
    LayerResult result;
    try {
      result = def->infer(call);
    } catch (const LayerError& e) {
      const Attribute* attr = e.attribute().empty() ? nullptr : layer.find_attr(e.attribute());
      throw Error(attr ? attr->value.loc : layer.loc, layer.title() + ": " + e.what());
    } catch (const OverflowError& e) {
      // The rule's own arithmetic (an output size, its multiply-accumulates) overflowed; which
      // tensor would have been too large is the rule's to say, so name what it started from.
      std::string from;
      for (const auto& in : inputs) from += (from.empty() ? "" : ", ") + to_string(in.type.shape);
      throw SizeError(layer.loc, layer.title() + ": the sizes it computes from the input" + (inputs.size() > 1 ? "s " : " ") +
                                     from + " do not fit in 64 bits (" + e.what() + ")");
    }
    for (auto& p : result.params) p.dtype = ctx_.float_dtype;  // the model's, whatever the rule declared
    if (auto gap = detail::cpu_kernel_gap(def->type, call, result)) throw Error(layer.type_loc, layer.title() + ": " + *gap);
    // F.softmax(x, dim, dtype) converts x inside its call (aten::softmax > aten::to): unless the
    // op keeps the converted input, the copy is gone before the call returns.
    if (own)
      for (std::size_t i = 0; i < node.input_casts.size(); ++i)
        if (const int copy = node.input_casts[i]; copy >= 0)
          graph_.values[copy].op_workspace = std::none_of(result.saved.begin(), result.saved.end(), [&](const Saved& s) {
            return s.of == Saved::Of::Input && s.index == static_cast<int>(i);
          });
    node.result = results_.share(def, std::move(result));
    count_parameters(layer, node);
    detail::assign_parameters(graph_, node, node_index, names_, ctx_.float_dtype);
    // The parameters' low-precision copies. Autocast caches those of parameters that require a
    // gradient until it exits (after the loss); a frozen layer's are made anew at every use. A
    // shared or tied parameter's cached copy is made by its first use and found by the others.
    node.param_casts.reserve(node.result->params.size());
    for (std::size_t k = 0; k < node.result->params.size(); ++k) {
      const ParamDecl& p = node.result->params[k];
      int copy = -1;
      if (policy == Autocast::Lower && autocast_eligible(p.dtype) && p.dtype != *graph_.options.amp && !p.cast_by_layer) {
        const auto cached = cached_param_copies_.find(node.params[k]);
        if (cached != cached_param_copies_.end()) {
          copy = cached->second;
        } else {
          copy = new_copy(layer.name + "." + p.name + " as " + std::string(dtype_name(*graph_.options.amp)),
                          {p.shape, *graph_.options.amp}, node_index, node.trainable && ctx_.mode == Mode::Train);
          graph_.values[copy].param_copy = true;
          graph_.values[copy].cached = node.trainable;
          if (node.trainable) cached_param_copies_[node.params[k]] = copy;
        }
      }
      node.param_casts.push_back(copy);
    }

    const bool has_trainable_params = node.trainable && !node.result->params.empty();
    const bool requires_grad =
        ctx_.mode == Mode::Train && (call.any_input_requires_grad() || has_trainable_params);
    node.outputs.reserve(node.result->outputs.size());
    for (std::size_t k = 0; k < node.result->outputs.size(); ++k) {
      const TensorType& out = node.result->outputs[k];
      check_fits(out, layer.loc, [&] {
        return layer.title() + ": " + (node.result->outputs.size() == 1 ? "the output" : "output " + std::to_string(k));
      });
      // PyTorch can make a 0-D scalar (x.squeeze(0) on [1]), but every rule and the loss read
      // the batch from dimension 0: a 0-D tensor crashed the next View (found while fuzzing,
      // tests/fuzz/regressions/squeeze_to_scalar.yaml). Checked here, for every rule.
      if (out.shape.empty())
        throw Error(layer.loc, layer.title() + ": the output would be a 0-D tensor (a scalar)" +
                                   (inputs.empty() ? "" : ", made from the input " + to_string(call.shape())) +
                                   "; nnmem's tensors keep at least one dimension");
      for (std::int64_t d : out.shape)
        if (d < 1)
          throw Error(layer.loc, layer.title() + ": the output shape " + to_string(out.shape) + " has a size below 1" +
                                     (inputs.empty() ? "" : " (the input " + to_string(call.shape()) + " is too small)"));
      const std::string_view key = k == 0 ? std::string_view(layer.name)
                                          : extra_names_.emplace_back(layer.name + ":" + std::to_string(k));
      const int v = new_value(std::string(key), out, node_index, key);
      graph_.values[v].requires_grad = requires_grad;
      graph_.values[v].layout = output_layout(*node.result, k, inputs);
      graph_.values[v].strided = k == 0 && node.result->output_strided;
      // Every output of a view is a view (a split's parts); an in-place op writes output 0.
      const bool aliased = node.result->alias == Alias::View || (k == 0 && node.result->alias == Alias::InPlace);
      graph_.values[v].storage = aliased ? graph_.values[node.read(0)].storage
                                 : new_storage(v, k == 0 ? node.result->output_storage_bytes : 0);
      if (k == 0 && (node.result->alias == Alias::Parameter || node.result->alias == Alias::Buffer))
        graph_.storages[graph_.values[v].storage].bytes = 0;  // counted as a parameter or buffer
      node.outputs.push_back(v);
    }
    if (node.result->alias == Alias::InPlace && ctx_.mode == Mode::Train) check_inplace(layer, node);
    for (int v : node.inputs) graph_.values[v].readers.push_back(node_index);
    for (std::size_t k = 0; k < node.result->saved.size(); ++k) {
      const int v = node.saved_value(node.result->saved[k]);
      if (v < 0) continue;
      auto& saver = first_saver_[graph_.values[v].storage];
      if (saver.first < 0) saver = {node_index, static_cast<int>(k)};
    }
    graph_.nodes.push_back(std::move(node));
  }

  static Layout output_layout(const LayerResult& r, std::size_t k, const std::vector<InputTensor>& inputs) {
    if (r.layout) return *r.layout;
    if (inputs.empty()) return Layout::Contiguous;
    if (r.alias == Alias::View || r.alias == Alias::InPlace) return inputs[0].layout;
    if (r.outputs[k].shape == inputs[0].type.shape)  // element-wise: TensorIterator keeps a dense input's order
      return inputs[0].layout == Layout::SplitRows ? Layout::Contiguous : inputs[0].layout;
    return Layout::Contiguous;
  }

  // Parameters and buffers: each tensor's size, and the buffers' total, must fit (the
  // parameters' count is detail::assign_parameters's).
  void count_parameters(const LayerSpec& layer, Node& node) const {
    for (const auto& p : node.result->params)
      check_fits(p.shape, ctx_.float_dtype, layer.loc, [&] { return layer.title() + ": the " + p.name; });  // so its numel fits too
    for (const auto& b : node.result->buffers) {
      const std::int64_t bytes =
          check_fits(b.shape, b.dtype, layer.loc, [&] { return layer.title() + ": the buffer" + (b.name.empty() ? "" : " " + b.name); });
      try {
        node.buffer_bytes = checked_add(node.buffer_bytes, bytes);
      } catch (const OverflowError& e) {
        throw SizeError(layer.loc, layer.title() + ": its buffers do not fit in 64 bits (" + e.what() + ")");
      }
    }
  }

  // PyTorch refuses, in backward, a tensor that an in-place op overwrote after another op saved
  // it ("one of the variables needed for gradient computation has been modified by an inplace
  // operation"). Catch that here, where it can be pointed at: first_saver_ says, per storage,
  // which earlier layer saved it first.
  void check_inplace(const LayerSpec& layer, const Node& node) const {
    const auto [saver_node, saved] = first_saver_[graph_.values[node.read(0)].storage];
    if (saver_node < 0) return;
    const Node& earlier = graph_.nodes[saver_node];
    const LayerSpec& saver = graph_.layer(earlier);
    throw Error(layer.loc,
                layer.title() + " works in place, but it would overwrite the " + earlier.result->saved[saved].what +
                    " that " + saver.title() + " keeps for its backward pass; PyTorch would fail in backward. Set inplace: false",
                {{saver.loc, saver.title() + " is here"}});
  }

  void check_everything_used() {
    std::vector<bool> returned(graph_.values.size());  // a spec may list every layer in 'outputs'
    for (int v : graph_.outputs) returned[v] = true;
    for (int id : graph_.inputs)
      if (graph_.values[id].readers.empty() && !returned[id]) {
        const auto& in = *std::find_if(graph_.spec.inputs.begin(), graph_.spec.inputs.end(),
                                       [&](const InputSpec& s) { return s.name == graph_.values[id].name; });
        throw Error(in.loc, "input '" + in.name + "' is never read by any layer");
      }
    for (Node& node : graph_.nodes) {
      if (node.result->alias == Alias::Buffer) continue;  // a module's buffer forward need not read
      const bool used = std::any_of(node.outputs.begin(), node.outputs.end(),
                                    [&](int v) { return !graph_.values[v].readers.empty() || returned[v]; });
      const LayerSpec& layer = graph_.layer(node);
      // A frozen parameter that forward does not read is PyTorch's module held but not called
      // (YOLOv8's DFL convolution in training): counted, never graded; so is a tied one (T5's
      // encoder.embed_tokens, holding the shared weight that another layer reads and grades).
      // An untied trainable one would have no gradient, which nnmem does not model: an error.
      if (!used && !(layer.type == "Parameter" && (!layer.trainable || !layer.links().ties.empty()))) {
        throw Error(layer.loc, "the output of " + layer.title() +
                                   " is never used; read it from a later layer, list it in 'outputs', or remove it" +
                                   (layer.type == "Parameter" ? " (or freeze it: trainable: false)" : ""));
      }
      // Unread, it is not one of the uses whose gradients backward sums into the tied tensor's.
      if (!used)
        for (int p : node.params) --graph_.parameters[static_cast<std::size_t>(p)].uses;
    }
  }

  Graph graph_;
  Context ctx_;
  detail::ValueNames names_;
  std::deque<std::string> extra_names_;  // the names of outputs after the first ("lstm:1"), which names_ views
  std::unordered_map<int, int> cached_param_copies_;      // parameter -> autocast's cached copy
  detail::ResultPool results_;
  std::vector<std::pair<int, int>> first_saver_;  // per storage: (node, its Saved index), or (-1, -1)
};

}  // namespace

Graph build_graph(ModelSpec spec, const GraphOptions& options) { return Builder(std::move(spec), options).build(); }

}  // namespace nnmem
