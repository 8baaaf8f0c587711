// Sequence parallelism's collectives put into a tensor-parallel rank's spec (collectives.hpp).
#include "collectives.hpp"

#include <algorithm>
#include <map>

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
  s.checkpoint = at.checkpoint;
  s.checkpoint_loc = at.checkpoint_loc;
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

}  // namespace nnmem
