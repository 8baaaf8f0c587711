// What checkpoint.cpp and checkpoint_torch.cpp share: a model's tensors as a state_dict lists
// them, and the optimizer's per-parameter state as torch.optim keeps it.
#pragma once

#include <string>
#include <vector>

#include "nnmem/checkpoint.hpp"

namespace nnmem::detail {

using NamedTensor = StateTensor;

struct ModelTensors {
  std::vector<std::string> modules;   // named_modules() order: "" (the model), then containers before their children
  std::vector<NamedTensor> state;     // state_dict() order: each module's parameters, then its buffers
};

/// One tensor of an optimizer's per-parameter state: "exp_avg" (shaped like the parameter) or
/// "step" (a 0-dim float32 tensor).
struct SlotLayout {
  std::string name;
  bool like_param = true;
};

/// torch.optim's state per parameter after a step, for the modelled optimizers; `none_slot`:
/// torch 1.13's plain SGD stores {'momentum_buffer': None}.
struct OptimizerLayout {
  std::vector<SlotLayout> slots;
  bool none_slot = false;
};
OptimizerLayout optimizer_layout(OptimizerKind kind, const TorchProfile& version, const SourceLoc& where);

/// The tensor data of the optimizer's state.
std::int64_t slot_bytes(const SlotLayout& slot, const NamedTensor& param);

/// torch.save(obj, STEM.pt), where obj is the model's state_dict (`with_model`), the optimizer's
/// (`layout` not null), or {"model": …, "optimizer": …} (both): the zip, record by record.
CheckpointFile torch_save(const std::string& stem, const ModelTensors& model, bool with_model, const OptimizerLayout* layout,
                          OptimizerKind kind, const TorchProfile& version);

}  // namespace nnmem::detail
