#include "parameters.hpp"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <numeric>

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

void check_size(const LayerSpec& layer, const ParamDecl& mine, const TensorType& theirs, const std::string& whose,
                const SourceLoc& at) {
  if (mine.shape != theirs.shape)
    throw Error(at, layer.title() + ": its " + mine.name + " would be " + to_string(mine.shape) + ", but " + whose + " is " +
                        to_string(theirs.shape));
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
      check_size(layer, r.params[k], graph.parameters[static_cast<std::size_t>(owner.params[k])].type,
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
        throw SizeError(layer.loc, layer.title() + ": its parameters do not fit in 64 bits (" + e.what() + ")");
      }
      graph.parameters.push_back({.type = {p.shape, p.dtype}, .sparse_rows = p.sparse_rows, .owner = node_index,
                                  .decl = static_cast<int>(k), .trainable = node.trainable});
      node.params[k] = static_cast<int>(graph.parameters.size()) - 1;
    }
    ++graph.parameters[static_cast<std::size_t>(node.params[k])].uses;
  }
}

namespace {

// The module tree as model.parameters() walks it, built from the parameters' qualified names
// ("model.2.cv1.conv" + "weight"; MultiheadAttention's "out_proj.weight" is its child's; a
// Parameter layer is a tensor its parent module holds itself: "vit.embeddings.cls_token"). Each
// module ranks its members: those its `register:` lists in that order, then the others in the
// order first met (forward's). Members are keyed by their module and a view into the parameters'
// and layers' names (which outlive the tree), in one open-addressing table: no allocation per member.
class ModuleTree {
 public:
  // (Room for a member per tensor and one per module holding one: what most models have, so
  // that the members are not moved, old and new arrays held at once, as the tree grows.)
  ModuleTree(const ModelSpec& spec, std::size_t tensors) {
    for (const Registration& r : spec.registrations) listed_.insert_or_assign(r.module, &r.members);
    modules_.emplace_back().list = find_listed("");
    members_.reserve(2 * tensors);
  }

  // Appends to `key` a level per tree level of the tensor named `name`: (0 for a tensor of its
  // own | 1 for a child module, the member's rank), as one number that orders as the pair does.
  // A layer's tensors come one after another: the levels of the module that held the previous
  // tensor are kept for the next. The same names give the same keys again (ranks are given once).
  void key(std::string_view name, std::vector<std::int64_t>& key) {
    const std::size_t last_dot = name.rfind('.');
    const std::size_t leaf = last_dot == std::string_view::npos ? 0 : last_dot + 1;
    if (const std::string_view holder = name.substr(0, leaf); holder != last_holder_) {  // "model.2.", or "" for the model
      last_holder_ = holder;
      last_levels_.clear();
      last_module_ = 0;
      for (std::size_t from = 0; from < leaf;) {
        const std::size_t dot = name.find('.', from);
        Member& m = members_[member_of(last_module_, name.substr(from, dot - from))];
        last_levels_.push_back(level(true, m.rank));
        if (m.child < 0) {
          m.child = static_cast<int>(modules_.size());
          modules_.push_back({find_listed(name.substr(0, dot)), 0});
        }
        last_module_ = m.child;
        from = dot + 1;
      }
    }
    key.insert(key.end(), last_levels_.begin(), last_levels_.end());
    key.push_back(level(false, members_[member_of(last_module_, name.substr(leaf))].rank));
  }

 private:
  static std::int64_t level(bool child, int rank) { return std::int64_t{child} << 32 | rank; }
  struct Member {
    std::string_view name;
    int module = 0;  // its index in modules_
    int rank = 0;
    int child = -1;  // its index in modules_, once it is met as a module
  };
  struct Module {
    const std::vector<std::string>* list = nullptr;  // its `register:`, if given
    int unlisted = 0;                                // members met that its list does not name
  };

  const std::vector<std::string>* find_listed(std::string_view module) const {
    if (listed_.empty()) return nullptr;
    const auto it = listed_.find(std::string(module));
    return it == listed_.end() ? nullptr : it->second;
  }

  // The index in members_ of module `index`'s member `name`, added (and ranked) when first met.
  int member_of(int index, std::string_view name) {
    if (2 * (members_.size() + 1) > slots_.size()) grow();
    int& slot = slots_[probe(index, name)];
    if (slot < 0) {
      Module& module = modules_[static_cast<std::size_t>(index)];
      static const std::vector<std::string> none;
      const std::vector<std::string>& list = module.list ? *module.list : none;
      const auto at = std::find(list.begin(), list.end(), name);
      const int rank = static_cast<int>(at != list.end() ? at - list.begin() : static_cast<std::ptrdiff_t>(list.size()) + module.unlisted++);
      slot = static_cast<int>(members_.size());
      members_.push_back({name, index, rank, -1});
    }
    return slot;
  }

  // The slot of module `index`'s member `name`, else the empty slot where it would go.
  std::size_t probe(int index, std::string_view name) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = (std::hash<std::string_view>{}(name) ^ (static_cast<std::size_t>(index) * 0x9E3779B97F4A7C15u)) & mask;
    for (int m; (m = slots_[i]) >= 0; i = (i + 1) & mask) {
      const Member& member = members_[static_cast<std::size_t>(m)];
      if (member.module == index && member.name == name) break;
    }
    return i;
  }

  void grow() {
    slots_.assign(std::max<std::size_t>(64, 2 * slots_.size()), -1);
    for (std::size_t m = 0; m < members_.size(); ++m)
      slots_[probe(members_[m].module, members_[m].name)] = static_cast<int>(m);
  }

  std::unordered_map<std::string, const std::vector<std::string>*> listed_;  // module -> its `register:`
  std::vector<Module> modules_;  // [0]: the model
  std::vector<Member> members_;
  std::vector<int> slots_;        // indices into members_, -1: empty; a power of two, at most half full
  std::string_view last_holder_;  // the previous tensor's name up to its own ("model.2."; "": the model's)
  int last_module_ = 0;           // its index in modules_
  std::vector<std::int64_t> last_levels_;  // its key levels
};

}  // namespace

void order_parameters(Graph& graph) {
  // The tensors' names in the tree's terms (a Parameter layer's is its own), end to end in one
  // string that outlives the tree, which keeps views into them.
  std::string names;
  std::vector<std::size_t> name_end;
  name_end.reserve(graph.parameters.size());
  const auto tree_name = [&](const Parameter& p, auto&& append) {
    const Node& owner = graph.nodes[static_cast<std::size_t>(p.owner)];
    append(graph.layer(owner).name);
    if (owner.result->alias == Alias::Parameter) return;
    append(".");
    append(graph.param_own_name(p));
  };
  std::size_t length = 0;
  for (const Parameter& p : graph.parameters) tree_name(p, [&](std::string_view s) { length += s.size(); });
  names.reserve(length);
  for (const Parameter& p : graph.parameters) {
    tree_name(p, [&](std::string_view s) { names += s; });
    name_end.push_back(names.size());
  }
  ModuleTree tree(graph.spec, graph.parameters.size());
  // model.parameters() is named_modules()' pre-order, each module's own tensors first: a key per
  // tree level.
  const auto key = [&](const Parameter& p, std::vector<std::int64_t>& keys) {
    const auto i = static_cast<std::size_t>(&p - graph.parameters.data());
    const std::size_t from = i == 0 ? 0 : name_end[i - 1];
    tree.key(std::string_view(names).substr(from, name_end[i] - from), keys);
  };
  {  // Declared in model.parameters()' order already (most models)? Two keys at a time say so.
    std::vector<std::int64_t> previous, current;
    bool in_order = true;
    for (const Parameter& p : graph.parameters) {
      current.clear();
      key(p, current);
      if (std::lexicographical_compare(current.begin(), current.end(), previous.begin(), previous.end())) {
        in_order = false;
        break;
      }
      std::swap(previous, current);
    }
    if (in_order) return;
  }
  // The keys, end to end; parameter i's are keys[start[i], start[i + 1]).
  std::vector<std::int64_t> keys;
  std::vector<std::size_t> start;
  keys.reserve(4 * graph.parameters.size());
  start.reserve(graph.parameters.size() + 1);
  for (const Parameter& p : graph.parameters) {
    start.push_back(keys.size());
    key(p, keys);
  }
  start.push_back(keys.size());
  const auto less = [&](int a, int b) {
    const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
    return std::lexicographical_compare(keys.begin() + static_cast<std::ptrdiff_t>(start[i]),
                                        keys.begin() + static_cast<std::ptrdiff_t>(start[i + 1]),
                                        keys.begin() + static_cast<std::ptrdiff_t>(start[j]),
                                        keys.begin() + static_cast<std::ptrdiff_t>(start[j + 1]));
  };
  std::vector<int> order(graph.parameters.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
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

std::int64_t Parameter::grad_bytes() const {
  if (sparse_rows == 0) return type.bytes();
  const std::int64_t row = type.shape.empty() ? 1 : type.numel() / type.shape.front();
  return checked_mul(sparse_rows, checked_add(dtype_size(DType::Int64), checked_mul(row, dtype_size(type.dtype))));
}

}  // namespace nnmem
