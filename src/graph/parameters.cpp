#include "parameters.hpp"

namespace nnmem::detail {
namespace {

std::string title(const LayerSpec& layer) { return layer.type + " '" + layer.name + "'"; }

std::string param_names(const LayerResult& r) {
  std::string s;
  for (const auto& p : r.params) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? "none" : s;
}

// The node of layer `name`, which `share` or `tie` names at `at`.
const Node& named_node(const Graph& graph, const std::unordered_map<std::string, int>& nodes_by_layer,
                       const std::string& name, const LayerSpec& layer, const SourceLoc& at, const char* key) {
  const auto it = nodes_by_layer.find(name);
  if (it == nodes_by_layer.end())
    throw Error(at, title(layer) + ": " + key + " names '" + name + "', which is a model input, not a layer");
  return graph.nodes[static_cast<std::size_t>(it->second)];
}

void check_size(const LayerSpec& layer, const ParamDecl& mine, const TensorType& theirs, const std::string& whose,
                const SourceLoc& at) {
  if (mine.shape != theirs.shape)
    throw Error(at, title(layer) + ": its " + mine.name + " would be " + to_string(mine.shape) + ", but " + whose + " is " +
                        to_string(theirs.shape));
}

}  // namespace

void assign_parameters(Graph& graph, Node& node, int node_index, const std::unordered_map<std::string, int>& nodes_by_layer,
                       DType float_dtype) {
  const LayerSpec& layer = graph.layer(node);
  LayerResult& r = node.result;
  for (auto& p : r.params) p.dtype = float_dtype;
  node.params.assign(r.params.size(), -1);
  if (!layer.shares.empty()) {
    const Node& owner = named_node(graph, nodes_by_layer, layer.shares, layer, layer.shares_loc, "share");
    const LayerSpec& theirs = graph.layer(owner);
    if (theirs.type != layer.type || owner.params.size() != r.params.size())
      throw Error(layer.shares_loc, title(layer) + ": shares the module of " + title(theirs) + ", which has the parameters (" +
                                        param_names(owner.result) + "); this layer would have (" + param_names(r) + ")");
    for (std::size_t k = 0; k < r.params.size(); ++k) {
      check_size(layer, r.params[k], graph.parameters[static_cast<std::size_t>(owner.params[k])].type,
                 title(theirs) + "'s", layer.shares_loc);
      node.params[k] = owner.params[k];
    }
    node.buffer_bytes = 0;
    node.trainable = owner.trainable;
  }
  for (const ParamTie& tie : layer.ties) {
    std::size_t k = 0;
    while (k < r.params.size() && r.params[k].name != tie.param) ++k;
    if (k == r.params.size())
      throw Error(tie.loc, title(layer) + ": tie: it has no parameter '" + tie.param + "' (its parameters: " + param_names(r) + ")");
    const Node& owner = named_node(graph, nodes_by_layer, tie.layer, layer, tie.loc, "tie");
    const LayerSpec& theirs = graph.layer(owner);
    std::size_t j = 0;
    while (j < owner.result.params.size() && owner.result.params[j].name != tie.target) ++j;
    if (j == owner.result.params.size())
      throw Error(tie.loc, title(layer) + ": tie: " + title(theirs) + " has no parameter '" + tie.target +
                               "' (its parameters: " + param_names(owner.result) + ")");
    const int id = owner.params[j];
    check_size(layer, r.params[k], graph.parameters[static_cast<std::size_t>(id)].type,
               theirs.name + "." + tie.target, tie.loc);
    node.params[k] = id;
  }
  for (std::size_t k = 0; k < r.params.size(); ++k) {
    if (node.params[k] < 0) {
      const ParamDecl& p = r.params[k];
      try {
        node.param_count = checked_add(node.param_count, numel(p.shape));
        node.param_bytes = checked_mul(node.param_count, dtype_size(float_dtype));
      } catch (const OverflowError& e) {
        throw SizeError(layer.loc, title(layer) + ": its parameters do not fit in 64 bits (" + e.what() + ")");
      }
      graph.parameters.push_back({layer.name + "." + p.name, {p.shape, p.dtype}, node_index, node.trainable, 0});
      node.params[k] = static_cast<int>(graph.parameters.size()) - 1;
    }
    ++graph.parameters[static_cast<std::size_t>(node.params[k])].uses;
  }
}

}  // namespace nnmem::detail
