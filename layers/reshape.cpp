// Layers that only reinterpret their input: Flatten, Reshape (= View), Unsqueeze, Squeeze,
// Identity. Their outputs are views of the input's storage and they keep nothing for backward.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_flatten(const LayerCall& call) {
  const Shape& in = call.shape();
  const std::size_t start = normalize_dim(call.attrs.integer("start_dim"), in.size(), "start_dim");
  const std::size_t end = normalize_dim(call.attrs.integer("end_dim"), in.size(), "end_dim");
  if (start > end)
    throw LayerError("start_dim (" + std::to_string(start) + ") comes after end_dim (" + std::to_string(end) +
                     ") for the input " + to_string(in), "start_dim");
  Shape out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(start));
  std::int64_t merged = 1;
  for (std::size_t d = start; d <= end; ++d) merged = checked_mul(merged, in[d]);
  out.push_back(merged);
  out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(end) + 1, in.end());
  return view_op(call, out);
}

// `shape` is per sample (the batch dimension is kept), as in x.view(x.size(0), ...); with
// `with_batch: true` it is the whole shape, which may merge the batch into another dimension
// (a language model's logits.view(-1, vocab) before its loss).
LayerResult infer_reshape(const LayerCall& call) {
  const Shape& in = call.shape();
  const auto wanted = call.attrs.list("shape");
  const bool whole = call.attrs.flag("with_batch");
  const std::int64_t per_sample = whole ? numel(in) : numel(in) / in[0];
  Shape out;
  if (!whole) out.push_back(in[0]);
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (wanted[i] == -1) {
      if (inferred >= 0) throw LayerError("shape may contain -1 only once, found " + to_string(wanted), "shape");
      inferred = static_cast<int>(i);
    } else if (wanted[i] < 1) {
      throw LayerError("shape sizes must be positive (or -1 once), found " + to_string(wanted), "shape");
    } else {
      known = checked_mul(known, wanted[i]);
    }
    out.push_back(wanted[i]);
  }
  if (inferred >= 0) {
    if (per_sample % known != 0)
      throw LayerError("cannot reshape " + with_commas(per_sample) + (whole ? " elements" : " elements per sample") + " into " + to_string(wanted) +
                       " (input " + to_string(in) + ")", "shape");
    out[static_cast<std::size_t>(inferred) + (whole ? 0 : 1)] = per_sample / known;
  } else if (known != per_sample) {
    throw LayerError("shape " + to_string(wanted) + " holds " + with_commas(known) + (whole ? " elements" : " elements per sample") + ", but the input " +
                     to_string(in) + " has " + with_commas(per_sample), "shape");
  }
  return view_op(call, out);
}

LayerResult infer_unsqueeze(const LayerCall& call) {
  Shape out = call.shape();
  const std::size_t dim = normalize_dim(call.attrs.integer("dim"), out.size() + 1, "dim");
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(dim), 1);
  return view_op(call, out);
}

LayerResult infer_squeeze(const LayerCall& call) {
  Shape out = call.shape();
  if (call.attrs.given("dim")) {
    const std::size_t dim = normalize_dim(call.attrs.integer("dim"), out.size(), "dim");
    // A size other than 1 is kept, as in PyTorch. Squeezing [1] leaves a 0-D tensor, which the
    // graph refuses for every rule.
    if (out[dim] == 1) out.erase(out.begin() + static_cast<std::ptrdiff_t>(dim));
  } else {
    // Every size-1 dimension but the batch's: nnmem's shapes always keep the batch dimension.
    Shape kept = {out[0]};
    for (std::size_t d = 1; d < out.size(); ++d)
      if (out[d] != 1) kept.push_back(out[d]);
    out = kept;
  }
  return view_op(call, out);
}

LayerDef view_def(std::string type, std::string summary, std::vector<AttrDef> attrs,
                  LayerResult (*infer)(const LayerCall&)) {
  return LayerDef{.type = std::move(type), .summary = std::move(summary), .attrs = std::move(attrs), .infer = infer};
}

const bool registered = [] {
  register_layer(view_def("Flatten", "merges dimensions start_dim..end_dim (a view)",
                          {AttrDef::integer("start_dim", "first dimension merged (batch is 0)").or_else(1),
                           AttrDef::integer("end_dim", "last dimension merged").or_else(-1)},
                          infer_flatten));
  for (const char* type : {"Reshape", "View"})
    register_layer(view_def(type, "x.view(batch, *shape): a new per-sample shape, -1 inferred",
                            {AttrDef::list("shape", "the per-sample shape (without the batch); one -1 is inferred").needed(),
                             AttrDef::flag("with_batch", false, "shape is the whole shape, batch included: x.view(-1, vocab)")},
                            infer_reshape));
  register_layer(view_def("Unsqueeze", "inserts a size-1 dimension at dim (a view)",
                          {AttrDef::integer("dim", "where the new dimension goes (batch is 0)").needed()}, infer_unsqueeze));
  register_layer(view_def("Squeeze", "removes a size-1 dimension (a view)",
                          {AttrDef::integer("dim", "the dimension removed; default: every size-1 dimension but the batch")
                               .optional()},
                          infer_squeeze));
  register_layer(view_def("Identity", "returns its input", {}, [](const LayerCall& call) {
    return view_of(call, call.shape());
  }));
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
