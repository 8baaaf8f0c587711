// Which layers a tensor-parallel split goes through, and where it lands when a tensor is
// reshaped or its dimensions move (tensor_parallel.cpp): apart from the graph walk that uses it.
#pragma once

#include <cstdint>
#include <optional>

#include <string>

#include "nnmem/graph.hpp"
#include "nnmem/shape.hpp"
#include "nnmem/spec.hpp"

namespace nnmem::tensor_split {

// Megatron's parallel layers are Linears: a rank's spec writes transformers' Conv1D (GPT-2's) as
// the Linear it transposes (the same parameters, outputs and saved tensors; layers/linear.cpp).
bool is_linear(const std::string& type);
void linears_of_conv1d(ModelSpec& spec);
// A reshape (View, Reshape, Flatten, Unsqueeze, Squeeze).
bool is_view(const std::string& type);
// Layers that would reduce or mix along a dimension they are given: they cannot read a split one.
bool reduces(const std::string& type);
// Parameter-free layers whose output's elements each come from the same position of their
// inputs (broadcast from the right): the split goes through them unchanged.
bool elementwise(const Node& n, const Graph& g);

// `from` split along `dim` (a rank holding `local` of it) viewed as `to`: the dimension of `to`
// that begins where the split one begins, when the split divides it; none when the view cuts
// across the split.
std::optional<std::size_t> view_split_dim(const Shape& from, const Shape& to, int dim, std::int64_t local);

// The dimension a Transpose (dim0, dim1) or Permute (dims) moves dimension `dim` of a tensor of
// `rank` dimensions to.
int moved_dim(const LayerSpec& layer, std::int64_t rank, int dim);

}  // namespace nnmem::tensor_split
