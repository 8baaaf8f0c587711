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
using When = CpuKernelGap::When;
constexpr std::string_view kMixedNorm = "RuntimeError: expected scalar type BFloat16 but found Float";
constexpr std::string_view kHardtanhBackward = "RuntimeError: \"hardshrink_backward_cpu\" not implemented for 'BFloat16'";
constexpr std::string_view kTransposedAsPlain =
    "it runs a plain convolution: \"RuntimeError: Given groups=1, weight of size [4, 6, 2, 2], expected input[2, 4, 6, 8] "
    "to have 6 channels, but got 4 channels instead\", or with as many output channels as input channels that "
    "convolution's smaller output";
// A float16 gap in 1.13: "RuntimeError: \"<kernel>\" not implemented for 'Half'".
#define NNMEM_HALF(type, op, kernel) \
  CpuKernelGap { type, op, When::Always, "RuntimeError: \"" kernel "\" not implemented for 'Half'", DType::Float16 }
constexpr CpuKernelGap kCpuKernelGapsIn1_13[] = {
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
    {"ConvTranspose1d", "conv_transpose1d", When::Always, kTransposedAsPlain},
    {"ConvTranspose2d", "conv_transpose2d", When::Always, kTransposedAsPlain},
    {"ConvTranspose3d", "conv_transpose3d", When::Always, kTransposedAsPlain},
    // float16 (a float16 model; 1.13's CPU autocast takes bfloat16 only). Not listed though the
    // probe fails them: AdaptiveAvgPool1d/2d, whose output size 1 runs (as a mean) and others do
    // not; ChannelShuffle, whose training 1.13 refuses in every dtype (layers/shuffle.cpp).
    NNMEM_HALF("Linear", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("Conv1D", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("ColumnParallelLinear", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("RowParallelLinear", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("MultiheadAttention", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("RNN", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("GRU", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("LSTM", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("RNNCell", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("GRUCell", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("LSTMCell", "addmm", "addmm_impl_cpu_"),
    NNMEM_HALF("MatMul", "bmm", "bmm"),
    NNMEM_HALF("Conv1d", "conv1d", "slow_conv2d_cpu"),
    NNMEM_HALF("Conv2d", "conv2d", "slow_conv2d_cpu"),
    NNMEM_HALF("Conv3d", "conv3d", "compute_columns3d"),
    NNMEM_HALF("ConvTranspose1d", "conv_transpose1d", "slow_conv_transpose2d_out_cpu"),
    NNMEM_HALF("ConvTranspose2d", "conv_transpose2d", "slow_conv_transpose2d_out_cpu"),
    NNMEM_HALF("ConvTranspose3d", "conv_transpose3d", "slow_conv_transpose3d_out_cpu"),
    NNMEM_HALF("BatchNorm1d", "batch_norm", "batch_norm"),
    NNMEM_HALF("BatchNorm2d", "batch_norm", "batch_norm"),
    NNMEM_HALF("BatchNorm3d", "batch_norm", "batch_norm"),
    NNMEM_HALF("InstanceNorm1d", "instance_norm", "batch_norm"),
    NNMEM_HALF("InstanceNorm2d", "instance_norm", "batch_norm"),
    NNMEM_HALF("InstanceNorm3d", "instance_norm", "batch_norm"),
    NNMEM_HALF("GroupNorm", "group_norm", "GroupNormKernelImpl"),
    NNMEM_HALF("LayerNorm", "layer_norm", "LayerNormKernelImpl"),
    NNMEM_HALF("LayerNorm2d", "layer_norm", "LayerNormKernelImpl"),
    NNMEM_HALF("ReLU", "relu", "clamp_min_cpu"),
    NNMEM_HALF("ReLU6", "hardtanh", "clamp_scalar_cpu"),
    NNMEM_HALF("Hardtanh", "hardtanh", "clamp_scalar_cpu"),
    NNMEM_HALF("Hardsigmoid", "hardsigmoid", "hardsigmoid_cpu"),
    NNMEM_HALF("Hardswish", "hardswish", "hardswish_cpu"),
    NNMEM_HALF("LeakyReLU", "leaky_relu", "leaky_relu_cpu"),
    NNMEM_HALF("PReLU", "prelu", "prelu_cpu"),
    NNMEM_HALF("ELU", "elu", "elu_cpu"),
    NNMEM_HALF("CELU", "celu", "elu_cpu"),
    NNMEM_HALF("SELU", "selu", "elu_cpu"),
    NNMEM_HALF("GELU", "gelu", "GeluKernelImpl"),
    NNMEM_HALF("NewGELU", "tanh", "tanh_vml_cpu"),
    NNMEM_HALF("GLU", "glu", "glu_cpu"),
    NNMEM_HALF("SiLU", "silu", "silu_cpu"),
    NNMEM_HALF("Mish", "mish", "mish_cpu"),
    NNMEM_HALF("Sigmoid", "sigmoid", "sigmoid_cpu"),
    NNMEM_HALF("Tanh", "tanh", "tanh_vml_cpu"),
    NNMEM_HALF("Tanhshrink", "tanh", "tanh_vml_cpu"),
    NNMEM_HALF("LogSigmoid", "log_sigmoid", "log_sigmoid_cpu"),
    NNMEM_HALF("Softplus", "softplus", "softplus_cpu"),
    NNMEM_HALF("Threshold", "threshold", "threshold_cpu"),
    NNMEM_HALF("Softmax", "softmax", "softmax_lastdim_kernel_impl"),
    NNMEM_HALF("Softmin", "softmax", "softmax_lastdim_kernel_impl"),
    NNMEM_HALF("LogSoftmax", "log_softmax", "log_softmax_lastdim_kernel_impl"),
    NNMEM_HALF("Dropout", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("Dropout1d", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("Dropout2d", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("Dropout3d", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("AlphaDropout", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("DropPath", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("StochasticDepth", "bernoulli", "bernoulli_scalar_cpu_"),
    NNMEM_HALF("MaxPool1d", "max_pool1d", "max_pool2d"),
    NNMEM_HALF("MaxPool2d", "max_pool2d", "max_pool2d"),
    NNMEM_HALF("MaxPool3d", "max_pool3d", "max_pool3d_with_indices_cpu"),
    NNMEM_HALF("AvgPool1d", "avg_pool1d", "avg_pool2d"),
    NNMEM_HALF("AvgPool2d", "avg_pool2d", "avg_pool2d"),
    NNMEM_HALF("AvgPool3d", "avg_pool3d", "avg_pool3d_out_frame"),
    NNMEM_HALF("AdaptiveMaxPool1d", "adaptive_max_pool1d", "adaptive_max_pool2d"),
    NNMEM_HALF("AdaptiveMaxPool2d", "adaptive_max_pool2d", "adaptive_max_pool2d"),
    NNMEM_HALF("AdaptiveMaxPool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_cpu"),
    {"Upsample", "interpolate", When::Always,
     "RuntimeError: \"compute_indices_weights_nearest\" (linear, cubic: compute_indices_weights_linear, "
     "compute_indices_weights_cubic) not implemented for 'Half'",
     DType::Float16},
};
#undef NNMEM_HALF

constexpr CpuKernelGap kCpuKernelGapsIn2_13[] = {
    {"AvgPool3d", "avg_pool3d", When::Always, "NotImplementedError: \"avg_pool3d_out_frame\" not implemented for 'BFloat16'"},
    {"AvgPool3d", "avg_pool3d", When::Always, "NotImplementedError: \"avg_pool3d_out_frame\" not implemented for 'Half'",
     DType::Float16},
};

constexpr std::array kProfiles = {
    TorchProfile{
        .version = "2.13",
        .measured = "torch 2.13.0+cpu",
        .grad_sum_in_place = true,
        .prelu_weight_grad_elementwise = true,
        .lstm_onednn_on_cpu = true,
        .mha_forward_2x = true,
        .mha_fast_path_with_dropout = true,
        .cpu_kernel_gaps = kCpuKernelGapsIn2_13,
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
        .cpu_kernel_gaps = kCpuKernelGapsIn1_13,
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

std::string CpuKernelGap::failure() const {
  const std::string name(dtype_name(dtype));
  switch (when) {
    case When::BesideFloat32: return "refuses a " + name + " input beside float32 weights";
    case When::InBackward: return "has no " + name + " kernel, so training through it fails in backward";
    case When::Always: break;
  }
  return "has no " + name + " kernel";
}

const CpuKernelGap* TorchProfile::cpu_kernel_gap(std::string_view type, DType dtype) const {
  for (const CpuKernelGap& gap : cpu_kernel_gaps)
    if (gap.type == type && gap.dtype == dtype) return &gap;
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
