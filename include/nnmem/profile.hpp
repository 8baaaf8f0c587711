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
  /// F.scaled_dot_product_attention and its fused kernels exist (added in 2.0; 1.13 has none:
  /// `torch.nn.functional.scaled_dot_product_attention` is missing from 1.13.1).
  bool sdpa = false;
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
