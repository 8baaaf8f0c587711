// Upsample (nn.Upsample, and F.interpolate written as the same layer with `functional: true`):
// nearest, nearest-exact, linear, bilinear, bicubic and trilinear resampling to a `size` or by a
// `scale_factor`. Backward (derivatives.yaml, upsample_*: grad_input from sizes and scales
// alone) keeps nothing, in 1.13 and 2.13 alike (validation/ops_saved_zoo.md).
// Multiply-accumulates: each output element is a weighted sum of 2 (linear), 4 (bilinear),
// 8 (trilinear) or 16 (bicubic) inputs; nearest copies one (none).
#include <cmath>
#include <limits>

#include "common.hpp"

namespace nnmem::layers {
namespace {

struct Mode {
  const char* name;
  int rank;   // spatial dimensions it needs; 0: any of 1, 2, 3
  int taps;   // inputs weighed per output element
};

constexpr Mode kModes[] = {
    {"nearest", 0, 0}, {"nearest-exact", 0, 0}, {"linear", 1, 2}, {"bilinear", 2, 4}, {"bicubic", 2, 16}, {"trilinear", 3, 8},
};

const Mode& mode_of(const std::string& name) {
  for (const Mode& m : kModes)
    if (name == m.name) return m;
  throw std::logic_error("unknown interpolation mode " + name);  // the schema admits only kModes
}

std::string sizes(const Shape& s, std::size_t from) {
  return to_string(Shape(s.begin() + static_cast<std::ptrdiff_t>(from), s.end()));
}

LayerResult infer_upsample(const LayerCall& call) {
  const Attrs& a = call.attrs;
  const Mode& mode = mode_of(a.text("mode"));
  const Shape& in = call.shape();
  // F.interpolate's checks, in its order: size xor scale_factor, align_corners, then the mode's rank.
  if (a.given("size") == a.given("scale_factor"))
    throw LayerError(a.given("size") ? "only one of size or scale_factor may be given, found both"
                                     : "needs size or scale_factor, found neither",
                     a.given("size") ? "scale_factor" : "");
  if (a.given("align_corners") && mode.taps == 0)
    throw LayerError("align_corners can only be set with the interpolating modes (linear, bilinear, bicubic, trilinear), "
                     "not with mode " + std::string(mode.name), "align_corners");
  require_rank(call, 3, 5, "[N, C, L], [N, C, H, W] or [N, C, D, H, W]");
  const std::size_t spatial = in.size() - 2;
  if (mode.rank != 0 && static_cast<std::size_t>(mode.rank) != spatial)
    throw LayerError("mode " + std::string(mode.name) + " needs a " + std::to_string(mode.rank + 2) + "-D input " +
                     spatial_layout(mode.rank) + ", found " + std::to_string(in.size()) + "-D " + to_string(in), "mode");
  require_float(call);

  Shape out = {in[0], in[1]};
  if (a.given("size")) {
    Shape size = a.tuple("size");
    if (size.size() == 1) size.assign(spatial, size[0]);
    if (size.size() != spatial)
      throw LayerError("size " + to_string(size) + " has " + std::to_string(size.size()) +
                       " values, but the input " + to_string(in) + " has " + std::to_string(spatial) +
                       " spatial dimensions " + sizes(in, 2), "size");
    out.insert(out.end(), size.begin(), size.end());
  } else {
    // floor(L * scale_factor), in double precision as PyTorch computes it.
    std::vector<double> scales = a.reals("scale_factor");
    if (scales.size() == 1) scales.assign(spatial, scales[0]);
    if (scales.size() != spatial)
      throw LayerError("scale_factor has " + std::to_string(scales.size()) + " values, but the input " + to_string(in) +
                       " has " + std::to_string(spatial) + " spatial dimensions " + sizes(in, 2), "scale_factor");
    for (std::size_t d = 0; d < spatial; ++d) {
      const double scale = scales[d];
      const double length = std::floor(static_cast<double>(in[2 + d]) * scale);
      if (!(length >= 1))
        throw LayerError("scale_factor " + real_text(scale) + " makes the output " + dim_name(d, spatial) + " " +
                         std::to_string(static_cast<std::int64_t>(std::max(length, 0.0))) + " from the input's " +
                         std::to_string(in[2 + d]) + "; sizes must be at least 1", "scale_factor");
      if (length > 9.2e18) throw LayerError("scale_factor " + real_text(scale) + " makes the output too large", "scale_factor");
      out.push_back(static_cast<std::int64_t>(length));
    }
  }
  LayerResult res;
  res.outputs.push_back({out, call.input().dtype});
  res.macs = checked_mul(numel(out), mode.taps);
  return res;
}

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const Mode& m : kModes) names.emplace_back(m.name);
  return names;
}

const bool registered = register_layer({
    .type = "Upsample",
    .summary = "resamples to a size or by a scale factor (F.interpolate with functional: true)",
    .attrs = {
        AttrDef::tuple("size", 0, "the output's spatial size (one value for every dimension, or one per dimension)")
            .optional().at_least(1),
        AttrDef::reals("scale_factor", "multiplier of the spatial sizes, one or one per dimension (the output is "
                                       "floor(size * scale_factor))")
            .optional().between(0, std::numeric_limits<double>::infinity()),
        AttrDef::word("mode", mode_names(), "how values are resampled"),
        AttrDef::flag("align_corners", false, "align the corner pixels (interpolating modes only)").optional(),
        AttrDef::flag("recompute_scale_factor", false, "recompute the scale from the output size (no effect on memory)")
            .optional(),
    },
    .infer = infer_upsample,
});

}  // namespace
}  // namespace nnmem::layers
