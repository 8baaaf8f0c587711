#include "common.hpp"

#include <sstream>

namespace nnmem::layers {

std::string rank_name(int rank) { return std::to_string(rank) + "-D"; }

std::string spatial_layout(int rank) {
  return rank == 1 ? "[N, C, L]" : rank == 2 ? "[N, C, H, W]" : rank == 3 ? "[N, C, D, H, W]" : "[N, C, *]";
}

LayerResult view_of(const LayerCall& call, Shape shape) {
  LayerResult res;
  res.outputs.push_back({std::move(shape), call.input().dtype});
  res.alias = Alias::View;
  return res;
}

LayerResult view_op(const LayerCall& call, Shape shape) {
  LayerResult res = view_of(call, std::move(shape));
  res.input_grad_view = true;
  return res;
}

LayerResult pooled(const LayerCall& call, Shape out, bool keeps_indices) {
  LayerResult res;
  res.outputs.push_back({out, call.input().dtype});
  if (call.training() && call.input_requires_grad()) {
    res.save_input(0);
    if (keeps_indices) res.save_extra({std::move(out), DType::Int64}, "indices");
  }
  return res;
}

void require_rank(const LayerCall& call, std::size_t min_rank, std::size_t max_rank, const std::string& layout,
                  std::size_t i) {
  const std::size_t r = call.shape(i).size();
  if (r >= min_rank && r <= max_rank) return;
  std::string expected = min_rank == max_rank ? std::to_string(min_rank) + "-D"
                                              : std::to_string(min_rank) + "-D to " + std::to_string(max_rank) + "-D";
  throw LayerError("expected a " + expected + " input " + layout + ", found " + std::to_string(r) + "-D " +
                   to_string(call.shape(i)));
}

void require_float(const LayerCall& call, std::size_t i) {
  if (!is_floating(call.input(i).dtype))
    throw LayerError("expected a floating-point input, found " + std::string(dtype_name(call.input(i).dtype)));
}

std::size_t normalize_dim(std::int64_t dim, std::size_t rank, const std::string& attr) {
  const auto r = static_cast<std::int64_t>(rank);
  if (dim < -r || dim >= r)
    throw LayerError(attr + " must be in [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "] for a " +
                         std::to_string(rank) + "-D input, found " + std::to_string(dim),
                     attr);
  return static_cast<std::size_t>(dim < 0 ? dim + r : dim);
}

void check_declared(const LayerCall& call, const std::string& attr, std::int64_t actual, const std::string& what) {
  if (!call.attrs.given(attr)) return;
  const std::int64_t declared = call.attrs.integer(attr);
  if (declared != actual)
    throw LayerError(attr + " is " + with_commas(declared) + ", but the input " + to_string(call.shape()) + " has " +
                         with_commas(actual) + " " + what,
                     attr);
}

std::string real_text(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

std::string dim_name(std::size_t index, std::size_t rank) {
  static const char* const names1[] = {"length"};
  static const char* const names2[] = {"height", "width"};
  static const char* const names3[] = {"depth", "height", "width"};
  if (rank == 1) return names1[index];
  if (rank == 2) return names2[index];
  if (rank == 3) return names3[index];
  return "dimension " + std::to_string(index);
}

std::int64_t window_output(const Window& w, const std::string& dim) {
  // PyTorch's pooling_output_shape (Pool.h): div_rtn((L + 2p - d(k-1) - 1 [+ s - 1 in ceil mode]), s) + 1,
  // then, in ceil mode, drop a last window that would start in the right padding; only a size
  // below 1 is an error. So ceil mode lets a window overhang a small input: MaxPool2d(3, 2,
  // ceil_mode=True) on 2x2 gives 1x1. Without ceil mode (always, for convolutions) a size below
  // 1 means exactly that the kernel's extent exceeds the padded input, which is how PyTorch's
  // convolutions put it ("Kernel size can't be greater than actual input size").
  const std::int64_t effective = checked_add(checked_mul(w.dilation, w.kernel - 1), 1);
  const std::int64_t padded = checked_add(w.input, checked_mul(2, w.padding));
  // PyTorch's `span + s - 1` and `(out - 1) * s` overflow int64 for a huge stride (found in
  // review during fuzzing: tests/fuzz/regressions/pool_huge_stride.yaml), so both are written
  // without them: div_rtn(span + s - 1, s) is ceil(span / s), and, for a positive `input +
  // padding` L, the last window starts in the right padding, (out - 1) * s >= L, exactly when
  // out - 1 >= ceil(L / s).
  const std::int64_t span = checked_sub(padded, effective);
  const std::int64_t q = span / w.stride, rem = span % w.stride;
  std::int64_t out = (w.ceil_mode ? q + (rem > 0 ? 1 : 0) : q - (rem < 0 ? 1 : 0)) + 1;
  const std::int64_t without_right_padding = checked_add(w.input, w.padding);
  if (w.ceil_mode && out - 1 >= (without_right_padding - 1) / w.stride + 1) --out;
  if (out < 1)
    throw LayerError("the input " + dim + " is " + std::to_string(w.input) + " (" + std::to_string(padded) +
                     " with padding), smaller than the kernel's extent " + std::to_string(effective) +
                     "; the output would be empty");
  return out;
}

// PyTorch's type promotion (c10::promoteTypes) for nnmem's dtypes, checked against torch 1.13
// on every pair: bool yields to anything; a float beats an integer; of two floats or two
// integers the wider wins, except that float16 with bfloat16 needs float32 and uint8 with int8
// needs int16 (neither holds the other's range).
DType promote(DType a, DType b) {
  if (a == b || b == DType::Bool) return a;
  if (a == DType::Bool) return b;
  if (is_floating(a) != is_floating(b)) return is_floating(a) ? a : b;
  if (dtype_size(a) != dtype_size(b)) return dtype_size(a) > dtype_size(b) ? a : b;
  return is_floating(a) ? DType::Float32 : DType::Int16;  // {float16, bfloat16} or {int8, uint8}
}

}  // namespace nnmem::layers
