// The PyTorch versions nnmem models, each with what it measured to know it (validation/,
// docs/accuracy.md). A difference between versions is a field here, never an `if` on the
// version elsewhere.
#include "nnmem/profile.hpp"

#include <array>

namespace nnmem {

namespace {

// ScaledDotProductAttention: F.scaled_dot_product_attention is 2.0's.
constexpr std::array<std::string_view, 6> kAbsentIn1_13 = {"ZeroPad1d",     "ZeroPad3d", "CircularPad1d", "CircularPad2d",
                                                           "CircularPad3d", "ScaledDotProductAttention"};

constexpr std::array<std::string_view, 3> kCpuAutocastFloat32In1_13 = {"ConvTranspose1d", "ConvTranspose2d",
                                                                        "ConvTranspose3d"};

constexpr std::array<std::string_view, 1> kCpuAutocastUncastIn1_13 = {"PReLU"};

// validation/probe_autocast_113.py: torch 1.13's errors, verbatim (hardtanh_backward's CPU
// kernel reports itself as hardshrink_backward_cpu).
using When = CpuBfloat16Gap::When;
constexpr std::string_view kMixedNorm = "RuntimeError: expected scalar type BFloat16 but found Float";
constexpr std::string_view kHardtanhBackward = "RuntimeError: \"hardshrink_backward_cpu\" not implemented for 'BFloat16'";
constexpr std::array<CpuBfloat16Gap, 10> kCpuBfloat16GapsIn1_13 = {{
    {"LayerNorm", "layer_norm", When::BesideFloat32, kMixedNorm},
    {"LayerNorm2d", "layer_norm", When::BesideFloat32, kMixedNorm},
    {"GroupNorm", "group_norm", When::BesideFloat32, kMixedNorm},
    {"Mish", "mish", When::Always, "RuntimeError: \"mish_cpu\" not implemented for 'BFloat16'"},
    {"Hardtanh", "hardtanh_backward", When::InBackward, kHardtanhBackward},
    {"ReLU6", "hardtanh_backward", When::InBackward, kHardtanhBackward},
    {"MaxPool3d", "max_pool3d", When::Always,
     "RuntimeError: \"max_pool3d_with_indices_cpu\" not implemented for 'BFloat16'"},
    {"AvgPool3d", "avg_pool3d", When::Always, "RuntimeError: \"avg_pool3d_out_frame\" not implemented for 'BFloat16'"},
    {"AdaptiveAvgPool3d", "adaptive_avg_pool3d", When::Always,
     "RuntimeError: \"adaptive_avg_pool3d_cpu\" not implemented for 'BFloat16'"},
    {"AdaptiveMaxPool3d", "adaptive_max_pool3d", When::Always,
     "RuntimeError: \"adaptive_max_pool3d_cpu\" not implemented for 'BFloat16'"},
}};
// 2.13 raises NotImplementedError where 1.13 raised RuntimeError.
constexpr std::array<CpuBfloat16Gap, 1> kCpuBfloat16GapsIn2_13 = {{
    {"AvgPool3d", "avg_pool3d", When::Always, "NotImplementedError: \"avg_pool3d_out_frame\" not implemented for 'BFloat16'"},
}};

constexpr std::array kProfiles = {
    TorchProfile{
        .version = "2.13",
        .measured = "torch 2.13.0+cpu",
        .grad_sum_in_place = true,
        .prelu_weight_grad_elementwise = true,
        .lstm_onednn_on_cpu = true,
        .mha_forward_2x = true,
        .mha_fast_path_with_dropout = true,
        .cpu_bfloat16_gaps = kCpuBfloat16GapsIn2_13,
        .checkpoint_early_stop = true,
        .checkpoint_unpack_hands_over = true,
        .foreach_adam_one_list = true,
        .fused_sgd = true,
        .fused_on_cpu = true,
        .save_extra_records = true,
        .save_storages_sorted_as_text = false,
        .param_groups_2x_keys = true,
        .ddp_first_bucket_follows_cap = true,
    },
    TorchProfile{
        .version = "1.13",
        .measured = "torch 1.13.1 (Debian's python3-torch)",
        .absent_layers = kAbsentIn1_13,
        .rms_norm_op = false,
        .cpu_autocast_float32 = kCpuAutocastFloat32In1_13,
        .cpu_autocast_uncast = kCpuAutocastUncastIn1_13,
        .cpu_autocast_float16 = false,
        .hooks_see_wrapped_numbers = true,
        .mean_keeps_input = true,
        .im2col_keeps_input = true,
        .smoothing_masked_select = true,
        .channel_shuffle_differentiable = false,
        .pad_kernels_float_only = true,
        .cpu_bfloat16_gaps = kCpuBfloat16GapsIn1_13,
        .sgd_state_momentum_none = true,
    },
};

bool listed(std::span<const std::string_view> types, std::string_view type) {
  for (std::string_view t : types)
    if (t == type) return true;
  return false;
}

}  // namespace

bool TorchProfile::has_layer(std::string_view type) const { return !listed(absent_layers, type); }

bool TorchProfile::cpu_autocast_in_float32(std::string_view type) const { return listed(cpu_autocast_float32, type); }

bool TorchProfile::cpu_autocast_uncasts(std::string_view type) const { return listed(cpu_autocast_uncast, type); }

const CpuBfloat16Gap* TorchProfile::cpu_bfloat16_gap(std::string_view type) const {
  for (const CpuBfloat16Gap& gap : cpu_bfloat16_gaps)
    if (gap.type == type) return &gap;
  return nullptr;
}

std::span<const TorchProfile> torch_profiles() { return kProfiles; }

const TorchProfile& default_torch_profile() { return kProfiles.front(); }

const TorchProfile* find_torch_profile(std::string_view version) {
  for (const TorchProfile& p : kProfiles)
    if (p.version == version) return &p;
  return nullptr;
}

std::string torch_versions() {
  std::string s;
  for (const TorchProfile& p : kProfiles) s += (s.empty() ? "" : ", ") + std::string(p.version);
  return s;
}

}  // namespace nnmem
