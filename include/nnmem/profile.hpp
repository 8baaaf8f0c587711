// The PyTorch version whose behaviour nnmem models. Everything that changed between versions —
// what an autograd node keeps, how gradients are summed and accumulated, the optimizers'
// temporaries — is one field of a TorchProfile, consulted by the rules (through their Context)
// and by the step simulation; no other code asks which version it is.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "nnmem/dtype.hpp"

namespace nnmem {

/// A layer type whose CPU kernel cannot take a 16-bit input in some version: what PyTorch
/// raises, and when (validation/probe_autocast_113.py, validation/ops_saved_autocast.md). It
/// applies where the layer computes in that dtype: its input and its output are in it (a
/// Softmax with `dtype: float32` casts its input first, and runs).
struct CpuKernelGap {
  enum class When {
    Always,         // forward raises whatever else the layer holds
    BesideFloat32,  // forward raises when the layer's parameters are not bfloat16 (autocast's float32 model)
    InBackward,     // only backward raises: training, the input needing a gradient; eval runs
  };
  std::string_view type;   // the layer type (a PyTorch class name)
  std::string_view op;     // the aten op that fails: "layer_norm"
  When when = When::Always;
  std::string_view error;  // what PyTorch raises, verbatim
  DType dtype = DType::BFloat16;  // the input it cannot take: bfloat16 or float16

  /// What fails, after the op's name: "has no bfloat16 kernel, so training through it fails
  /// in backward" (the error message and `nnmem layers TYPE` both say it this way).
  std::string failure() const;
};

struct TorchProfile {
  std::string_view version;    // what --torch takes: "2.13"
  std::string_view measured;   // the build the CPU figures are validated against
  // --- which layers exist
  // Layer types (PyTorch class names) this version does not have: nn.ZeroPad1d/3d and
  // nn.CircularPad1d/2d/3d are missing from 1.13 (hasattr(torch.nn, ...) is False there).
  std::span<const std::string_view> absent_layers = {};
  // nn.RMSNorm / F.rms_norm exist (2.4+; 1.13.1 has neither). RMSNorm form: hf, transformers'
  // hand-written LlamaRMSNorm, runs on any version.
  bool rms_norm_op = true;
  // Layer types CPU autocast runs in float32 (inputs cast up, the weight used as it is): 1.13's
  // fp32 list has conv_transpose1d/2d/3d, which 2.x moved to the lower-precision one
  // (validation/fixtures: unet_valid's ConvTranspose2d under bfloat16 keeps float32 tensors).
  std::span<const std::string_view> cpu_autocast_float32 = {};
  // Layer types CPU autocast leaves alone here (they run in their input's dtype, the weight as it
  // is) though their usual list is the lower-precision one: 1.13's CPU list lacks prelu, which
  // 2.x casts (input and weight to bfloat16, the weight's copy kept for backward; validation/
  // ops_saved_zoo.md, zoo_net's autocast runs).
  std::span<const std::string_view> cpu_autocast_uncast = {};
  // torch.autocast("cpu", torch.float16) runs (2.x); 1.13 raises "Currently, AutocastCPU only
  // support Bfloat16 as the autocast_cpu_dtype".
  bool cpu_autocast_float16 = true;

  // --- the autograd engine
  // Two gradients of one tensor (a residual fork, a weight used twice): 2.x's InputBuffer adds
  // the second into the first in place when the first is a whole, dense tensor nothing else
  // references — not a view of another tensor (LayerResult::input_grad_view: a view op's, a Linear's on more
  // than two dimensions, whose storage its 2-D base shares); 1.13 always makes `old + new`
  // (validation/torch2-differences.md, R1).
  bool grad_sum_in_place = false;

  // --- what backward keeps and allocates
  // A saved wrapped number (a Python scalar made a 0-dim tensor, like K in `loss / K`) goes
  // through saved_tensors_hooks in 1.13; 2.x saves it without them. Either way it is kept: this
  // decides only whether it counts as "saved" (what the hooks see).
  bool hooks_see_wrapped_numbers = false;
  // x.mean(dims): 1.13's MeanBackward1 keeps the input (`_saved_self`), 2.13's only sizes. So
  // do the Mean layer and global average pooling (AdaptiveAvgPool*d to size 1, which runs
  // input.mean(spatial dims); other output sizes keep the input in both): validation/
  // ops_saved_zoo.md, fixtures/torch-1.13/bow_sparse.json.
  bool mean_keeps_input = false;
  // Unfold (im2col): 1.13's Im2ColBackward0 keeps its input (`_saved_self`); 2.13's keeps
  // only sizes (validation/ops_saved_zoo.md).
  bool im2col_keeps_input = false;
  // cross_entropy with label_smoothing: 2.x zeroes the ignored positions of the smoothed loss
  // with masked_fill_ and divides its sum by the count kept (keeps the bool mask and an int64
  // count); 1.13 with index_put_ and masked_select(~mask).mean() (keeps the smoothed loss [N],
  // the mask and ~mask). validation/fixtures/torch-*/lstm_lm_smoothed.json.
  bool smoothing_masked_select = false;
  // PReLU: 2.13's _prelu_kernel_backward computes the weight's gradient element-wise, an
  // input-sized tensor, and sums it down (measured: +input +input +weight -input); 1.13's
  // prelu_backward allocates only the two gradients.
  bool prelu_weight_grad_elementwise = false;
  // ChannelShuffle: 1.13 has no derivative for channel_shuffle (backward raises "derivative
  // for channel_shuffle is not implemented"); 2.13 has ChannelShuffleBackward0.
  bool channel_shuffle_differentiable = true;

  // nn.LSTM on the CPU (float32, no proj_size): 2.x runs oneDNN's LSTM (mkldnn_rnn_layer, one
  // call per layer and direction), whose backward keeps the layer's input, output, final states
  // and an opaque uint8 workspace; 1.13 runs the generic path, a graph of per-step ops keeping
  // each step's gates and states. RNN, GRU, the cells and an LSTM with proj_size take the
  // generic path in both (validation/probe_recurrent.py).
  bool lstm_onednn_on_cpu = false;
  // nn.MultiheadAttention (F.multi_head_attention_forward): 2.x makes the packed q/k/v
  // projection contiguous in one copy and, with need_weights=False, calls
  // scaled_dot_product_attention; 1.13 copies q, k and v one by one and always runs the explicit
  // bmm/softmax/bmm, dividing q by sqrt(head size) (validation/ops_saved_mha.md).
  bool mha_forward_2x = false;
  // nn.MultiheadAttention's inference fast path (torch._native_multi_head_attention, eval()
  // without gradient, batch_first self-attention): 2.x takes it whatever the dropout (unused in
  // eval); 1.13 refuses it when dropout is not 0 and runs the explicit path.
  bool mha_fast_path_with_dropout = false;

  // --- which dtypes kernels take
  // Reflection and replication padding's kernels: 1.13's take floating point only, and on the
  // CPU float32/float64 only (all but reflection_pad3d: "reflection_pad2d" not implemented for
  // 'BFloat16'); 2.13's take every dtype but bool (validation/ops_saved_zoo.md).
  bool pad_kernels_float_only = false;
  // Layers whose CPU kernels cannot take a bfloat16 input here, as CPU bfloat16 autocast hands
  // them over from a bfloat16 layer before them (a float32 model): 1.13's layer_norm and
  // group_norm refuse a bfloat16 input beside float32 weights (LayerNorm, LayerNorm2d, GroupNorm;
  // fine without weights), its mish has no bfloat16 kernel and its hardtanh no bfloat16 backward
  // (Hardtanh, ReLU6). 2.13 runs them all. A bfloat16 model (no autocast) meets the 3-D poolings'
  // gaps (autocast runs them in float32): 1.13 has no bfloat16 max_pool3d, avg_pool3d,
  // adaptive_avg_pool3d or adaptive_max_pool3d, 2.13 no avg_pool3d (validation/probe_autocast_113.py).
  // 1.13's bfloat16 conv_transpose1d/2d/3d run a plain convolution (an error, or with as many
  // output channels as input channels that convolution's smaller output). And 1.13's CPU has
  // almost no float16 kernel (a float16 model: Linear's "addmm_impl_cpu_" not implemented for
  // 'Half'): every layer the probe's --f16-model table fails is listed for float16.
  std::span<const CpuKernelGap> cpu_kernel_gaps = {};

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

  // --- checkpoints on disk (torch.save; validation/checkpoint_sizes.py)
  // 2.x's zip holds four more small records: .format_version, .storage_alignment, byteorder
  // and .data/serialization_id.
  bool save_extra_records = false;
  // 1.13 writes the storages' records sorted by key as strings (data/0, data/1, data/10, data/11,
  // data/2, …); 2.x in the order the pickle meets them. The 64-byte alignment makes it a size.
  bool save_storages_sorted_as_text = true;
  // The optimizers' param_groups in 2.x have more keys: SGD's `fused`, Adam's
  // `decoupled_weight_decay`, and AdamW the whole Adam list (1.13's AdamW has a shorter one).
  bool param_groups_2x_keys = false;
  // Plain SGD's state_dict holds a `momentum_buffer: None` per parameter in 1.13, nothing in 2.x.
  bool sgd_state_momentum_none = false;

  // --- data parallelism (DistributedDataParallel)
  // The first gradient bucket's cap after DDP rebuilds its buckets: 1 MiB
  // (dist._DEFAULT_FIRST_BUCKET_BYTES) in 1.13 whatever bucket_cap_mb is; in 2.x 1 MiB only
  // with the default bucket_cap_mb, else bucket_cap_mb like the rest (BucketCapacityConfig).
  bool ddp_first_bucket_follows_cap = false;

  /// Whether this version has the layer type (a PyTorch class name).
  bool has_layer(std::string_view type) const;
  /// Whether CPU autocast runs the layer type in float32 here, whatever its usual list.
  bool cpu_autocast_in_float32(std::string_view type) const;
  /// Whether CPU autocast leaves the layer type in its input's dtype here, whatever its usual list.
  bool cpu_autocast_uncasts(std::string_view type) const;
  /// What the layer type's CPU kernel cannot do with an input of this dtype here, or nullptr.
  const CpuKernelGap* cpu_kernel_gap(std::string_view type, DType dtype) const;
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
