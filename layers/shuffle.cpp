// Layers that rearrange elements: PixelShuffle, PixelUnshuffle (channels to and from space)
// and ChannelShuffle (channels regrouped). Each output is a new tensor (a permuted copy);
// backward applies the inverse rearrangement to the gradient and keeps nothing (1.13 and
// 2.13, validation/ops_saved_zoo.md) — except that 1.13 has no derivative for
// channel_shuffle at all, so training through ChannelShuffle fails there.
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult rearranged(const LayerCall& call, Shape out) {
  LayerResult res;
  res.outputs.push_back({std::move(out), call.input().dtype});
  return res;
}

// [*, C·r², H, W] -> [*, C, H·r, W·r]
LayerResult infer_pixel_shuffle(const LayerCall& call) {
  require_rank(call, 4, 64, "[N, *, C, H, W]");
  const std::int64_t r = call.attrs.integer("upscale_factor");
  Shape out = call.shape();
  const std::size_t c = out.size() - 3;
  const std::int64_t square = checked_mul(r, r);
  if (out[c] % square != 0)
    throw LayerError("the input's channels (" + std::to_string(out[c]) + " in " + to_string(call.shape()) +
                     ") must divide by upscale_factor squared, " + std::to_string(square), "upscale_factor");
  out[c] /= square;
  out[c + 1] = checked_mul(out[c + 1], r);
  out[c + 2] = checked_mul(out[c + 2], r);
  return rearranged(call, out);
}

// [*, C, H·r, W·r] -> [*, C·r², H, W]
LayerResult infer_pixel_unshuffle(const LayerCall& call) {
  require_rank(call, 4, 64, "[N, *, C, H, W]");
  const std::int64_t r = call.attrs.integer("downscale_factor");
  Shape out = call.shape();
  const std::size_t c = out.size() - 3;
  for (std::size_t d = c + 1; d < out.size(); ++d) {
    if (out[d] % r != 0)
      throw LayerError("the input " + dim_name(d - c - 1, 2) + " (" + std::to_string(out[d]) + " in " +
                       to_string(call.shape()) + ") must divide by downscale_factor " + std::to_string(r), "downscale_factor");
    out[d] /= r;
  }
  out[c] = checked_mul(out[c], checked_mul(r, r));
  return rearranged(call, out);
}

LayerResult infer_channel_shuffle(const LayerCall& call) {
  require_rank(call, 3, 64, "[N, C, *]");
  const std::int64_t groups = call.attrs.integer("groups");
  if (call.shape()[1] % groups != 0)
    throw LayerError("the input's channels (" + std::to_string(call.shape()[1]) + " in " + to_string(call.shape()) +
                     ") must divide by groups " + std::to_string(groups), "groups");
  if (call.training() && call.input_requires_grad() && !call.ctx.torch->channel_shuffle_differentiable)
    throw LayerError("PyTorch " + std::string(call.ctx.torch->version) +
                     " cannot train through it: it has no derivative for channel_shuffle");
  return rearranged(call, call.shape());
}

const bool registered = [] {
  register_layer({.type = "PixelShuffle",
                  .summary = "moves channels into space: [*, C·r², H, W] -> [*, C, H·r, W·r]",
                  .attrs = {AttrDef::integer("upscale_factor", "r").needed().at_least(1)},
                  .infer = infer_pixel_shuffle});
  register_layer({.type = "PixelUnshuffle",
                  .summary = "moves space into channels: [*, C, H·r, W·r] -> [*, C·r², H, W]",
                  .attrs = {AttrDef::integer("downscale_factor", "r").needed().at_least(1)},
                  .infer = infer_pixel_unshuffle});
  register_layer({.type = "ChannelShuffle",
                  .summary = "interleaves the channels of `groups` groups (ShuffleNet)",
                  .attrs = {AttrDef::integer("groups", "number of channel groups").needed().at_least(1)},
                  .infer = infer_channel_shuffle,
                  .versions = "torch 1.13 has no backward for it (training through it is an error there)"});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
