#include "parameters.hpp"

#include <algorithm>
#include <numeric>

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

namespace {

// The path of a parameter in the module tree: its layer's name and the parameter's
// ("model.2.cv1.conv" + "weight"; MultiheadAttention's "out_proj.weight" is its child's). A
// Parameter layer is a tensor its parent module holds itself ("vit.embeddings.cls_token").
std::vector<std::string> module_path(const Graph& graph, const Parameter& p) {
  const Node& owner = graph.nodes[static_cast<std::size_t>(p.owner)];
  const std::string& name = owner.result.alias == Alias::Parameter ? graph.layer(owner).name : p.name;
  std::vector<std::string> path;
  for (std::size_t from = 0;;) {
    const std::size_t dot = name.find('.', from);
    path.push_back(name.substr(from, dot - from));
    if (dot == std::string::npos) return path;
    from = dot + 1;
  }
}

}  // namespace

void order_parameters(Graph& graph) {
  std::unordered_map<std::string, const std::vector<std::string>*> listed;  // module -> its `register:`
  for (const Registration& r : graph.spec.registrations) listed[r.module] = &r.members;
  // Per module, the members in the order first met (forward's), after any that it lists.
  std::unordered_map<std::string, std::unordered_map<std::string, std::int64_t>> met;
  // model.parameters() is named_modules()' pre-order, each module's own tensors first: a key per
  // tree level, (0 for a tensor of its own | 1 for a child module, the member's rank).
  std::vector<std::vector<std::pair<int, std::int64_t>>> keys;
  for (const Parameter& p : graph.parameters) {
    const std::vector<std::string> path = module_path(graph, p);
    std::vector<std::pair<int, std::int64_t>>& key = keys.emplace_back();
    std::string module;
    for (std::size_t d = 0; d < path.size(); ++d) {
      const auto it = listed.find(module);
      const std::vector<std::string> none;
      const std::vector<std::string>& list = it == listed.end() ? none : *it->second;
      const auto at = std::find(list.begin(), list.end(), path[d]);
      auto& seen = met[module];
      const std::int64_t rank = at != list.end() ? at - list.begin()
                                                 : static_cast<std::int64_t>(list.size()) +
                                                       seen.emplace(path[d], static_cast<std::int64_t>(seen.size())).first->second;
      key.emplace_back(d + 1 < path.size() ? 1 : 0, rank);
      module += (module.empty() ? "" : ".") + path[d];
    }
  }
  std::vector<int> order(graph.parameters.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)]; });
  std::vector<int> position(order.size());
  std::vector<Parameter> sorted;
  sorted.reserve(order.size());
  for (int id : order) {
    position[static_cast<std::size_t>(id)] = static_cast<int>(sorted.size());
    sorted.push_back(std::move(graph.parameters[static_cast<std::size_t>(id)]));
  }
  graph.parameters = std::move(sorted);
  for (Node& n : graph.nodes)
    for (int& id : n.params) id = position[static_cast<std::size_t>(id)];
}

}  // namespace nnmem::detail
