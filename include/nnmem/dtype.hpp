// Element types of tensors, and their sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nnmem {

enum class DType : std::uint8_t {
  Float32, Float16, BFloat16, Float64, Int64, Int32, Int16, Int8, UInt8, Bool
};

/// Bytes per element (PyTorch's element_size()).
std::int64_t dtype_size(DType dtype);
/// PyTorch's spelling: "float32", "int64", "bool", …
std::string_view dtype_name(DType dtype);
/// How safetensors spells it: "F32", "BF16", "I64", "BOOL".
std::string_view safetensors_dtype_name(DType dtype);
/// Accepts PyTorch's names and the common aliases ("float", "half", "long", "fp16", "bf16").
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType dtype);
/// Whether torch.autocast casts a tensor of this dtype (at::autocast::is_eligible): floating
/// point, except float64, which it never touches.
bool autocast_eligible(DType dtype);

}  // namespace nnmem
