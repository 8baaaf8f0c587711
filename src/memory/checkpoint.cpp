// Checkpoint sizes on disk (checkpoint.hpp): the model's tensors as state_dict() lists them, then
// each format's files. torch.save's layout is in checkpoint_torch.cpp; safetensors' is an 8-byte
// header length, a JSON header padded with spaces to 8 bytes, and the raw data; TensorFlow's
// bundle is a .data shard of raw tensors and a small .index table.
#include <algorithm>
#include <map>
#include <set>

#include "checkpoint_layout.hpp"

namespace nnmem {

namespace {

using detail::ModelTensors;
using detail::NamedTensor;

// "relu" for "relu_2": the spec's name for another call of a module (tests/test_examples.cpp
// follows the same convention), "" for any other name.
std::string base_of_call(const std::string& name) {
  const std::size_t underscore = name.rfind('_');
  if (underscore == std::string::npos || underscore + 1 == name.size() || name.find('.', underscore) != std::string::npos) return {};
  for (std::size_t i = underscore + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return {};
  return name.substr(0, underscore);
}

// The modules and tensors of the graph's model: every layer that is a module (not `functional`,
// not a call of another's with `share`) and every prefix of its qualified name (the blocks that
// contain it), the model "" first; a child module its parameters name (MultiheadAttention's
// out_proj); the spec's `modules:`. Layers without parameters or buffers named NAME_N, beside
// another NAME or NAME_M of the same type, are calls of one module NAME (DAVEnet's pool,
// torchvision's ReLU called twice in a block). A Parameter or Buffer layer is a tensor of its
// parent module; a tied parameter is listed under each name, the later ones `same_as` the first.
ModelTensors model_tensors(const Graph& g) {
  std::map<std::string, std::set<std::string>> types_by_base;  // "layer1.0.relu" -> {"ReLU"} over NAME, NAME_N
  std::map<std::string, int> names_by_base;
  for (const Node& node : g.nodes) {
    const LayerSpec& layer = g.layer(node);
    const std::string base = base_of_call(layer.name);
    types_by_base[base.empty() ? layer.name : base].insert(layer.type);
    ++names_by_base[base.empty() ? layer.name : base];
  }
  ModelTensors m;
  std::map<int, int> entry_of_parameter;  // Graph::parameters index -> its first state entry
  m.modules.push_back("");
  std::set<std::string> seen = {""};
  const auto add_module = [&](const std::string& module) {  // and each container of it not seen yet
    for (std::size_t dot = module.find('.'); dot != std::string::npos; dot = module.find('.', dot + 1))
      if (seen.insert(module.substr(0, dot)).second) m.modules.push_back(module.substr(0, dot));
    if (seen.insert(module).second) m.modules.push_back(module);
  };
  for (const Node& node : g.nodes) {
    const LayerSpec& layer = g.layer(node);
    if (layer.functional || !layer.links().shares.empty()) continue;  // a call of another layer's module adds nothing
    // A Parameter or Buffer layer is a tensor its parent module holds itself ("features.1.0.layer_scale").
    const bool tensor_only = node.result->alias == Alias::Parameter || node.result->alias == Alias::Buffer;
    const std::size_t last_dot = layer.name.rfind('.');
    std::string module = !tensor_only ? layer.name : last_dot == std::string::npos ? "" : layer.name.substr(0, last_dot);
    const std::string base = base_of_call(layer.name);
    if (!base.empty() && node.result->params.empty() && node.result->buffers.empty() && names_by_base[base] > 1 &&
        types_by_base[base].size() == 1)
      module = base;
    add_module(module);
    for (const ParamDecl& p : node.result->params)  // a child module's ("out_proj.weight" of MultiheadAttention)
      if (!tensor_only && p.name.find('.') != std::string::npos) add_module(module + "." + p.name.substr(0, p.name.rfind('.')));
    for (std::size_t k = 0; k < node.result->params.size(); ++k) {
      const ParamDecl& p = node.result->params[k];
      const auto [first, fresh] = entry_of_parameter.emplace(node.params[k], static_cast<int>(m.state.size()));
      m.state.push_back({tensor_only ? layer.name : layer.name + "." + p.name, {p.shape, p.dtype}, false, node.trainable,
                         fresh ? -1 : first->second});
    }
    for (const ParamDecl& b : node.result->buffers)
      if (b.persistent) m.state.push_back({b.name.empty() ? layer.name : layer.name + "." + b.name, {b.shape, b.dtype}, true, false});
  }
  for (const std::string& module : g.spec.unnamed_modules) add_module(module);  // `modules:`: no layer of their own
  return m;
}

std::int64_t digits(std::int64_t v) { return static_cast<std::int64_t>(std::to_string(v).size()); }

// safetensors.torch.save_file(state_dict): tensors ordered by alignment (larger dtypes first),
// then name; the header {"NAME":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},…}. A model
// with tied parameters is saved by save_model (save_file refuses shared tensors): of each tensor's
// names it keeps the first in sorted order and records each other one in the header's
// "__metadata__":{"DROPPED":"KEPT",…}, written first.
CheckpointFile safetensors(const std::string& stem, const ModelTensors& m) {
  const auto root_of = [&](std::size_t i) { return m.state[i].same_as < 0 ? i : static_cast<std::size_t>(m.state[i].same_as); };
  std::vector<std::size_t> kept(m.state.size());  // a tensor's first entry -> the entry whose name save_model keeps
  for (std::size_t i = 0; i < m.state.size(); ++i)
    if (root_of(i) == i || m.state[i].name < m.state[kept[root_of(i)]].name) kept[root_of(i)] = i;
  std::vector<const NamedTensor*> order;
  std::int64_t metadata = 0;  // "__metadata__":{…}, with its comma
  for (std::size_t i = 0; i < m.state.size(); ++i) {
    const std::size_t root = root_of(i);
    if (kept[root] == i) {
      order.push_back(&m.state[i]);
    } else {  // "DROPPED":"KEPT",
      metadata += static_cast<std::int64_t>(m.state[i].name.size() + m.state[kept[root]].name.size()) + 6;
    }
  }
  if (metadata) metadata += 17;  // "__metadata__":{}, (the last entry's comma stands for the object's)
  std::stable_sort(order.begin(), order.end(), [](const NamedTensor* a, const NamedTensor* b) {
    const auto sa = dtype_size(a->type.dtype), sb = dtype_size(b->type.dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });
  std::int64_t header = 2 + metadata, offset = 0;  // the braces
  for (const NamedTensor* t : order) {
    const std::int64_t end = checked_add(offset, t->type.bytes());
    // "NAME":{"dtype":"F32","shape":[…],"data_offsets":[A,B]},
    std::int64_t shape = 2 + (t->type.shape.empty() ? 0 : static_cast<std::int64_t>(t->type.shape.size()) - 1);
    for (std::int64_t d : t->type.shape) shape += digits(d);
    const auto dtype = static_cast<std::int64_t>(std::string(safetensors_dtype_name(t->type.dtype)).size());
    header += static_cast<std::int64_t>(t->name.size()) + 3 + 10 + dtype + 10 + shape + 17 + digits(offset) + 1 + digits(end) + 2 + 1;
    offset = end;
  }
  if (!order.empty()) header -= 1;  // no comma after the last entry
  header = (header + 7) / 8 * 8;    // padded with spaces to 8 bytes
  CheckpointFile f;
  f.name = stem + ".safetensors";
  f.parts = {{"tensor data", offset, false}, {"header: its length and the JSON (names, dtypes, shapes, offsets)", 8 + header, true}};
  f.bytes = checked_add(offset, 8 + header);
  return f;
}

std::int64_t varint(std::int64_t v) {
  std::int64_t n = 1;
  for (auto u = static_cast<std::uint64_t>(v); u >= 128; u >>= 7) ++n;
  return n;
}

// TensorFlow's tensor bundle (tf.train.Saver, tf.train.Checkpoint): the .data shard holds every
// variable's raw bytes back to back; the .index is a table with an entry per variable (its name,
// dtype, shape, offset, size and checksum), modelled from the format's protobufs, not measured.
std::vector<CheckpointFile> tensorflow(const ModelTensors& m, const detail::OptimizerLayout* layout, OptimizerKind kind) {
  std::vector<std::pair<std::string, TensorType>> variables;
  std::vector<const NamedTensor*> tensors;  // the model's variables' tensors, in their order
  std::int64_t weights = 0, state = 0;
  for (const auto& t : m.state) {
    if (t.same_as >= 0) continue;  // a tied weight is one variable
    if (t.type.dtype == DType::Int64 && t.type.shape.empty()) continue;  // num_batches_tracked: TensorFlow has none
    variables.emplace_back(t.name, t.type);
    tensors.push_back(&t);
    weights = checked_add(weights, t.type.bytes());
  }
  if (layout) {
    // (Each variable's tensor was found again by name: 13 s for 100,000 layers.)
    for (const NamedTensor* t : tensors) {
      if (!t->trainable) continue;
      // Adam's slots m and v (TF1: VAR/Adam, VAR/Adam_1), momentum's VAR/Momentum; no per-variable step.
      for (const auto& slot : layout->slots)
        if (slot.like_param) {
          variables.emplace_back(t->name + "/" + slot.name, t->type);
          state = checked_add(state, t->type.bytes());
        }
    }
    if (kind == OptimizerKind::Adam || kind == OptimizerKind::AdamW || kind == OptimizerKind::AMSGrad)
      for (const char* scalar : {"beta1_power", "beta2_power"}) {  // TF1's AdamOptimizer (Keras keeps an int64 `iter`)
        variables.emplace_back(scalar, TensorType{{}, DType::Float32});
        state = checked_add(state, 4);
      }
  }
  std::int64_t index = 48 + 20, offset = 0;  // the footer, the header entry
  for (const auto& [name, type] : variables) {
    std::int64_t shape = 0;
    for (std::int64_t d : type.shape) shape += 3 + varint(d);
    const std::int64_t entry = 2 + 2 + varint(shape) + shape + (offset ? 1 + varint(offset) : 0) + 1 + varint(type.bytes()) + 5;
    index += 3 + static_cast<std::int64_t>(name.size()) + entry;
    offset = checked_add(offset, type.bytes());
  }
  index += 4 * (static_cast<std::int64_t>(variables.size()) / 16 + 2) + 5 + 30;  // restarts, trailer, index block
  CheckpointFile data{"model.ckpt.data-00000-of-00001", {{"variables", weights, false}}, offset, true};
  if (layout) data.parts.push_back({"optimizer slots and scalars", state, false});
  CheckpointFile idx{"model.ckpt.index", {{"index table (about)", index, true}}, index, true};
  return {data, idx};
}

Checkpoint checkpoint_of(std::vector<CheckpointFile> files) {
  Checkpoint c;
  for (const auto& f : files) {
    c.bytes = checked_add(c.bytes, f.bytes);
    for (const auto& p : f.parts)
      if (!p.overhead) c.tensor_bytes = checked_add(c.tensor_bytes, p.bytes);
  }
  c.files = std::move(files);
  return c;
}

// Splits a torch file's tensor data into the model's parameters, buffers and each optimizer slot.
void split_tensor_data(CheckpointFile& f, const ModelTensors& m, bool with_model, const detail::OptimizerLayout* layout) {
  std::vector<CheckpointPart> parts;
  if (with_model) {
    CheckpointPart params{"parameters", 0, false}, buffers{"buffers", 0, false};
    for (const auto& t : m.state)
      if (t.same_as < 0) (t.buffer ? buffers : params).bytes = checked_add((t.buffer ? buffers : params).bytes, t.type.bytes());
    parts.push_back(params);
    if (buffers.bytes) parts.push_back(buffers);
  }
  if (layout)
    for (const auto& slot : layout->slots) {
      CheckpointPart part{slot.name, 0, false};
      for (const auto& t : m.state)
        if (t.trainable && t.same_as < 0) part.bytes = checked_add(part.bytes, detail::slot_bytes(slot, t));
      parts.push_back(part);
    }
  parts.insert(parts.end(), f.parts.begin() + 1, f.parts.end());  // the pickle and the zip
  f.parts = std::move(parts);
}

}  // namespace

CheckpointSizes checkpoint_sizes(const Graph& graph, const CheckpointOptions& options) {
  CheckpointSizes c;
  c.options = options;
  c.model = graph.spec.name;
  const std::string stem = options.file_stem.empty() ? graph.spec.name : options.file_stem;
  const ModelTensors m = model_tensors(graph);
  c.tensors = static_cast<std::int64_t>(m.state.size());
  const detail::OptimizerLayout layout = detail::optimizer_layout(options.optimizer, *options.torch, graph.spec.loc);
  const bool stateful = options.optimizer != OptimizerKind::None;
  const auto torch = [&](const std::string& name, bool with_model, bool with_optimizer) {
    CheckpointFile f = detail::torch_save(name, m, with_model, with_optimizer ? &layout : nullptr, options.optimizer, *options.torch);
    split_tensor_data(f, m, with_model, with_optimizer ? &layout : nullptr);
    return f;
  };
  try {
    switch (options.format) {
      case CheckpointFormat::Torch:
        c.weights = checkpoint_of({torch(stem, true, false)});
        c.training = checkpoint_of({torch(stem, true, stateful)});
        break;
      case CheckpointFormat::Safetensors: {
        // A training checkpoint keeps the optimizer beside the weights, torch.save'd (as Hugging
        // Face's Trainer writes optimizer.pt): safetensors holds tensors only.
        c.weights = checkpoint_of({safetensors(stem, m)});
        std::vector<CheckpointFile> files = {safetensors(stem, m)};
        if (stateful) files.push_back(torch("optimizer", false, true));
        c.training = checkpoint_of(std::move(files));
        break;
      }
      case CheckpointFormat::TensorFlow:
        c.weights = checkpoint_of(tensorflow(m, nullptr, options.optimizer));
        c.training = checkpoint_of(tensorflow(m, stateful ? &layout : nullptr, options.optimizer));
        break;
    }
  } catch (const OverflowError& e) {
    throw SizeError(graph.spec.loc, std::string("the checkpoint's size does not fit in 64 bits: ") + e.what());
  }
  return c;
}

std::vector<StateTensor> state_dict_tensors(const Graph& graph) { return model_tensors(graph).state; }

}  // namespace nnmem
