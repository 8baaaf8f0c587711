// scaled_dot_product_attention's choice of kernel, as `kernel: auto` makes it: one rule for
// ScaledDotProductAttention (attention.cpp) and the call nn.MultiheadAttention makes in 2.x
// (multihead_attention.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common.hpp"

namespace nnmem::layers {

enum class SdpaKernel { Math, Flash, Efficient, Cudnn };

// On the CPU flash for 4-D inputs whose value head size equals the query's, without dropout
// and without a mask that needs a gradient (the CPU flash kernel gives it none, and PyTorch
// does not choose it then), else math (measured); on CUDA flash for 16-bit inputs without a
// mask, else efficient, else math (sdp_utils.cpp's order; not measured). `head` and `v_head`
// are the query's and the value's last dimensions.
SdpaKernel sdpa_auto(Device device, DType dtype, std::size_t rank, std::int64_t head, std::int64_t v_head, bool masked,
                     bool mask_needs_grad, double dropout);

}  // namespace nnmem::layers
