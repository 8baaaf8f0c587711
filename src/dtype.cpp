#include <array>
#include <charconv>
#include <string>

#include "nnmem/shape.hpp"

namespace nnmem {

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view safetensors;  // its name in a safetensors header
  std::int64_t size;
  bool floating;
};
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::Float32, "float32", "F32", 4, true},  {DType::Float16, "float16", "F16", 2, true},
    {DType::BFloat16, "bfloat16", "BF16", 2, true}, {DType::Float64, "float64", "F64", 8, true},
    {DType::Int64, "int64", "I64", 8, false},     {DType::Int32, "int32", "I32", 4, false},
    {DType::Int16, "int16", "I16", 2, false},     {DType::Int8, "int8", "I8", 1, false},
    {DType::UInt8, "uint8", "U8", 1, false},      {DType::Bool, "bool", "BOOL", 1, false},
}};
const DTypeInfo& info(DType d) { return kDTypes[static_cast<std::size_t>(d)]; }
}  // namespace

std::int64_t dtype_size(DType d) { return info(d).size; }
std::string_view dtype_name(DType d) { return info(d).name; }
std::string_view safetensors_dtype_name(DType d) { return info(d).safetensors; }
bool is_floating(DType d) { return info(d).floating; }
bool autocast_eligible(DType d) { return is_floating(d) && d != DType::Float64; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.name == name) return i.dtype;
  struct Alias { std::string_view alias; DType dtype; };
  static constexpr Alias aliases[] = {
      {"float", DType::Float32}, {"fp32", DType::Float32},   {"half", DType::Float16},
      {"fp16", DType::Float16},  {"bf16", DType::BFloat16},  {"double", DType::Float64},
      {"long", DType::Int64},    {"int", DType::Int32},
  };
  for (const auto& a : aliases)
    if (a.alias == name) return a.dtype;
  return std::nullopt;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  char digits[24];
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s.append(digits, std::to_chars(digits, digits + sizeof digits, shape[i]).ptr);
  }
  s += ']';
  return s;
}

}  // namespace nnmem
