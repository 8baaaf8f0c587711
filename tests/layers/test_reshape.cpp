// Flatten, Reshape/View, Unsqueeze, Squeeze, Identity (layers/reshape.cpp). Shapes printed by
// PyTorch 1.13 (nn.Flatten, x.view/x.reshape with the batch prepended, x.unsqueeze, x.squeeze);
// every output shares the input's data_ptr and saved_tensors_hooks sees nothing kept.
#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
std::string shape_after(const std::string& yaml, const Shape& in) {
  const auto r = run_rule(yaml, {tensor(in)});
  CHECK(r.alias == Alias::View);  // a view of the input's storage
  CHECK(saved_of(r).empty());     // views keep nothing for backward
  CHECK(r.params.empty());
  CHECK(r.macs == 0);
  return out_shape(r);
}
}  // namespace

TEST_CASE("Flatten: start_dim and end_dim") {
  const Shape in = {2, 3, 4, 5};
  CHECK(shape_after("{type: Flatten}", in) == "[2, 60]");                               // nn.Flatten()
  CHECK(shape_after("{type: Flatten, start_dim: 0}", in) == "[120]");                   // nn.Flatten(0)
  CHECK(shape_after("{type: Flatten, start_dim: 2}", in) == "[2, 3, 20]");              // nn.Flatten(2)
  CHECK(shape_after("{type: Flatten, start_dim: 1, end_dim: 2}", in) == "[2, 12, 5]");  // nn.Flatten(1, 2)
  CHECK(shape_after("{type: Flatten, start_dim: -3, end_dim: -2}", in) == "[2, 12, 5]");
  CHECK(shape_after("{type: Flatten, start_dim: 3, end_dim: 3}", in) == "[2, 3, 4, 5]");
  CHECK(shape_after("{type: Flatten}", {8, 512, 1, 1}) == "[8, 512]");  // after global pooling
  // any dtype
  CHECK(run_rule("{type: Flatten}", {tensor({2, 3, 4}, false, DType::Int64)}).outputs[0].dtype == DType::Int64);
  // PyTorch: "flatten() has invalid args: start_dim cannot come after end_dim"
  CHECK(rule_error("{type: Flatten, start_dim: 2, end_dim: 1}", {tensor(in)}) ==
        "start_dim (2) comes after end_dim (1) for the input [2, 3, 4, 5]");
  // PyTorch: "Dimension out of range (expected to be in range of [-4, 3], but got 4)" / -5
  CHECK(rule_error("{type: Flatten, start_dim: 4}", {tensor(in)}) == "start_dim must be in [-4, 3] for a 4-D input, found 4");
  CHECK(rule_error("{type: Flatten, end_dim: -5}", {tensor(in)}) == "end_dim must be in [-4, 3] for a 4-D input, found -5");
  CHECK(one_layer_error("{type: Flatten, start_dim: 4}", {3, 4, 5}) ==
        "test.yaml:4:32: error: Flatten '0': start_dim must be in [-4, 3] for a 4-D input, found 4");
  CHECK(one_layer_error("{type: Flatten, start_dim: 2, end_dim: 1}", {3, 4, 5}) ==
        "test.yaml:4:32: error: Flatten '0': start_dim (2) comes after end_dim (1) for the input [1, 3, 4, 5]");
  CHECK(one_layer_error("{type: Flatten, start: 1}", {3, 4, 5}) ==
        "test.yaml:4:21: error: Flatten '0': unknown attribute 'start'; Flatten takes: start_dim end_dim");
}

TEST_CASE("Reshape / View: a per-sample shape with one -1") {
  const Shape in = {2, 3, 4, 5};
  for (const std::string type : {"Reshape", "View"}) {
    CAPTURE(type);
    // x.view(2, -1, 5) -> [2, 12, 5]; x.view(2, 60) -> [2, 60]; x.reshape(2, 4, -1, 1) -> [2, 4, 15, 1]
    CHECK(shape_after("{type: " + type + ", shape: [-1, 5]}", in) == "[2, 12, 5]");
    CHECK(shape_after("{type: " + type + ", shape: [60]}", in) == "[2, 60]");
    CHECK(shape_after("{type: " + type + ", shape: [4, -1, 1]}", in) == "[2, 4, 15, 1]");
    CHECK(shape_after("{type: " + type + ", shape: [-1]}", in) == "[2, 60]");
    CHECK(shape_after("{type: " + type + ", shape: [5, 4, 3]}", in) == "[2, 5, 4, 3]");
  }
  // the batch is kept: per-sample [3136] -> [64, 7, 7] with batch 8
  CHECK(shape_after("{type: View, shape: [64, 7, 7]}", {8, 3136}) == "[8, 64, 7, 7]");
}

TEST_CASE("Reshape: errors name the expected and the actual value") {
  const Shape in = {2, 3, 4, 5};
  // PyTorch: "shape '[2, 7, -1]' is invalid for input of size 120"
  CHECK(rule_error("{type: Reshape, shape: [7, -1]}", {tensor(in)}) ==
        "cannot reshape 60 elements per sample into [7, -1] (input [2, 3, 4, 5])");
  CHECK(rule_error("{type: Reshape, shape: [3000, -1]}", {tensor({2, 64, 7, 7})}) ==
        "cannot reshape 3,136 elements per sample into [3000, -1] (input [2, 64, 7, 7])");
  // PyTorch: "shape '[2, 7, 8]' is invalid for input of size 120"
  CHECK(rule_error("{type: View, shape: [7, 8]}", {tensor(in)}) ==
        "shape [7, 8] holds 56 elements per sample, but the input [2, 3, 4, 5] has 60");
  CHECK(rule_error("{type: View, shape: [64, 7, 8]}", {tensor({2, 64, 7, 7})}) ==
        "shape [64, 7, 8] holds 3,584 elements per sample, but the input [2, 64, 7, 7] has 3,136");
  // PyTorch: "only one dimension can be inferred"
  CHECK(rule_error("{type: Reshape, shape: [-1, -1]}", {tensor(in)}) == "shape may contain -1 only once, found [-1, -1]");
  // PyTorch: "shape '[2, 12, 0]' is invalid for input of size 120"; "invalid shape dimension -2"
  CHECK(rule_error("{type: Reshape, shape: [12, 0]}", {tensor(in)}) == "shape sizes must be positive (or -1 once), found [12, 0]");
  CHECK(rule_error("{type: Reshape, shape: [-2, 10]}", {tensor(in)}) ==
        "shape sizes must be positive (or -1 once), found [-2, 10]");
  // located at the shape's value
  CHECK(one_layer_error("{type: Reshape, shape: [7, -1]}", {3, 4, 5}) ==
        "test.yaml:4:28: error: Reshape '0': cannot reshape 60 elements per sample into [7, -1] (input [1, 3, 4, 5])");
  CHECK(one_layer_error("{type: Reshape}", {3, 4, 5}) ==
        "test.yaml:4:5: error: Reshape '0': needs attribute 'shape' (list of ints; required)");
  CHECK_HAS(one_layer_error("{type: View, shape: 60}", {3, 4, 5}), "test.yaml:4:25: error: View '0': shape must be a list of integers, found");
  CHECK_HAS(one_layer_error("{type: View, shape: [6, x]}", {3, 4, 5}), "test.yaml:4:29: error: View '0': shape must be an integer, found");
  CHECK(one_layer_error("{type: View, shpe: [60]}", {3, 4, 5}) ==
        "test.yaml:4:18: error: View '0': unknown attribute 'shpe'; did you mean 'shape'?");
}

TEST_CASE("Unsqueeze") {
  const Shape in = {2, 3, 4};
  CHECK(shape_after("{type: Unsqueeze, dim: 1}", in) == "[2, 1, 3, 4]");   // x.unsqueeze(1)
  CHECK(shape_after("{type: Unsqueeze, dim: 3}", in) == "[2, 3, 4, 1]");   // x.unsqueeze(3)
  CHECK(shape_after("{type: Unsqueeze, dim: -1}", in) == "[2, 3, 4, 1]");  // x.unsqueeze(-1)
  CHECK(shape_after("{type: Unsqueeze, dim: -4}", in) == "[1, 2, 3, 4]");  // x.unsqueeze(-4)
  // PyTorch: "Dimension out of range (expected to be in range of [-4, 3], but got 4)" / -5
  CHECK(rule_error("{type: Unsqueeze, dim: 4}", {tensor(in)}) == "dim must be in [-4, 3] for a 4-D input, found 4");
  CHECK(rule_error("{type: Unsqueeze, dim: -5}", {tensor(in)}) == "dim must be in [-4, 3] for a 4-D input, found -5");
  CHECK(one_layer_error("{type: Unsqueeze}", {3, 4}) ==
        "test.yaml:4:5: error: Unsqueeze '0': needs attribute 'dim' (int; required)");
  CHECK(one_layer_error("{type: Unsqueeze, dim: 4}", {3, 4}) ==
        "test.yaml:4:28: error: Unsqueeze '0': dim must be in [-4, 3] for a 4-D input, found 4");
}

TEST_CASE("Squeeze") {
  const Shape in = {2, 1, 4, 1};
  CHECK(shape_after("{type: Squeeze, dim: 1}", in) == "[2, 4, 1]");     // x.squeeze(1)
  CHECK(shape_after("{type: Squeeze, dim: 2}", in) == "[2, 1, 4, 1]");  // x.squeeze(2): size 4, a no-op
  CHECK(shape_after("{type: Squeeze, dim: -1}", in) == "[2, 1, 4]");    // x.squeeze(-1)
  CHECK(shape_after("{type: Squeeze}", in) == "[2, 4]");                // x.squeeze()
  // nnmem's convention (layers/reshape.cpp): squeeze() never removes the batch dimension, so
  // [1, 1, 4, 1] -> [1, 4] where PyTorch's x.squeeze() gives [4]. x.squeeze(0) still removes it.
  CHECK(shape_after("{type: Squeeze}", {1, 1, 4, 1}) == "[1, 4]");
  CHECK(shape_after("{type: Squeeze, dim: 0}", {1, 1, 4, 1}) == "[1, 4, 1]");
  // x.squeeze(0) on [1] is a 0-D scalar in PyTorch; the graph refuses it for every rule
  // (test_graph.cpp), since the next layer reads the batch from dimension 0.
  CHECK(shape_after("{type: Squeeze, dim: 0}", {1}) == "[]");
  CHECK(shape_after("{type: Squeeze, dim: 0}", {3}) == "[3]");  // a no-op
  // PyTorch: "Dimension out of range (expected to be in range of [-4, 3], but got 4)"
  CHECK(rule_error("{type: Squeeze, dim: 4}", {tensor(in)}) == "dim must be in [-4, 3] for a 4-D input, found 4");
  CHECK(one_layer_error("{type: Squeeze, dim: 4}", {1, 4, 1}) ==
        "test.yaml:4:26: error: Squeeze '0': dim must be in [-4, 3] for a 4-D input, found 4");
}

TEST_CASE("Identity") {
  CHECK(shape_after("{type: Identity}", {2, 3, 4}) == "[2, 3, 4]");
  CHECK(run_rule("{type: Identity}", {tensor({2, 3}, false, DType::Float16)}).outputs[0].dtype == DType::Float16);
  CHECK(one_layer_error("{type: Identity, dim: 1}", {3}) ==
        "test.yaml:4:22: error: Identity '0': unknown attribute 'dim'; Identity takes no attributes");
}

TEST_CASE("Views: one-layer estimate through the graph") {
  // a view adds no memory (evaluation: no parameters to train)
  const Estimate e = one_layer("{type: Flatten}", {64, 7, 7}, 8, Mode::Eval);
  CHECK(to_string(e.layers[0].outputs[0].shape) == "[8, 3136]");
  CHECK(e.layers[0].output_bytes == 0);
  CHECK(e.layers[0].saved_bytes == 0);
}
