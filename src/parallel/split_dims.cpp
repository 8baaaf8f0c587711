#include "split_dims.hpp"

#include <algorithm>

#include "nnmem/checked.hpp"

namespace nnmem::tensor_split {

bool is_linear(const std::string& t) { return t == "Linear" || t == "Conv1D"; }

void linears_of_conv1d(ModelSpec& spec) {
  for (LayerSpec& l : spec.layers) {
    if (l.type != "Conv1D") continue;
    l.type = "Linear";
    for (Attribute& a : l.attrs) a.name = a.name == "nf" ? "out_features" : a.name == "nx" ? "in_features" : a.name;
  }
}

bool is_view(const std::string& t) {
  return t == "View" || t == "Reshape" || t == "Flatten" || t == "Unsqueeze" || t == "Squeeze";
}

bool reduces(const std::string& t) {
  return t.find("Norm") != std::string::npos || t.find("Softmax") != std::string::npos || t == "Softmin" || t == "GLU";
}

bool elementwise(const Node& n, const Graph& g) {
  if (!n.result->params.empty() || n.outputs.size() != 1) return false;
  const Shape& out = g.values[static_cast<std::size_t>(n.outputs.front())].type.shape;
  return std::all_of(n.inputs.begin(), n.inputs.end(), [&](int v) {
    return g.values[static_cast<std::size_t>(v)].type.shape.size() <= out.size();
  });
}

std::optional<std::size_t> view_split_dim(const Shape& from, const Shape& to, int dim, std::int64_t local) {
  std::int64_t before = 1;
  for (int k = 0; k < dim; ++k) before = checked_mul(before, from[static_cast<std::size_t>(k)]);
  std::int64_t prefix = 1;
  std::size_t j = 0;
  while (j < to.size() && prefix < before) prefix = checked_mul(prefix, to[j++]);
  const std::int64_t whole = from[static_cast<std::size_t>(dim)];
  while (j < to.size() && to[j] == 1 && whole != 1) ++j;  // size-1 dimensions (a batch of 1) before it
  if (j >= to.size() || prefix != before || checked_mul(to[j], local) % whole != 0) return std::nullopt;
  return j;
}

int moved_dim(const LayerSpec& layer, std::int64_t rank, int dim) {
  const auto norm = [&](std::int64_t d) { return d < 0 ? d + rank : d; };
  if (layer.type == "Transpose") {
    const std::int64_t a = norm(layer.find_attr("dim0")->value.integer), b = norm(layer.find_attr("dim1")->value.integer);
    return a == dim ? static_cast<int>(b) : b == dim ? static_cast<int>(a) : dim;
  }
  int to = dim;
  const auto& dims = layer.find_attr("dims")->value.items;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (norm(dims[k].integer) == dim) to = static_cast<int>(k);
  return to;
}

}  // namespace nnmem::tensor_split
