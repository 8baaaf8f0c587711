// Add, Mul and Concat (layers/merge.cpp). Shapes, dtypes and errors printed by PyTorch 1.13
// (CPU) for `a + b`, `a += b`, `a * b` and torch.cat on tensors of the same shapes and dtypes;
// what backward keeps read with torch.autograd.graph.saved_tensors_hooks (add and cat: nothing).
#include <algorithm>
#include <sstream>

#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
// What backward keeps, in a stable order ("input0 input1").
std::string saved_sorted(const LayerResult& r) {
  std::istringstream in(saved_of(r));
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::sort(words.begin(), words.end());
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}
// A spec whose layer reads two inputs a and b (per-sample shapes as YAML lists; batch 1 is added).
std::string two_inputs(const std::string& a, const std::string& b, const std::string& layer) {
  return "inputs:\n  a: {shape: " + a + "}\n  b: {shape: " + b + "}\nlayers:\n  - " + layer + "\n";
}
DType add_dtype(DType a, DType b, bool inplace = false) {
  return run_rule(inplace ? "{type: Add, inplace: true}" : "{type: Add}", {tensor({2, 3}, false, a), tensor({2, 3}, false, b)})
      .outputs[0]
      .dtype;
}
}  // namespace

TEST_CASE("Add: shapes; broadcasting; nothing kept") {
  // a + b on [2, 3, 4] and [2, 3, 4] -> [2, 3, 4]; AddBackward0 keeps nothing
  auto r = run_rule("{type: Add}", {tensor({2, 3, 4}), tensor({2, 3, 4})});
  CHECK(out_shape(r) == "[2, 3, 4]");
  CHECK(r.alias == Alias::None);
  CHECK(r.grad_passthrough);  // the output's gradient goes to both inputs as is
  CHECK(saved_of(r).empty());
  CHECK(r.params.empty());
  // broadcasting: [2, 3, 4] + [3, 1] -> [2, 3, 4]; [2, 1, 4] + [2, 3, 1] -> [2, 3, 4]
  r = run_rule("{type: Add}", {tensor({2, 3, 4}), tensor({3, 1})});
  CHECK(out_shape(r) == "[2, 3, 4]");
  CHECK(r.grad_passthrough);  // the first input gets the output's gradient as is...
  CHECK(r.broadcasts);        // ...the second, that gradient summed down to [3, 1]
  CHECK(saved_of(r).empty());
  r = run_rule("{type: Add}", {tensor({2, 1, 4}), tensor({2, 3, 1})});
  CHECK(out_shape(r) == "[2, 3, 4]");
  CHECK(r.broadcasts);
  // three inputs: a + b + c on [2, 3] -> [2, 3]
  r = run_rule("{type: Add}", {tensor({2, 3}), tensor({2, 3}), tensor({2, 3})});
  CHECK(out_shape(r) == "[2, 3]");
  CHECK(r.grad_passthrough);
  // no input needs a gradient, or evaluation: still nothing
  CHECK(saved_of(run_rule("{type: Add}", {tensor({2, 3}, false), tensor({2, 3}, false)})).empty());
  CHECK(saved_of(run_rule("{type: Add}", {tensor({2, 3}), tensor({2, 3})}, kEval)).empty());
  // PyTorch: "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"
  CHECK(rule_error("{type: Add}", {tensor({2, 3, 4}), tensor({2, 5, 4})}) ==
        "input shapes [2, 3, 4], [2, 5, 4] do not match (and cannot be broadcast): sizes 3 and 5 meet in dimension 1");
}

TEST_CASE("Add: in place (out += identity)") {
  auto r = run_rule("{type: Add, inplace: true}", {tensor({2, 3, 4}), tensor({2, 3, 4})});
  CHECK(out_shape(r) == "[2, 3, 4]");
  CHECK(r.alias == Alias::InPlace);
  CHECK(r.grad_passthrough);
  CHECK(saved_of(r).empty());
  // a [2, 3, 4] += [3, 1]: fine
  r = run_rule("{type: Add, inplace: true}", {tensor({2, 3, 4}), tensor({3, 1})});
  CHECK(r.alias == Alias::InPlace);
  CHECK(out_shape(r) == "[2, 3, 4]");
  // PyTorch: "output with shape [2, 1, 4] doesn't match the broadcast shape [2, 3, 4]"
  CHECK(rule_error("{type: Add, inplace: true}", {tensor({2, 1, 4}), tensor({2, 3, 4})}) ==
        "in place, the result [2, 3, 4] must have the first input's shape [2, 1, 4]");
  // PyTorch: "result type Half can't be cast to the desired output type Long" (int64 += float16)
  CHECK_HAS(rule_error("{type: Add, inplace: true}", {tensor({2, 3}, false, DType::Int64), tensor({2, 3}, false, DType::Float16)}),
            "in place");
}

TEST_CASE("Add: type promotion") {
  // PyTorch 1.13: dtype of a + b
  CHECK(add_dtype(DType::Float16, DType::Float32) == DType::Float32);
  CHECK(add_dtype(DType::Float32, DType::Float16) == DType::Float32);
  CHECK(add_dtype(DType::Float16, DType::BFloat16) == DType::Float32);
  CHECK(add_dtype(DType::Int64, DType::Float16) == DType::Float16);
  CHECK(add_dtype(DType::Int32, DType::Int64) == DType::Int64);
  CHECK(add_dtype(DType::Float64, DType::Float32) == DType::Float64);
  CHECK(add_dtype(DType::Bool, DType::Int8) == DType::Int8);
  CHECK(add_dtype(DType::Int16, DType::UInt8) == DType::Int16);
  CHECK(add_dtype(DType::Bool, DType::Bool) == DType::Bool);
}

// PyTorch 1.13: int8 + uint8 and uint8 + int8 are int16 (neither holds the other's range);
// torch.cat promotes the same way.
TEST_CASE("Add / Concat: int8 with uint8 promotes to int16") {
  CHECK(add_dtype(DType::Int8, DType::UInt8) == DType::Int16);
  CHECK(add_dtype(DType::UInt8, DType::Int8) == DType::Int16);
  const auto r = run_rule("{type: Concat, dim: 1}", {tensor({2, 3}, false, DType::UInt8), tensor({2, 3}, false, DType::Int8)});
  CHECK(r.outputs[0].dtype == DType::Int16);
}

// PyTorch 1.13: `a += b` keeps a's dtype whenever the promoted type can be cast to it (same
// kind or lower: float16 += float32 -> float16, float16 += bfloat16 -> float16, int32 += int64
// -> int32); only float into int and int into bool are refused.
TEST_CASE("Add: in place keeps the first input's dtype") {
  CHECK(rule_error("{type: Add, inplace: true}", {tensor({2, 3}, true, DType::Float16), tensor({2, 3}, true, DType::Float32)}) == "");
  CHECK(rule_error("{type: Add, inplace: true}", {tensor({2, 3}, true, DType::Float16), tensor({2, 3}, true, DType::BFloat16)}) == "");
  CHECK(rule_error("{type: Add, inplace: true}", {tensor({2, 3}, false, DType::Int32), tensor({2, 3}, false, DType::Int64)}) == "");
  CHECK(rule_error("{type: Add, inplace: true}", {tensor({2, 3}, false, DType::Float64), tensor({2, 3}, false, DType::Float32)}) == "");
}

// A refused in-place add must say which dtypes clash: today int64 += float16 reports "the result
// [2, 3] must have the first input's shape and dtype [2, 3]", naming neither dtype. PyTorch:
// "result type Half can't be cast to the desired output type Long".
TEST_CASE("Add: a dtype clash in place names both dtypes") {
  const auto msg =
      rule_error("{type: Add, inplace: true}", {tensor({2, 3}, false, DType::Int64), tensor({2, 3}, false, DType::Float16)});
  CHECK_HAS(msg, "float16");
  CHECK_HAS(msg, "int64");
}

// Every pair of nnmem's dtypes, printed by PyTorch 1.13 as (a + b).dtype; torch.cat agrees on all
// of them. Rows and columns in the order float32 float16 bfloat16 float64 int64 int32 int16 int8
// uint8 bool.
TEST_CASE("Add / Concat: the whole promotion table") {
  const DType order[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int64,
                         DType::Int32,   DType::Int16,   DType::Int8,     DType::UInt8,   DType::Bool};
  const char* const table[10][10] = {
      {"float32", "float32", "float32", "float64", "float32", "float32", "float32", "float32", "float32", "float32"},
      {"float32", "float16", "float32", "float64", "float16", "float16", "float16", "float16", "float16", "float16"},
      {"float32", "float32", "bfloat16", "float64", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16"},
      {"float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64"},
      {"float32", "float16", "bfloat16", "float64", "int64", "int64", "int64", "int64", "int64", "int64"},
      {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int32", "int32", "int32", "int32"},
      {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int16", "int16", "int16"},
      {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "int16", "int8"},
      {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int16", "uint8", "uint8"},
      {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"},
  };
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t j = 0; j < 10; ++j) {
      CAPTURE(dtype_name(order[i]));
      CAPTURE(dtype_name(order[j]));
      CHECK(dtype_name(add_dtype(order[i], order[j])) == table[i][j]);
      const auto cat = run_rule("{type: Concat, dim: 0}", {tensor({2, 3}, false, order[i]), tensor({2, 3}, false, order[j])});
      CHECK(dtype_name(cat.outputs[0].dtype) == table[i][j]);
    }
}

// PyTorch 1.13, `a += b` for every pair: a's dtype, or "result type X can't be cast to the desired
// output type Y" exactly when a float lands in an integer or a non-bool in a bool.
TEST_CASE("Add: in place, every pair of dtypes") {
  const DType all[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int64,
                       DType::Int32,   DType::Int16,   DType::Int8,     DType::UInt8,   DType::Bool};
  for (const DType a : all)
    for (const DType b : all) {
      CAPTURE(dtype_name(a));
      CAPTURE(dtype_name(b));
      const bool refused = (is_floating(b) && !is_floating(a)) || (a == DType::Bool && b != DType::Bool);
      const std::string msg = rule_error("{type: Add, inplace: true}", {tensor({2, 3}, false, a), tensor({2, 3}, false, b)});
      if (refused) {
        CHECK_HAS(msg, "cannot be stored in the first input's dtype " + std::string(dtype_name(a)));
      } else {
        CHECK(msg == "");
        if (msg.empty()) CHECK(add_dtype(a, b, true) == a);
      }
    }
  // the exact wording, naming both dtypes
  CHECK(rule_error("{type: Add, inplace: true}", {tensor({2, 3}, false, DType::Bool), tensor({2, 3}, false, DType::UInt8)}) ==
        "in place, the result's dtype uint8 cannot be stored in the first input's dtype bool (PyTorch casts no float into "
        "an integer, nor anything into bool)");
  // in place keeps the first input's storage and dtype: float16 += float32 is still float16
  const auto r = run_rule("{type: Add, inplace: true}", {tensor({2, 3}, true, DType::Float16), tensor({2, 3}, true, DType::Float32)});
  CHECK(r.alias == Alias::InPlace);
  CHECK(r.outputs[0].dtype == DType::Float16);
  CHECK(add_dtype(DType::Float16, DType::Float32) == DType::Float32);  // out of place it promotes
}

TEST_CASE("Mul: keeps each operand the other's gradient needs") {
  // a * b (MulBackward0): other for self's grad, self for other's grad. Hooks: [input0, input1],
  // [input1] when only a needs a grad, [input0] when only b does.
  auto r = run_rule("{type: Mul}", {tensor({2, 3, 4}), tensor({2, 3, 4})});
  CHECK(r.broadcasts);  // a broadcast operand's gradient is computed at the output's shape, then summed
  CHECK_FALSE(r.grad_passthrough);
  CHECK(out_shape(r) == "[2, 3, 4]");
  CHECK(r.macs == 2 * 3 * 4);
  CHECK(r.alias == Alias::None);
  CHECK(saved_sorted(r) == "input0 input1");
  CHECK(saved_of(run_rule("{type: Mul}", {tensor({2, 3, 4}, true), tensor({2, 3, 4}, false)})) == "input1");
  CHECK(saved_of(run_rule("{type: Mul}", {tensor({2, 3, 4}, false), tensor({2, 3, 4}, true)})) == "input0");
  CHECK(saved_of(run_rule("{type: Mul}", {tensor({2, 3, 4}, false), tensor({2, 3, 4}, false)})).empty());
  CHECK(saved_of(run_rule("{type: Mul}", {tensor({2, 3, 4}), tensor({2, 3, 4})}, kEval)).empty());
  // squeeze-and-excitation gate: [2, 8, 5, 5] * [2, 8, 1, 1] -> [2, 8, 5, 5]
  r = run_rule("{type: Mul}", {tensor({2, 8, 5, 5}), tensor({2, 8, 1, 1})});
  CHECK(out_shape(r) == "[2, 8, 5, 5]");
  CHECK(r.macs == 2 * 8 * 5 * 5);
  CHECK(saved_sorted(r) == "input0 input1");
  CHECK(saved_of(run_rule("{type: Mul}", {tensor({2, 8, 5, 5}, false), tensor({2, 8, 1, 1}, true)})) == "input0");
  // PyTorch: "The size of tensor a (8) must match the size of tensor b (4) at non-singleton dimension 1"
  CHECK(rule_error("{type: Mul}", {tensor({2, 8, 5, 5}), tensor({2, 4, 1, 1})}) ==
        "input shapes [2, 8, 5, 5], [2, 4, 1, 1] do not match (and cannot be broadcast): sizes 8 and 4 meet in dimension 1");
}

TEST_CASE("Concat: any dim") {
  // torch.cat([a, b], 1) on [2, 3, 4] and [2, 5, 4] -> [2, 8, 4]; CatBackward0 keeps nothing
  auto r = run_rule("{type: Concat, dim: 1}", {tensor({2, 3, 4}), tensor({2, 5, 4})});
  CHECK(out_shape(r) == "[2, 8, 4]");
  CHECK(r.grad_passthrough);
  CHECK(r.alias == Alias::None);
  CHECK(saved_of(r).empty());
  // dim 0: [2, 3, 4] and [5, 3, 4] -> [7, 3, 4]
  CHECK(out_shape(run_rule("{type: Concat, dim: 0}", {tensor({2, 3, 4}), tensor({5, 3, 4})})) == "[7, 3, 4]");
  // dim -1, three inputs: [2, 3, 4], [2, 3, 6], [2, 3, 1] -> [2, 3, 11]
  r = run_rule("{type: Concat, dim: -1}", {tensor({2, 3, 4}), tensor({2, 3, 6}), tensor({2, 3, 1})});
  CHECK(out_shape(r) == "[2, 3, 11]");
  // dtypes promote: float16 with float32 -> float32
  r = run_rule("{type: Concat, dim: 1}", {tensor({2, 3}, true, DType::Float16), tensor({2, 3}, true, DType::Float32)});
  CHECK(r.outputs[0].dtype == DType::Float32);
  // PyTorch: "Sizes of tensors must match except in dimension 1. Expected size 4 but got size 5 …"
  CHECK(rule_error("{type: Concat, dim: 1}", {tensor({2, 3, 4}), tensor({2, 5, 5})}) ==
        "inputs must match in every dimension but dim 1, found [2, 3, 4], [2, 5, 5]");
  // PyTorch: "Tensors must have same number of dimensions: got 3 and 2"
  CHECK(rule_error("{type: Concat, dim: 1}", {tensor({2, 3, 4}), tensor({2, 3})}) ==
        "inputs must match in every dimension but dim 1, found [2, 3, 4], [2, 3]");
  // PyTorch: "Dimension out of range (expected to be in range of [-3, 2], but got 3)" / -4
  CHECK(rule_error("{type: Concat, dim: 3}", {tensor({2, 3, 4}), tensor({2, 3, 4})}) ==
        "dim must be in [-3, 2] for a 3-D input, found 3");
  CHECK(rule_error("{type: Concat, dim: -4}", {tensor({2, 3, 4}), tensor({2, 3, 4})}) ==
        "dim must be in [-3, 2] for a 3-D input, found -4");
}

TEST_CASE("Merge layers in a spec: input counts and located errors") {
  // Concat of per-sample [3, 4] and [5, 4] along dim 1 -> [1, 8, 4]
  const Graph g = graph_from(two_inputs("[3, 4]", "[5, 4]", "{type: Concat, inputs: [a, b], dim: 1}"));
  REQUIRE(g.nodes.size() == 1);
  CHECK(out_shape(*g.nodes[0].result) == "[1, 8, 4]");
  CHECK(error_from(two_inputs("[3, 4]", "[5, 5]", "{type: Concat, inputs: [a, b], dim: 1}")) ==
        "test.yaml:5:5: error: Concat '0': inputs must match in every dimension but dim 1, found [1, 3, 4], [1, 5, 5]");
  CHECK(error_from(two_inputs("[3, 4]", "[3, 4]", "{type: Concat, inputs: [a, b], dim: 3}")) ==
        "test.yaml:5:41: error: Concat '0': dim must be in [-3, 2] for a 3-D input, found 3");
  CHECK(error_from(two_inputs("[3, 4]", "[3, 4]", "{type: Concat, inputs: [a, b]}")) ==
        "test.yaml:5:5: error: Concat '0': needs attribute 'dim' (int; required)");
  CHECK(error_from(two_inputs("[3, 4]", "[5, 4]", "{type: Add, inputs: [a, b]}")) ==
        "test.yaml:5:5: error: Add '0': input shapes [1, 3, 4], [1, 5, 4] do not match (and cannot be broadcast): sizes 3 and 5 "
        "meet in dimension 1");
  CHECK(error_from(two_inputs("[3, 4]", "[3, 4]", "{type: Add, inputs: [a, b], in_place: true}")) ==
        "test.yaml:5:33: error: Add '0': unknown attribute 'in_place'; did you mean 'inplace'?");
  CHECK(error_from(two_inputs("[3, 4]", "[3, 4]", "{type: Mul, inputs: [a, b], inplace: true}")) ==
        "test.yaml:5:33: error: Mul '0': unknown attribute 'inplace'; Mul takes no attributes");
  // Mul takes exactly 2 inputs, Add at least 2 (Concat at least 1: torch.cat([x]) is legal)
  CHECK(error_from(two_inputs("[3, 4]", "[3, 4]", "{type: Mul, inputs: [a, b, a]}")) ==
        "test.yaml:5:5: error: Mul '0': takes 2 input(s), found 3");
  CHECK(error_from(two_inputs("[3, 4]", "[3, 4]", "{type: Add, inputs: [a]}")) ==
        "test.yaml:5:5: error: Add '0': takes at least 2 input(s), found 1");
}

TEST_CASE("Concat of a single input copies it, and passes its gradient on") {
  // torch 1.13 and 2.13: torch.cat([x], 1) is a new tensor of x's size (another storage, also
  // under no_grad); CatBackward0 keeps nothing, and x's gradient is y's gradient's storage.
  const auto r = run_rule("{type: Concat, dim: 1}", {tensor({2, 3, 4})});
  CHECK(out_shape(r) == "[2, 3, 4]");
  CHECK(r.alias == Alias::None);
  CHECK(r.grad_passthrough);
  CHECK(saved_of(r).empty());
  CHECK(rule_error("{type: Concat, dim: 3}", {tensor({2, 3, 4})}) == "dim must be in [-3, 2] for a 3-D input, found 3");
  const Estimate e = estimate_from(R"(
inputs: {x: [16]}
layers:
  - {name: fc, type: Linear, out_features: 16}
  - {name: cat, type: Concat, dim: 1}
  - {name: head, type: Linear, out_features: 4}
loss: mse
)");
  REQUIRE(e.layers.size() == 3);
  CHECK(e.layers[1].output_bytes == 16 * 4);
  for (const auto& ev : e.timeline)
    if (ev.phase == Phase::Backward && e.timeline.layer(ev) == "cat") CHECK(ev.delta <= 0);  // allocates nothing in backward
}
