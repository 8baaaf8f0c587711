// Sequence parallelism's collectives put into a tensor-parallel rank's spec (collectives.hpp).
#include "collectives.hpp"

#include <algorithm>
#include <map>

#include "nnmem/checked.hpp"

namespace nnmem {

Value ranks_value(std::int64_t ranks, const SourceLoc& at) {
  Value r;
  r.kind = Value::Kind::Int;
  r.integer = ranks;
  r.loc = at;
  return r;
}

LayerSpec collective_layer(const LayerSpec& at, const char* type, std::string name, const std::string& value, std::int64_t ranks) {
  LayerSpec s;
  s.name = std::move(name);
  s.type = type;
  s.inputs = {value};
  s.input_locs = {at.loc};
  s.attrs = {{"sequence_parallel", ranks_value(ranks, at.loc), at.loc}};
  s.functional = true;
  if (!at.links().checkpoint.empty()) {
    LayerLinks& links = s.edit_links();
    links.checkpoint = at.links().checkpoint;
    links.checkpoint_loc = at.links().checkpoint_loc;
  }
  s.unit = at.unit;
  s.unit_is_block = at.unit_is_block;
  s.loc = s.type_loc = at.loc;
  return s;
}

void insert_collectives(ModelSpec& spec, std::vector<Collective> scatters, std::vector<Collective> gathers) {
  if (scatters.empty() && gathers.empty()) return;
  std::map<std::string, std::string> renamed;
  for (const Collective& c : scatters) renamed[c.layer.inputs.front()] = c.layer.name;
  std::vector<LayerSpec> layers;
  std::vector<std::size_t> index_of(spec.layers.size());
  auto next = scatters.begin();
  auto gather = gathers.begin();
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    LayerSpec& l = spec.layers[i];
    for (std::string& in : l.inputs)
      if (const auto r = renamed.find(in); r != renamed.end()) in = r->second;
    for (; gather != gathers.end() && gather->at == i; ++gather) {
      std::string& shard = gather->layer.inputs.front();
      if (const auto r = renamed.find(shard); r != renamed.end()) shard = r->second;
      std::replace(l.inputs.begin(), l.inputs.end(), shard, gather->layer.name);
      layers.push_back(std::move(gather->layer));
    }
    index_of[i] = layers.size();
    layers.push_back(std::move(l));
    for (; next != scatters.end() && next->at == i; ++next) layers.push_back(std::move(next->layer));
  }
  for (Reference& r : spec.references) {
    r.until = r.until < index_of.size() ? index_of[r.until] : r.until + scatters.size() + gathers.size();
    if (const auto n = renamed.find(r.value); n != renamed.end()) r.value = n->second;
  }
  spec.layers = std::move(layers);
}

void add_global_memory_buffer(ModelSpec& stage, const Graph& g) {
  std::map<std::string, const Node*> node_of;
  for (const Node& n : g.nodes) node_of.emplace(g.layer(n).name, &n);
  std::map<DType, std::int64_t> largest;  // elements, per dtype
  const LayerSpec* first = nullptr;
  for (LayerSpec& l : stage.layers) {
    const Attribute* ranks = l.find_attr("sequence_parallel");
    if (l.type != "ColumnParallelLinear" || !ranks || ranks->value.integer < 2) continue;
    const TensorType& shard = g.values[static_cast<std::size_t>(node_of.at(l.name)->inputs.front())].type;
    std::int64_t& n = largest[shard.dtype];
    n = std::max(n, checked_mul(numel(shard.shape), ranks->value.integer));
    Value yes;
    yes.kind = Value::Kind::Bool;
    yes.boolean = true;
    yes.loc = l.loc;
    l.attrs.push_back({"global_buffer", yes, l.loc});
    if (!first) first = &l;
  }
  if (!first) return;
  LayerSpec at = *first;
  if (!at.links().checkpoint.empty()) at.edit_links().checkpoint.clear();  // made with the model, outside any segment; in the stage's last unit
  at.unit = stage.layers.back().unit;
  at.unit_is_block = stage.layers.back().unit_is_block;
  for (const auto& [dtype, elements] : largest) {
    LayerSpec b = collective_layer(at, "Buffer", largest.size() == 1 ? "megatron.global_memory_buffer.mpu"
                                                                     : "megatron.global_memory_buffer.mpu." + std::string(dtype_name(dtype)),
                                   "", 1);
    b.inputs.clear();
    b.input_locs.clear();
    b.functional = false;
    Value shape, word, no;
    shape.kind = Value::Kind::List;
    shape.items = {ranks_value(elements, at.loc)};
    shape.loc = word.loc = no.loc = at.loc;
    word.kind = Value::Kind::String;
    word.text = dtype_name(dtype);
    no.kind = Value::Kind::Bool;
    b.attrs = {{"shape", shape, at.loc}, {"dtype", word, at.loc}, {"persistent", no, at.loc}};
    stage.layers.push_back(std::move(b));
  }
}

}  // namespace nnmem
