#include <algorithm>
#include <map>
#include <stdexcept>

#include "nnmem/layer.hpp"

namespace nnmem {

namespace {
// A function-local static: layers register from other translation units' static initialisers,
// whose order relative to this one is unspecified.
std::map<std::string, LayerDef, std::less<>>& registry() {
  static std::map<std::string, LayerDef, std::less<>> layers;
  return layers;
}
}  // namespace

bool register_layer(LayerDef def) {
  const std::string type = def.type;
  if (!registry().emplace(type, std::move(def)).second)
    throw std::logic_error("layer type '" + type + "' is registered twice");
  return true;
}

const LayerDef* find_layer(std::string_view type) {
  const auto it = registry().find(type);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const auto& [type, def] : registry()) out.push_back(type);
  return out;
}

}  // namespace nnmem
