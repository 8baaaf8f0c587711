// Embedding, Parameter, Constant and Buffer (layers/embedding.cpp); torch 2.13.0+cpu, saved_tensors_hooks.
#include "../helpers.hpp"
#include "nnmem/checkpoint.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("Embedding: int64 ids in, rows out; keeps the ids") {
  const auto r = run_rule("{type: Embedding, num_embeddings: 100, embedding_dim: 64}", {tensor({2, 8}, false, DType::Int64)});
  CHECK(out_shape(r) == "[2, 8, 64]");
  CHECK(r.outputs[0].dtype == DType::Float32);
  CHECK(params_of(r) == "weight[100, 64]");
  CHECK(saved_of(r) == "input0");
  CHECK(saved_of(run_rule("{type: Embedding, num_embeddings: 100, embedding_dim: 64}", {tensor({2, 8}, false, DType::Int64)},
                          kCpu, false))
            .empty());  // frozen: no weight gradient, nothing kept
  CHECK(rule_error("{type: Embedding, num_embeddings: 100, embedding_dim: 64}", {tensor({2, 8})}) ==
        "expected integer ids (int64 or int32), found float32 (an Embedding looks rows up by index; a float tensor wants a Linear)");
  CHECK(rule_error("{type: Embedding, num_embeddings: 100, embedding_dim: 64, padding_idx: 100}",
                   {tensor({2, 8}, false, DType::Int64)}) ==
        "padding_idx must be in [-100, 99] for num_embeddings 100, found 100");
  // sparse: true (validation/probe_sparse_embedding.py): a row per id looked up, repeats included —
  // 16 here, whatever the table's 100 rows; a padding_idx would make it depend on the ids.
  const auto sparse = run_rule("{type: Embedding, num_embeddings: 100, embedding_dim: 64, sparse: true}",
                               {tensor({2, 8}, false, DType::Int64)});
  CHECK(sparse.params[0].sparse_rows == 16);
  CHECK(r.params[0].sparse_rows == 0);
  Parameter table{.numel = 100 * 64, .dim0 = 100, .sparse_rows = 16, .dtype = DType::Float32};
  CHECK(table.grad_bytes() == 16 * 8 + 16 * 64 * 4);  // int64 indices [1, 16], float32 values [16, 64]
  table.sparse_rows = 0;
  CHECK(table.grad_bytes() == 100 * 64 * 4);
  CHECK_HAS(rule_error("{type: Embedding, num_embeddings: 100, embedding_dim: 64, sparse: true, padding_idx: 0}",
                       {tensor({2, 8}, false, DType::Int64)}),
            "expected no padding_idx with sparse: true, found padding_idx 0");
}

TEST_CASE("Parameter and Constant read nothing") {
  const auto p = run_rule("{type: Parameter, shape: [1, 1, 768]}", {});
  CHECK(out_shape(p) == "[1, 1, 768]");
  CHECK(params_of(p) == "value[1, 1, 768]");
  CHECK(p.alias == Alias::Parameter);
  const auto c = run_rule("{type: Constant, shape: [1, 16], dtype: int64}", {});
  CHECK(out_shape(c) == "[1, 16]");
  CHECK(c.outputs[0].dtype == DType::Int64);
  CHECK(c.params.empty());
  CHECK(run_rule("{type: Constant, shape: [1, 16]}", {}).outputs[0].dtype == DType::Float32);
  CHECK(rule_error("{type: Constant, shape: [1, 0]}", {}) == "shape sizes must be positive, found [1, 0]");
  // made from tensors without a gradient (BERT's token_type_ids gathered from its buffer)
  CHECK(out_shape(run_rule("{type: Constant, shape: [1, 16], dtype: int64}", {tensor({1, 64}, false, DType::Int64)})) ==
        "[1, 16]");
  CHECK(rule_error("{type: Constant, shape: [1, 16]}", {tensor({2, 16}, true)}) ==
        "a Constant is made without a gradient, but its input 0 needs one (detach it first, or use a layer that "
        "differentiates)");
  // made for the batch: HF's eager causal mask, [B, 1, T, T] (masking_utils.eager_mask's torch.where)
  Context batch2 = kCpu;
  batch2.batch = 2;
  const auto mask = run_rule("{type: Constant, shape: [1, 32, 32], per_sample: true}", {tensor({1, 1, 32, 32}, false, DType::Bool)}, batch2);
  CHECK(out_shape(mask) == "[2, 1, 32, 32]");
  CHECK(mask.outputs[0].dtype == DType::Float32);
  CHECK(rule_error("{type: Constant, shape: [1, 0], per_sample: true}", {}) == "shape sizes must be positive, found [1, 0]");
  // per_sample: one sample's shape, the batch prepended (RoBERTa's position ids from its ids [4, 16])
  Context batch4 = kCpu;
  batch4.batch = 4;
  const auto per_sample =
      run_rule("{type: Constant, shape: [16], dtype: int64, per_sample: true}", {tensor({4, 16}, false, DType::Int64)}, batch4);
  CHECK(out_shape(per_sample) == "[4, 16]");
  CHECK(per_sample.outputs[0].dtype == DType::Int64);
  // autocast: made in a linear's output dtype (T5's zeros position bias for the cross-attention,
  // torch.zeros(..., dtype=query_states.dtype)); the model's without autocast
  Context amp = kCpu;
  amp.amp = DType::BFloat16;
  CHECK(run_rule("{type: Constant, shape: [1, 4, 8, 8], dtype: autocast}", {}, amp).outputs[0].dtype == DType::BFloat16);
  CHECK(run_rule("{type: Constant, shape: [1, 4, 8, 8], dtype: autocast}", {}).outputs[0].dtype == DType::Float32);
  CHECK(rule_error("{type: Buffer, shape: [1, 4], dtype: autocast}", {}).find("autocast") != std::string::npos);
}

TEST_CASE("Buffer: a module's registered buffer, persistent, read as it is") {
  const auto b = run_rule("{type: Buffer, shape: [1, 512], dtype: int64}", {});
  CHECK(out_shape(b) == "[1, 512]");
  CHECK(b.alias == Alias::Buffer);
  CHECK(b.params.empty());
  REQUIRE(b.buffers.size() == 1);
  CHECK(b.buffers[0].shape == Shape{1, 512});
  CHECK(b.buffers[0].dtype == DType::Int64);
  CHECK(b.buffers[0].persistent);
  // register_buffer(..., persistent=False): memory all the same, but not in the state_dict
  const auto hidden = run_rule("{type: Buffer, shape: [4], persistent: false}", {});
  REQUIRE(hidden.buffers.size() == 1);
  CHECK_FALSE(hidden.buffers[0].persistent);
}

TEST_CASE("Buffer: its state_dict name is the layer's, and only when persistent") {
  const Graph g = graph_from("name: t\ninputs: {x: [4]}\nlayers:\n"
                             "  - {name: m.kept, type: Buffer, inputs: [], shape: [4]}\n"
                             "  - {name: m.hidden, type: Buffer, inputs: [], shape: [4], persistent: false}\n"
                             "  - {name: fc, type: Linear, input: x, out_features: 2}\n");
  std::vector<std::string> names;
  for (const StateTensor& t : state_dict_tensors(g)) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"m.kept", "fc.weight", "fc.bias"});
}
