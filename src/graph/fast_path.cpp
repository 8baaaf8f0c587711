// nn.TransformerEncoderLayer's fast path. In eval() with no gradient to record (nnmem's
// --mode eval: model.eval() and torch.no_grad()), its forward calls one op,
// torch._transformer_encoder_layer_fwd, in place of its modules: the attention, the
// feed-forward, the adds and the norms run inside that op, whose intermediate tensors are its
// workspace, freed before it returns. Only its output is allocated beside its input
// (measured: validation/ops_saved_mha.md, "TransformerEncoderLayer's fast path").
//
// PyTorch takes it when (transformer.py, TransformerEncoderLayer.forward, 1.13 and 2.x alike
// for what a spec can say): the input is batched (3-D; MultiheadAttention accepts nothing
// else), the module is not training, self_attn is batch_first, has one in_proj_weight (no
// kdim/vdim) and an in_proj_bias (2.x checks; 1.13's layer always has one), an even
// num_heads, the activation is F.relu or F.gelu (exact, not tanh), norm1.eps equals
// norm2.eps, autocast is off, and no mask is given (none can be, yet). 2.x also refuses it
// while a forward hook is attached to the layer or one of its modules, which a user's model
// does not have (validation/instrument.py takes its own hooks off for the eval pass).
#include "fast_path.hpp"

#include <algorithm>
#include <unordered_map>

namespace nnmem::detail {
namespace {

constexpr const char* kEncoderMembers[] = {"self_attn", "linear1", "activation", "linear2", "norm1", "norm2"};


// The node of member `local` of the instance (layers[first, end)), checked to be of `type`.
const Node& member(const Graph& g, const std::unordered_map<std::string, int>& nodes, const ClassedBlock& b,
                   const std::string& local) {
  const auto it = nodes.find(b.instance + "." + local);
  if (it == nodes.end()) {
    std::string all;
    for (const char* m : kEncoderMembers) all += std::string(all.empty() ? "" : ", ") + m;
    throw Error(b.loc, "block instance '" + b.instance + "' is a " + b.cls + ", whose forward calls " + all +
                           "; it has no layer '" + local + "' (name the block's layers as the module's attributes)");
  }
  return g.nodes[static_cast<std::size_t>(it->second)];
}

void expect_type(const Graph& g, const Node& node, const ClassedBlock& b, std::initializer_list<const char*> types) {
  const LayerSpec& layer = g.layer(node);
  if (std::any_of(types.begin(), types.end(), [&](const char* t) { return layer.type == t; })) return;
  std::string all;
  for (const char* t : types) all += std::string(all.empty() ? "" : " or ") + t;
  throw Error(layer.type_loc, layer.title() + ": in a " + b.cls + " (block instance '" + b.instance +
                                  "') this layer is a " + all + ", found " + layer.type,
              {{b.loc, "the block's class is given here"}});
}

Attrs attrs(const Graph& g, const Node& node) { return Attrs(node.def->attrs, g.layer(node)); }

// Whether PyTorch runs this TransformerEncoderLayer as one op (see the top of the file).
bool encoder_fast_path(const Graph& g, const std::unordered_map<std::string, int>& nodes, const ClassedBlock& b) {
  const Node& sa = member(g, nodes, b, "self_attn");
  const Node& act = member(g, nodes, b, "activation");
  const Node& n1 = member(g, nodes, b, "norm1");
  const Node& n2 = member(g, nodes, b, "norm2");
  expect_type(g, sa, b, {"MultiheadAttention"});
  expect_type(g, member(g, nodes, b, "linear1"), b, {"Linear"});
  expect_type(g, member(g, nodes, b, "linear2"), b, {"Linear"});
  expect_type(g, n1, b, {"LayerNorm"});
  expect_type(g, n2, b, {"LayerNorm"});
  const Attrs a = attrs(g, sa);
  const std::int64_t e = a.integer("embed_dim");
  const bool packed = (!a.given("kdim") || a.integer("kdim") == e) && (!a.given("vdim") || a.integer("vdim") == e);
  const LayerSpec& act_layer = g.layer(act);
  const bool relu_or_gelu = act_layer.type == "ReLU" || (act_layer.type == "GELU" && attrs(g, act).is("approximate", "none"));
  return g.options.mode == Mode::Eval && !g.options.amp && sa.inputs.size() == 1 && a.flag("batch_first") && packed &&
         a.flag("bias") && a.integer("num_heads") % 2 == 0 && relu_or_gelu &&
         attrs(g, n1).real("eps") == attrs(g, n2).real("eps");
}

}  // namespace

void mark_fast_paths(Graph& graph) {
  if (graph.spec.classed_blocks.empty()) return;
  std::unordered_map<std::string, int> nodes;  // a layer's qualified name -> its node
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) nodes.emplace(graph.layer(graph.nodes[i]).name, static_cast<int>(i));
  for (const ClassedBlock& b : graph.spec.classed_blocks) {
    if (b.cls != "TransformerEncoderLayer")
      throw Error(b.loc, "block instance '" + b.instance + "': unknown class '" + b.cls +
                             "'; the classes nnmem knows a fast path of are (TransformerEncoderLayer)");
    if (!encoder_fast_path(graph, nodes, b)) continue;
    for (Node& node : graph.nodes) {
      const auto layer = static_cast<std::size_t>(node.layer);
      if (layer < b.first || layer >= b.end) continue;
      const bool returns = std::any_of(node.outputs.begin(), node.outputs.end(),
                                       [&](int v) { return graph.values[static_cast<std::size_t>(v)].name == b.output; });
      node.fused = returns ? Fused::Output : Fused::Inside;
    }
  }
}

}  // namespace nnmem::detail
