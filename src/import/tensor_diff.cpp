// A spec's state_dict against a safetensors file's tensors, by name.
#include <map>

#include "nnmem/checkpoint.hpp"
#include "nnmem/safetensors.hpp"

namespace nnmem {

std::vector<TensorDifference> compare_tensors(const Graph& graph, const SafetensorsFile& file) {
  std::map<std::string, StateTensor> spec;
  std::vector<std::string> spec_order;
  for (StateTensor& t : state_dict_tensors(graph)) {
    spec_order.push_back(t.name);
    spec.emplace(t.name, std::move(t));
  }
  std::vector<TensorDifference> out;
  std::map<std::string, bool> in_file;
  for (const SafetensorsTensor& t : file.tensors) {
    in_file[t.name] = true;
    const std::string file_side = to_string(t.shape) + " " + t.dtype;
    const auto it = spec.find(t.name);
    if (it == spec.end()) {
      out.push_back({TensorDifference::Kind::OnlyInFile, t.name, "", file_side});
      continue;
    }
    const std::string spec_dtype = std::string(safetensors_dtype_name(it->second.type.dtype));
    const std::string spec_side = to_string(it->second.type.shape) + " " + spec_dtype;
    if (it->second.type.shape != t.shape) out.push_back({TensorDifference::Kind::Shape, t.name, spec_side, file_side});
    else if (spec_dtype != t.dtype) out.push_back({TensorDifference::Kind::Dtype, t.name, spec_side, file_side});
  }
  for (const std::string& name : spec_order)
    if (!in_file.count(name)) {
      const StateTensor& t = spec.at(name);
      out.push_back({TensorDifference::Kind::OnlyInSpec, name, to_string(t.type.shape) + " " + std::string(safetensors_dtype_name(t.type.dtype)), ""});
    }
  return out;
}

}  // namespace nnmem
