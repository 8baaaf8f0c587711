// A spec's state_dict against a safetensors file's tensors, by name.
#include <map>

#include "nnmem/checkpoint.hpp"
#include "nnmem/safetensors.hpp"

namespace nnmem {

std::vector<TensorDifference> compare_tensors(const Graph& graph, const SafetensorsFile& file) {
  const std::vector<StateTensor> state = state_dict_tensors(graph);
  std::map<std::string, std::size_t> spec;  // name -> index in state
  for (std::size_t i = 0; i < state.size(); ++i) spec.emplace(state[i].name, i);
  const auto side = [](const Shape& shape, std::string_view dtype) { return to_string(shape) + " " + std::string(dtype); };
  // A tied parameter is one tensor under several names, of which save_model keeps one.
  const auto tensor_of = [&](std::size_t i) { return state[i].same_as < 0 ? i : static_cast<std::size_t>(state[i].same_as); };
  std::vector<TensorDifference> out;
  std::map<std::size_t, bool> in_file;  // by tensor_of: one of its names is in the file
  for (const SafetensorsTensor& t : file.tensors) {
    const auto it = spec.find(t.name);
    if (it == spec.end()) {
      out.push_back({TensorDifference::Kind::OnlyInFile, t.name, "", side(t.shape, t.dtype)});
      continue;
    }
    in_file[tensor_of(it->second)] = true;
    const StateTensor& ours = state[it->second];
    const std::string_view dtype = safetensors_dtype_name(ours.type.dtype);
    if (ours.type.shape != t.shape)
      out.push_back({TensorDifference::Kind::Shape, t.name, side(ours.type.shape, dtype), side(t.shape, t.dtype)});
    else if (dtype != t.dtype)
      out.push_back({TensorDifference::Kind::Dtype, t.name, side(ours.type.shape, dtype), side(t.shape, t.dtype)});
  }
  for (std::size_t i = 0; i < state.size(); ++i)
    if (!in_file.count(tensor_of(i)))
      out.push_back({TensorDifference::Kind::OnlyInSpec, state[i].name,
                     side(state[i].type.shape, safetensors_dtype_name(state[i].type.dtype)), ""});
  return out;
}

}  // namespace nnmem
