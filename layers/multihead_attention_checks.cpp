// MultiheadAttention's inputs and attributes checked, each error naming the expected and the
// found value (multihead_attention_checks.hpp; the rule: multihead_attention.cpp).
#include "multihead_attention_checks.hpp"

namespace nnmem::layers {
namespace {


void check_input(const LayerCall& call, std::size_t i, const char* what, std::int64_t width, const std::string& attr,
                 bool batch_first) {
  require_float(call, i);
  const Shape& s = call.shape(i);
  if (s.size() != 3)
    throw LayerError(std::string("expected a ") + what + " of 3 dimensions " +
                     (batch_first ? "[N, L, E] (batch_first)" : "[L, N, E]") + ", found " + to_string(s));
  if (s.back() != width)
    throw LayerError(std::string("the ") + what + "'s last dimension is " + std::to_string(s.back()) + " (" + to_string(s) +
                         "), but " + attr + " is " + std::to_string(width),
                     attr);
  if (call.input(i).dtype != call.input(0).dtype)
    throw LayerError(std::string("the ") + what + " is " + std::string(dtype_name(call.input(i).dtype)) + ", the query " +
                     std::string(dtype_name(call.input(0).dtype)) + "; they must have one dtype");
}

void check_mask_dtype(const LayerCall& call, std::size_t i, const char* what) {
  const DType t = call.input(i).dtype;
  if (t != DType::Bool && !is_floating(t))
    throw LayerError(std::string("the ") + what + " is " + std::string(dtype_name(t)) +
                         "; PyTorch takes a bool or floating-point mask",
                     what);
}

// forward's masks, inputs after query, key and value in forward's order: key_padding_mask [N, S],
// attn_mask [L, S] or [N * num_heads, L, S] (S: the key's length as given); is_causal (2.x)
// needs attn_mask, as F.multi_head_attention_forward does.
void check_masks(const LayerCall& call, const MhaDims& d, std::int64_t src) {
  std::size_t i = static_cast<std::size_t>(d.distinct);
  if (call.attrs.flag("key_padding_mask")) {
    check_mask_dtype(call, i, "key_padding_mask");
    const Shape expected{d.n, src};
    if (call.shape(i) != expected)
      throw LayerError("the key_padding_mask is " + to_string(call.shape(i)) + ", expected " + to_string(expected) +
                           " (the batch and the key's length)",
                       "key_padding_mask");
    ++i;
  }
  if (call.attrs.flag("attn_mask")) {
    check_mask_dtype(call, i, "attn_mask");
    const Shape two{d.l, src}, three{checked_mul(d.n, d.heads), d.l, src};
    if (call.shape(i) != two && call.shape(i) != three)
      throw LayerError("the attn_mask is " + to_string(call.shape(i)) + ", expected " + to_string(two) + " or " +
                           to_string(three) + " ([L, S] or [N * num_heads, L, S]: the query's and the key's lengths)",
                       "attn_mask");
  }
  if (call.attrs.flag("is_causal")) {
    if (!call.ctx.torch->mha_forward_2x)
      throw LayerError("PyTorch " + std::string(call.ctx.torch->version) + "'s MultiheadAttention.forward has no is_causal",
                       "is_causal");
    if (!call.attrs.flag("attn_mask"))
      throw LayerError("is_causal is a hint that attn_mask is causal; PyTorch needs the attn_mask too (give it as an input, attn_mask: true)",
                       "is_causal");
  }
}

}  // namespace

MhaDims check_mha(const LayerCall& call) {
  const bool bf = call.attrs.flag("batch_first");
  MhaDims d{};
  d.e = call.attrs.integer("embed_dim");
  d.heads = call.attrs.integer("num_heads");
  if (d.e % d.heads != 0)
    throw LayerError("embed_dim " + std::to_string(d.e) + " is not divisible by num_heads " + std::to_string(d.heads) +
                         " (PyTorch: embed_dim must be divisible by num_heads)",
                     "num_heads");
  d.head = d.e / d.heads;
  d.kdim = call.attrs.given("kdim") ? call.attrs.integer("kdim") : d.e;
  d.vdim = call.attrs.given("vdim") ? call.attrs.integer("vdim") : d.e;
  d.packed = d.kdim == d.e && d.vdim == d.e;
  d.masks = (call.attrs.flag("key_padding_mask") ? 1 : 0) + (call.attrs.flag("attn_mask") ? 1 : 0);
  d.distinct = static_cast<int>(call.inputs.size()) - d.masks;
  if (d.distinct < 1 || d.distinct > 3)
    throw LayerError("expected 1 to 3 inputs (query, key, value) and then the " + std::to_string(d.masks) +
                     " mask(s) the attributes name, found " + std::to_string(call.inputs.size()) + " inputs");
  check_input(call, 0, "query", d.e, "embed_dim", bf);
  if (d.distinct == 1 && !d.packed)
    throw LayerError("one input is self-attention (query, key and value the same tensor), but kdim " + std::to_string(d.kdim) +
                         " and vdim " + std::to_string(d.vdim) + " are not both embed_dim " + std::to_string(d.e) +
                         "; give the key and value as inputs 1 and 2",
                     call.attrs.given("kdim") ? "kdim" : "vdim");
  if (d.distinct == 2 && d.kdim != d.vdim)
    throw LayerError("two inputs are a query and a key that is also the value, but kdim " + std::to_string(d.kdim) +
                         " differs from vdim " + std::to_string(d.vdim) + "; give the value as input 2",
                     "vdim");
  if (d.distinct >= 2) check_input(call, 1, "key", d.kdim, call.attrs.given("kdim") ? "kdim" : "embed_dim", bf);
  if (d.distinct == 3) check_input(call, 2, "value", d.vdim, call.attrs.given("vdim") ? "vdim" : "embed_dim", bf);
  const Shape& q = call.shape(0);
  const Shape& k = call.shape(d.distinct >= 2 ? 1 : 0);
  const Shape& v = call.shape(d.distinct - 1);
  const std::size_t nd = bf ? 0 : 1, ld = bf ? 1 : 0;
  if (k[nd] != q[nd] || v[nd] != q[nd])
    throw LayerError("query " + to_string(q) + ", key " + to_string(k) + " and value " + to_string(v) +
                     " must have one batch size (dimension " + std::to_string(nd) + ")");
  if (k[ld] != v[ld])
    throw LayerError("the key " + to_string(k) + " and the value " + to_string(v) + " must have one length (dimension " +
                     std::to_string(ld) + ")");
  d.n = q[nd];
  d.l = q[ld];
  d.s = k[ld] + (call.attrs.flag("add_bias_kv") ? 1 : 0) + (call.attrs.flag("add_zero_attn") ? 1 : 0);
  check_masks(call, d, k[ld]);
  return d;
}

}  // namespace nnmem::layers
