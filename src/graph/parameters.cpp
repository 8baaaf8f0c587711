#include "parameters.hpp"

#include <string_view>

#include "module_order.hpp"

namespace nnmem::detail {
namespace {


std::string param_names(const LayerResult& r) {
  std::string s;
  for (const auto& p : r.params) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? "none" : s;
}

// The node of layer `name`, which `share` or `tie` names at `at`: the producer of the value
// `name` names, when that value is the layer's (first) output.
const Node& named_node(const Graph& graph, const ValueNames& values, const std::string& name, const LayerSpec& layer,
                       const SourceLoc& at, const char* key) {
  const int value = values.find(name);
  const int producer = value < 0 ? -1 : graph.values[static_cast<std::size_t>(value)].producer;
  if (producer < 0 || graph.nodes[static_cast<std::size_t>(producer)].outputs[0] != value)
    throw Error(at, layer.title() + ": " + key + " names '" + name + "', which is a model input, not a layer");
  return graph.nodes[static_cast<std::size_t>(producer)];
}

void check_size(const LayerSpec& layer, const ParamDecl& mine, const Shape& theirs, const std::string& whose,
                const SourceLoc& at) {
  if (mine.shape != theirs)
    throw Error(at, layer.title() + ": its " + mine.name + " would be " + to_string(mine.shape) + ", but " + whose + " is " +
                        to_string(theirs));
}

}  // namespace

void assign_parameters(Graph& graph, Node& node, int node_index, const ValueNames& values,
                       DType float_dtype) {
  const LayerSpec& layer = graph.layer(node);
  const LayerResult& r = *node.result;
  const LayerLinks& links = layer.links();
  node.params.assign(r.params.size(), -1);
  if (!links.shares.empty()) {
    const Node& owner = named_node(graph, values, links.shares, layer, links.shares_loc, "share");
    const LayerSpec& theirs = graph.layer(owner);
    if (theirs.type != layer.type || owner.params.size() != r.params.size())
      throw Error(links.shares_loc, layer.title() + ": shares the module of " + theirs.title() + ", which has the parameters (" +
                                        param_names(*owner.result) + "); this layer would have (" + param_names(r) + ")");
    for (std::size_t k = 0; k < r.params.size(); ++k) {
      check_size(layer, r.params[k], graph.param_shape(graph.parameters[static_cast<std::size_t>(owner.params[k])]),
                 theirs.title() + "'s", links.shares_loc);
      node.params[k] = owner.params[k];
    }
    node.buffer_bytes = 0;
    node.trainable = owner.trainable;
  }
  for (const ParamTie& tie : links.ties) {
    std::size_t k = 0;
    while (k < r.params.size() && r.params[k].name != tie.param) ++k;
    if (k == r.params.size())
      throw Error(tie.loc, layer.title() + ": tie: it has no parameter '" + tie.param + "' (its parameters: " + param_names(r) + ")");
    const Node& owner = named_node(graph, values, tie.layer, layer, tie.loc, "tie");
    const LayerSpec& theirs = graph.layer(owner);
    std::size_t j = 0;
    while (j < owner.result->params.size() && owner.result->params[j].name != tie.target) ++j;
    if (j == owner.result->params.size())
      throw Error(tie.loc, layer.title() + ": tie: " + theirs.title() + " has no parameter '" + tie.target +
                               "' (its parameters: " + param_names(*owner.result) + ")");
    const int id = owner.params[j];
    check_size(layer, r.params[k], graph.param_shape(graph.parameters[static_cast<std::size_t>(id)]),
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
        throw SizeError(layer.loc, layer.title() + ": its parameters do not fit in 64 bits (" + e.what() + ")");
      }
      graph.parameters.push_back({.numel = numel(p.shape), .dim0 = p.shape.empty() ? 0 : p.shape.front(),
                                  .sparse_rows = p.sparse_rows, .owner = node_index, .decl = static_cast<int>(k),
                                  .dtype = p.dtype, .trainable = node.trainable});
      node.params[k] = static_cast<int>(graph.parameters.size()) - 1;
    }
    ++graph.parameters[static_cast<std::size_t>(node.params[k])].uses;
  }
}

void order_parameters(Graph& graph) {
  // The tensors' names in the tree's terms (a Parameter layer's is its own).
  const auto tree_name = [&](const Parameter& p, auto&& append) {
    const Node& owner = graph.nodes[static_cast<std::size_t>(p.owner)];
    append(graph.layer(owner).name);
    if (owner.result->alias == Alias::Parameter) return;
    append(".");
    append(graph.param_own_name(p));
  };
  const std::vector<Registration>& registrations = graph.spec.registrations;
  // Declared in model.parameters()' order already (most models)? Then no tree is built.
  if (in_module_order(graph.parameters.size(),
                      [&](std::size_t i, std::string& name) {
                        name.clear();
                        tree_name(graph.parameters[i], [&](std::string_view s) { name += s; });
                      },
                      registrations))
    return;
  // The names end to end in one string, reserved at its length so that the views into it, which
  // module_order keeps, stay valid as it fills.
  std::string names;
  std::size_t length = 0;
  for (const Parameter& p : graph.parameters) tree_name(p, [&](std::string_view s) { length += s.size(); });
  names.reserve(length);
  std::vector<std::string_view> views;
  views.reserve(graph.parameters.size());
  for (const Parameter& p : graph.parameters) {
    const std::size_t from = names.size();
    tree_name(p, [&](std::string_view s) { names += s; });
    views.push_back(std::string_view(names).substr(from));
  }
  const std::vector<int> order = module_order(views, registrations);
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

namespace nnmem {

const std::string& Graph::param_own_name(const Parameter& p) const {
  return owner(p).result->params[static_cast<std::size_t>(p.decl)].name;
}

std::string Graph::param_name(const Parameter& p) const {
  return layer(owner(p)).name + "." + param_own_name(p);
}

const Shape& Graph::param_shape(const Parameter& p) const {
  return owner(p).result->params[static_cast<std::size_t>(p.decl)].shape;
}

std::int64_t Parameter::bytes() const { return checked_mul(numel, dtype_size(dtype)); }

std::int64_t Parameter::grad_bytes() const {
  if (sparse_rows == 0) return bytes();
  const std::int64_t row = dim0 == 0 ? 1 : numel / dim0;
  return checked_mul(sparse_rows, checked_add(dtype_size(DType::Int64), checked_mul(row, dtype_size(dtype))));
}

}  // namespace nnmem
