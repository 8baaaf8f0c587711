// Checkpoint sizes on disk: the weights alone, and a training checkpoint (weights, buffers and
// the optimizer's state), in PyTorch's torch.save format, safetensors, or TensorFlow's
// checkpoint layout, component by component with the container's own overhead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"
#include "nnmem/profile.hpp"

namespace nnmem {

enum class CheckpointFormat { Torch, Safetensors, TensorFlow };

struct CheckpointOptions {
  CheckpointFormat format = CheckpointFormat::Torch;
  /// The optimizer whose state a training checkpoint holds: none, sgd, momentum, nesterov, adam,
  /// adamw or amsgrad (their state_dict layouts are modelled; others are an error).
  OptimizerKind optimizer = OptimizerKind::Adam;
  /// torch.save's layout differs by version (the profile's checkpoint fields).
  const TorchProfile* torch = &default_torch_profile();
  /// torch.save: the file's name without extension, which names the folder inside the zip that
  /// every record's name repeats; empty: the model's name.
  std::string file_stem;
};

/// One component of a file: tensor data of one kind, or the format's own bytes.
struct CheckpointPart {
  std::string name;          // "parameters", "buffers", "exp_avg", "pickle (data.pkl)", "zip headers and padding", …
  std::int64_t bytes = 0;
  bool overhead = false;     // the container's bytes, not tensor data
};

struct CheckpointFile {
  std::string name;          // "resnet18.pt", "model.ckpt.index"
  std::vector<CheckpointPart> parts;
  std::int64_t bytes = 0;    // the file's size: the sum of its parts
  bool modelled = false;     // not validated against the format here (TensorFlow's); the layout as documented
};

/// A checkpoint: one file, or several (safetensors' weights beside a torch.save'd optimizer,
/// TensorFlow's .data and .index).
struct Checkpoint {
  std::vector<CheckpointFile> files;
  std::int64_t bytes = 0;         // all files
  std::int64_t tensor_bytes = 0;  // the tensor data in them
};

struct CheckpointSizes {
  CheckpointOptions options;
  std::string model;
  std::int64_t tensors = 0;       // tensors in the weights (parameters and buffers)
  Checkpoint weights;             // model.state_dict()
  Checkpoint training;            // weights and buffers with the optimizer's state after a step
};

/// Checkpoint sizes for a built graph (its float dtype; the batch does not matter). Tensor names
/// are the layers' qualified names and the rules' parameter names, as in PyTorch's state_dict;
/// torch.save's pickle also lists every module, which the spec's layer names stand for: blocks
/// are the prefixes of qualified names, and layers without parameters named NAME_N beside a
/// NAME or NAME_M of the same type are further calls of one module NAME (as the examples name
/// them). Throws nnmem::Error for an optimizer whose state layout is not modelled.
CheckpointSizes checkpoint_sizes(const Graph& graph, const CheckpointOptions& options);

/// A tensor of model.state_dict(): its key ("layer1.0.conv1.weight") and type.
struct StateTensor {
  std::string name;
  TensorType type;
  bool buffer = false;
  bool trainable = false;
  /// The index of an earlier entry that is the same tensor (a tied or shared parameter): state_dict
  /// lists it under both names, torch.save writes its storage once, the optimizer keeps one state,
  /// safetensors' save_model keeps one name; -1 for a tensor of its own.
  int same_as = -1;
};

/// model.state_dict()'s tensors in its order, named as checkpoint_sizes() names them (validated
/// against the files PyTorch writes for the validation networks).
std::vector<StateTensor> state_dict_tensors(const Graph& graph);

}  // namespace nnmem
