// Layers that move, copy or cut a tensor without arithmetic: Transpose, Permute, Expand (views),
// Contiguous (a copy), Slice and Select (views of part of the input), Split and Chunk (several
// outputs, each a view of a part), RepeatInterleave (a copy), To (a copy in another dtype, or x
// itself). Dimensions count the batch as 0.
// None keeps anything for backward (torch 2.13, validation/probe_transformer_ops.py), but their
// gradients differ: a transpose's is a view of the output's; an expand's is summed down to the
// input's shape; a slice's, select's and split's is written into a new input-sized tensor
// (zeros for the parts no gradient reached); a copy's is a new input-sized tensor.
#include <algorithm>
#include <numeric>
#include <span>

#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_transpose(const LayerCall& call) {
  Shape out = call.shape();
  const std::size_t a = normalize_dim(call.attrs.integer("dim0"), out.size(), "dim0");
  const std::size_t b = normalize_dim(call.attrs.integer("dim1"), out.size(), "dim1");
  std::swap(out[a], out[b]);
  LayerResult res = view_op(call, out);  // its backward transposes the output's gradient back
  const Layout in = call.inputs[0].layout;
  const bool contiguous = in == Layout::Contiguous;
  if (a == b) return res;
  if (std::min(a, b) == 1 && std::max(a, b) == 2 && (contiguous || in == Layout::Swapped12))
    res.layout = contiguous ? Layout::Swapped12 : Layout::Contiguous;
  else if (out.size() >= 4 && std::min(a, b) == out.size() - 2 && (contiguous || in == Layout::TransposedLast))
    res.layout = contiguous ? Layout::TransposedLast : Layout::Contiguous;
  else
    res.layout = Layout::Strided;
  return res;
}

LayerResult infer_permute(const LayerCall& call) {
  const Shape& in = call.shape();
  const auto dims = call.attrs.list("dims");
  if (dims.size() != in.size())
    throw LayerError("dims has " + std::to_string(dims.size()) + " entries, but the input " + to_string(in) + " has " +
                         std::to_string(in.size()) + " dimensions",
                     "dims");
  Shape out;
  std::vector<bool> used(in.size());
  for (std::int64_t d : dims) {
    const std::size_t k = normalize_dim(d, in.size(), "dims");
    if (used[k]) throw LayerError("dims must name each dimension once, found " + to_string(dims), "dims");
    used[k] = true;
    out.push_back(in[k]);
  }
  if (out.front() != in.front() && dims.front() != 0)
    throw LayerError("dims must keep the batch dimension first (nnmem's tensors have the batch in dimension 0), found " +
                         to_string(dims),
                     "dims");
  LayerResult res = view_op(call, out);  // its backward permutes the output's gradient back
  // [N, H, W, C] -> [N, C, H, W] of a contiguous tensor is channels-last, and back is contiguous
  // (ConvNeXt's CNBlock); other permutations keep the input's layout as nnmem follows it.
  const Layout from = call.inputs[0].layout;
  const Shape to_first = {0, 3, 1, 2}, to_last = {0, 2, 3, 1};
  if (from == Layout::Contiguous && dims == to_first) res.layout = Layout::ChannelsLast;
  if (from == Layout::ChannelsLast && dims == to_last) res.layout = Layout::Contiguous;
  return res;
}

// A copy (CloneBackward keeps nothing), unless the input already is contiguous: then x itself.
LayerResult infer_contiguous(const LayerCall& call) {
  LayerResult res;
  res.outputs.push_back(call.input());
  if (call.inputs[0].layout == Layout::Contiguous) res.alias = Alias::View;
  res.layout = Layout::Contiguous;
  return res;
}

// x.expand(batch, *shape): `shape` is per sample, as View's; -1 keeps a size, and only a size 1
// may grow. Dimension 0 becomes the batch.
LayerResult infer_expand(const LayerCall& call) {
  const Shape& in = call.shape();
  const auto wanted = call.attrs.list("shape");
  if (wanted.size() + 1 < in.size())
    throw LayerError("shape " + to_string(wanted) + " has fewer per-sample dimensions than the input " + to_string(in),
                     "shape");
  Shape out = {call.ctx.batch};
  out.insert(out.end(), wanted.begin(), wanted.end());
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = 1; d < out.size(); ++d) {
    if (out[d] != -1) continue;
    if (d < lead) throw LayerError("shape " + to_string(wanted) + ": -1 in a new leading dimension", "shape");
    out[d] = in[d - lead];
  }
  for (std::size_t d = 0; d < out.size(); ++d) {
    const std::int64_t have = d >= lead ? in[d - lead] : 1;
    if (out[d] < 1) {
      throw LayerError("shape sizes must be positive or -1, found " + to_string(wanted), "shape");
    } else if (have != out[d] && have != 1) {
      throw LayerError("cannot expand the input " + to_string(in) + " to " + to_string(out) + ": dimension " +
                           std::to_string(d) + " has size " + std::to_string(have) + ", neither 1 nor " +
                           std::to_string(out[d]),
                       "shape");
    }
  }
  LayerResult res = view_of(call, out);
  res.broadcasts = true;  // the gradient is summed down to the input's shape
  return res;
}

// [start, end) with step along dim; end and start clamp as Python's slices do.
LayerResult infer_slice(const LayerCall& call) {
  Shape out = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), out.size(), "dim");
  if (dim == 0) throw LayerError("dim 0 is the batch; nnmem keeps every sample", "dim");
  const std::int64_t size = out[dim];
  auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + size : v, std::int64_t{0}, size); };
  const std::int64_t start = clamp(call.attrs.integer("start"));
  const std::int64_t end = call.attrs.given("end") ? clamp(call.attrs.integer("end")) : size;
  const std::int64_t step = call.attrs.integer("step");
  if (end <= start)
    throw LayerError("the slice [" + std::to_string(start) + ":" + std::to_string(end) + "] of dimension " +
                         std::to_string(dim) + " (size " + std::to_string(size) + ") of the input " +
                         to_string(call.shape()) + " is empty",
                     "end");
  out[dim] = (end - start + step - 1) / step;
  LayerResult res = view_of(call, out);
  res.grad_scatters = true;
  res.layout = Layout::Strided;  // a part of every sample
  return res;
}

LayerResult infer_select(const LayerCall& call) {
  Shape out = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), out.size(), "dim");
  if (dim == 0) throw LayerError("dim 0 is the batch; nnmem keeps every sample", "dim");
  const std::int64_t index = call.attrs.integer("index");
  if (index < -out[dim] || index >= out[dim])
    throw LayerError("index must be in [" + std::to_string(-out[dim]) + ", " + std::to_string(out[dim] - 1) +
                         "] for dimension " + std::to_string(dim) + " of the input " + to_string(call.shape()) +
                         ", found " + std::to_string(index),
                     "index");
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(dim));
  LayerResult res = view_of(call, out);
  res.grad_scatters = true;
  res.layout = Layout::Strided;
  return res;
}

LayerResult split_into(const LayerCall& call, std::size_t dim, std::span<const std::int64_t> sizes) {
  LayerResult res;
  for (std::int64_t s : sizes) {
    Shape part = call.shape();
    part[dim] = s;
    res.outputs.push_back({part, call.input().dtype});
  }
  res.alias = Alias::View;
  res.grad_scatters = true;
  // each part strides over the whole input; along the next-to-last dimension of a contiguous
  // tensor, only its leading dimensions do (measured: yolo11n's attention keeps its qkv projection whole,
  // validation/fixtures/torch-*/yolo11n.json)
  const Shape& in = call.shape();
  res.layout = in.size() >= 3 && dim + 2 == in.size() && call.inputs[0].layout == Layout::Contiguous ? Layout::SplitRows
                                                                                                     : Layout::Strided;
  return res;
}

// split_size_or_sections: one size (the last part may be smaller) or a list that adds up.
LayerResult infer_split(const LayerCall& call) {
  const Shape& in = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), in.size(), "dim");
  if (dim == 0) throw LayerError("dim 0 is the batch; nnmem keeps every sample", "dim");
  const auto given = call.attrs.list("split_size_or_sections");
  Shape sizes;
  for (std::int64_t s : given)
    if (s < 1) throw LayerError("split sizes must be positive, found " + to_string(given), "split_size_or_sections");
  if (given.size() == 1) {
    for (std::int64_t left = in[dim]; left > 0; left -= given[0]) sizes.push_back(std::min(left, given[0]));
  } else {
    sizes = given;
    const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0},
                                               [](std::int64_t a, std::int64_t b) { return checked_add(a, b); });
    if (total != in[dim])
      throw LayerError("the sections " + to_string(given) + " add up to " + with_commas(total) + ", but dimension " +
                           std::to_string(dim) + " of the input " + to_string(in) + " has " + with_commas(in[dim]),
                       "split_size_or_sections");
  }
  return split_into(call, dim, sizes);
}

// torch.chunk: ceil(size / chunks) each, the last smaller; fewer chunks when they run out.
LayerResult infer_chunk(const LayerCall& call) {
  const Shape& in = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), in.size(), "dim");
  if (dim == 0) throw LayerError("dim 0 is the batch; nnmem keeps every sample", "dim");
  const std::int64_t chunks = call.attrs.integer("chunks");
  const std::int64_t each = (in[dim] + chunks - 1) / chunks;
  Shape sizes;
  for (std::int64_t left = in[dim]; left > 0; left -= each) sizes.push_back(std::min(left, each));
  return split_into(call, dim, sizes);
}

// x.repeat_interleave(repeats, dim): each slice repeated, a new tensor (grouped-query
// attention's key and value heads, as transformers' repeat_kv makes them).
LayerResult infer_repeat_interleave(const LayerCall& call) {
  Shape out = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), out.size(), "dim");
  if (dim == 0) throw LayerError("dim 0 is the batch; nnmem keeps every sample", "dim");
  out[dim] = checked_mul(out[dim], call.attrs.integer("repeats"));
  LayerResult res;
  res.outputs.push_back({out, call.input().dtype});
  res.grad_passthrough = true;  // its gradient is a view of the output's, summed back to the input's shape
  res.broadcasts = true;
  return res;
}

// x.to(dtype), x.type(dtype), x.float(): a copy in the dtype (ToCopyBackward0 keeps nothing; the
// gradient is cast back, a new input-sized tensor), or x itself when it has that dtype already.
// `autocast` is the dtype a linear's output has: autocast's low-precision one, else the model's
// (HF's eager attention: attn_weights.type(value.dtype), .to(query.dtype)).
LayerResult infer_to(const LayerCall& call) {
  require_float(call);
  const std::string& word = call.attrs.text("dtype");
  const DType target = word == "float"      ? call.ctx.float_dtype
                       : word == "autocast" ? call.ctx.amp.value_or(call.ctx.float_dtype)
                                            : *parse_dtype(word);
  LayerResult res;
  res.outputs.push_back({call.shape(), target});
  if (target == call.input().dtype) res.alias = Alias::View;
  return res;
}

AttrDef dim_attr(const char* help) { return AttrDef::integer("dim", help).needed(); }

const bool registered = [] {
  register_layer({.type = "Transpose",
                  .summary = "swaps two dimensions (a view)",
                  .attrs = {AttrDef::integer("dim0", "one dimension (batch is 0)").needed(),
                            AttrDef::integer("dim1", "the other").needed()},
                  .infer = infer_transpose});
  register_layer({.type = "Permute",
                  .summary = "reorders the dimensions (a view); the batch stays first",
                  .attrs = {AttrDef::list("dims", "the new order of every dimension, batch included").needed()},
                  .infer = infer_permute});
  register_layer({.type = "Contiguous",
                  .summary = "a contiguous copy (x.contiguous() of a transposed view)",
                  .attrs = {},
                  .infer = infer_contiguous});
  register_layer({.type = "Expand",
                  .summary = "x.expand(batch, *shape): size-1 dimensions broadcast (a view)",
                  .attrs = {AttrDef::list("shape", "the per-sample shape (without the batch); -1 keeps a size").needed()},
                  .infer = infer_expand});
  register_layer({.type = "Slice",
                  .summary = "x[..., start:end:step, ...] along dim (a view)",
                  .attrs = {dim_attr("the dimension sliced (batch is 0)"),
                            AttrDef::integer("start", "first index; negative counts from the end").or_else(0),
                            AttrDef::integer("end", "one past the last index; default the end").optional(),
                            AttrDef::integer("step", "stride").or_else(1).at_least(1)},
                  .infer = infer_slice});
  register_layer({.type = "Select",
                  .summary = "x.select(dim, index): one index, the dimension removed (a view)",
                  .attrs = {dim_attr("the dimension indexed (batch is 0)"),
                            AttrDef::integer("index", "the index; negative counts from the end").needed()},
                  .infer = infer_select});
  register_layer({.type = "Split",
                  .summary = "torch.split: parts of one size, or of listed sizes; output k is NAME:k",
                  .attrs = {AttrDef::list("split_size_or_sections", "a size, or a list of sizes that add up").needed().or_int(),
                            dim_attr("the dimension split (batch is 0)")},
                  .infer = infer_split});
  register_layer({.type = "Chunk",
                  .summary = "torch.chunk: `chunks` parts of equal size (the last smaller); output k is NAME:k",
                  .attrs = {AttrDef::integer("chunks", "how many parts").needed().at_least(1),
                            dim_attr("the dimension split (batch is 0)")},
                  .infer = infer_chunk});
  register_layer({.type = "RepeatInterleave",
                  .summary = "x.repeat_interleave(repeats, dim): a copy with each slice repeated",
                  .attrs = {AttrDef::integer("repeats", "copies of each slice").needed().at_least(1),
                            dim_attr("the dimension repeated (batch is 0)")},
                  .infer = infer_repeat_interleave});
  register_layer({.type = "To",
                  .summary = "x.to(dtype): a copy in another dtype, or x itself when it has that dtype",
                  .attrs = {AttrDef::word("dtype", {"float32", "float16", "bfloat16", "float64", "float", "autocast"},
                                          "float: the model's; autocast: autocast's low-precision dtype when it is on, "
                                          "else the model's (a linear's output's)").needed()},
                  .infer = infer_to});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
