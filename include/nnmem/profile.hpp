// The PyTorch version whose behaviour nnmem models. Everything that changed between versions —
// what an autograd node keeps, how gradients are summed and accumulated, the optimizers'
// temporaries — is one field of a TorchProfile, consulted by the rules (through their Context)
// and by the step simulation; no other code asks which version it is.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace nnmem {

struct TorchProfile {
  std::string_view version;    // what --torch takes: "2.13"
  std::string_view measured;   // the build the CPU figures are validated against

  // --- the autograd engine
  // Two gradients of one tensor (a residual fork, a weight used twice): 2.x's InputBuffer adds
  // the second into the first in place when the first is a whole, dense tensor nothing else
  // references; 1.13 always makes `old + new` (validation/torch2-differences.md, R1).
  bool grad_sum_in_place = false;

  // --- what backward keeps
  // A saved wrapped number (a Python scalar made a 0-dim tensor, like K in `loss / K`) goes
  // through saved_tensors_hooks in 1.13; 2.x saves it without them. Either way it is kept: this
  // decides only whether it counts as "saved" (what the hooks see).
  bool hooks_see_wrapped_numbers = false;

  // Global average pooling (AdaptiveAvgPool*d to size 1): both run input.mean(spatial dims);
  // 1.13's MeanBackward1 keeps the input (`_saved_self`), 2.13's only sizes. Other output
  // sizes keep the input in both (validation/ops_saved_zoo.md).
  bool global_avg_pool_keeps_input = false;

  // --- torch.utils.checkpoint, non-reentrant (use_reentrant=False)
  // Recomputation stops once the last tensor the segment's nodes keep has been recomputed
  // (2.x's early_stop=True; 1.13 runs the whole segment again).
  bool checkpoint_early_stop = false;
  // A recomputed tensor is handed over on unpack (2.x pops it from the frame's store), so it
  // is freed as its node's apply returns, before the engine sums gradients down (Linear's
  // bias); 1.13 keeps it in the store until the node releases its saved variables.
  bool checkpoint_unpack_hands_over = false;

  // --- optimizers
  // foreach Adam/AdamW/AMSGrad: 2.x makes one list of sqrt temporaries and works in place,
  // after a 4-byte CPU tensor for the step increment; 1.13 makes the sqrt list and then a denom
  // list, both alive together (R3).
  bool foreach_adam_one_list = false;
  // fused=True: SGD has it (1.13: only Adam and AdamW do) and the fused kernels run on the CPU
  // (1.13: CUDA only). A fused step allocates nothing (R4).
  bool fused_sgd = false;
  bool fused_on_cpu = false;
};

/// Every profile nnmem has, newest first; the first is the default.
std::span<const TorchProfile> torch_profiles();
/// The newest validated version.
const TorchProfile& default_torch_profile();
/// The profile of a version ("1.13", "2.13"), or nullptr.
const TorchProfile* find_torch_profile(std::string_view version);
/// "2.13, 1.13": the versions, for messages and --help.
std::string torch_versions();

}  // namespace nnmem
