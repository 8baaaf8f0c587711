// Helpers shared by layer rules: input checks with messages that name expected and actual
// values, and the sliding-window size arithmetic of convolutions and pooling.
#pragma once

#include <string>
#include <vector>

#include "nnmem/layer.hpp"

namespace nnmem::layers {

/// "Conv1d" -> 1, "MaxPool3d" -> 3: the spatial rank in a class name's "Nd" suffix.
std::string rank_name(int rank);  // 2 -> "2-D"

/// Throws unless input `i` has between min_rank and max_rank dimensions (batch included).
void require_rank(const LayerCall& call, std::size_t min_rank, std::size_t max_rank, const std::string& layout,
                  std::size_t i = 0);

/// "[N, C, L]", "[N, C, H, W]", "[N, C, D, H, W]": the layout of a rank-D spatial input.
std::string spatial_layout(int rank);

/// Pooling's result: the output, and — when backward runs — the input it keeps and, for max
/// pooling, the int64 indices of each maximum (output-shaped).
LayerResult pooled(const LayerCall& call, Shape out, bool keeps_indices);

/// One output of `shape`, the input's dtype, a view of the input's storage (keeping nothing).
LayerResult view_of(const LayerCall& call, Shape shape);
/// view_of for a view op (view, flatten, squeeze, transpose, permute...), whose backward views
/// the output's gradient back (ViewBackward0, SqueezeBackward0...): a view, which torch 2.x's
/// InputBuffer never sums into in place (LayerResult::input_grad_view; torch2-differences.md, R1).
LayerResult view_op(const LayerCall& call, Shape shape);

/// PyTorch's type promotion (c10::promoteTypes) for nnmem's dtypes: the result's dtype of a
/// binary op on tensors of these dtypes.
DType promote(DType a, DType b);

/// Throws unless input `i` is a floating-point tensor.
void require_float(const LayerCall& call, std::size_t i = 0);

/// Normalises a possibly negative dimension index against `rank`; throws naming `attr`.
std::size_t normalize_dim(std::int64_t dim, std::size_t rank, const std::string& attr);

/// When the spec gives `attr` (e.g. in_channels), it must equal what the input provides.
void check_declared(const LayerCall& call, const std::string& attr, std::int64_t actual, const std::string& what);

/// One spatial dimension of a sliding window.
struct Window {
  std::int64_t input, kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

/// Output length of a convolution or pooling window: floor((L + 2p - d(k-1) - 1) / s) + 1,
/// with PyTorch's ceil_mode rule (pooling_output_shape). Throws (naming `dim`) when the length
/// is below 1.
std::int64_t window_output(const Window& w, const std::string& dim);

/// A real number as a person writes it (1.5, 0.1, 2): for messages.
std::string real_text(double value);

/// "height" / "width" / "length" / "depth" for a spatial index out of `rank` dimensions.
std::string dim_name(std::size_t index, std::size_t rank);

}  // namespace nnmem::layers
