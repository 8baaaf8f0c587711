// The CPU kernels a PyTorch version lacks for a 16-bit input (TorchProfile::cpu_kernel_gaps): a
// layer CPU bfloat16 autocast (or a bfloat16 or float16 model) would hand one is refused, not estimated.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "nnmem/layer.hpp"

namespace nnmem::detail {

/// Why the modelled version cannot run the layer of this type on the CPU with the input it is
/// handed (the message after the layer's title: what PyTorch raises, expected and found), or
/// nothing when it can. `result` is the layer's rule's: whether it holds parameters.
std::optional<std::string> cpu_kernel_gap(std::string_view type, const LayerCall& call, const LayerResult& result);

}  // namespace nnmem::detail
