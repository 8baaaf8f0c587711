// Tensors a model reads without an input: Embedding (a lookup of int64 ids), Parameter (a
// learnable tensor used as it is: a class token, a learned positional table), Buffer (a
// module's registered buffer: BERT's position_ids, LLaMA's rotary inv_freq) and Constant (a
// tensor made in forward without a gradient: positions, a causal mask, rotary cos/sin tables,
// made from nothing or from tensors that need no gradient, as BERT's token_type_ids gathered
// from its buffer). They take their full shape, dimension 0 included: a leading 1 broadcasts
// over the batch; a Constant made for the batch (HF's eager causal mask, [B, 1, T, T]; RoBERTa's position ids, made from the ids) says
// `per_sample: true` and gives its shape without the batch. Parameter and Buffer read nothing (`inputs: []`); a Buffer is persistent
// memory (buffer_bytes), reading it allocates nothing, and forward need not read it at all
// (LLaMA's original_inv_freq). What 2.13 keeps (saved_tensors_hooks,
// validation/probe_transformer_ops.py): embedding keeps only the ids; the others keep nothing.
// `sparse: true` (validation/probe_sparse_embedding.py): the weight's gradient is a sparse COO
// tensor, not the table's size: a row per id looked up (ParamDecl::sparse_rows); the memory
// model keeps it (src/memory/sparse_grad.cpp).
#include "common.hpp"

namespace nnmem::layers {
namespace {

LayerResult infer_embedding(const LayerCall& call) {
  const DType ids = call.input().dtype;
  if (ids != DType::Int64 && ids != DType::Int32)
    throw LayerError("expected integer ids (int64 or int32), found " + std::string(dtype_name(ids)) +
                     (is_floating(ids) ? " (an Embedding looks rows up by index; a float tensor wants a Linear)" : ""));
  const std::int64_t rows = call.attrs.integer("num_embeddings");
  const std::int64_t dim = call.attrs.integer("embedding_dim");
  if (call.attrs.given("padding_idx")) {
    const std::int64_t pad = call.attrs.integer("padding_idx");
    if (pad < -rows || pad >= rows)
      throw LayerError("padding_idx must be in [" + std::to_string(-rows) + ", " + std::to_string(rows - 1) +
                           "] for num_embeddings " + with_commas(rows) + ", found " + std::to_string(pad),
                       "padding_idx");
  }
  LayerResult res;
  Shape out = call.shape();
  out.push_back(dim);
  res.outputs.push_back({out, call.ctx.float_dtype});
  res.params.push_back({"weight", {rows, dim}});
  if (call.attrs.flag("sparse")) {
    // embedding_sparse_backward: indices ids.reshape(1, -1), values grad.reshape(-1, dim), a row
    // per id looked up; with a padding_idx it drops that id's rows (indices != padding_idx), so
    // its size would depend on the ids themselves.
    if (call.attrs.given("padding_idx"))
      throw LayerError("sparse: true with a padding_idx: the gradient drops the rows of the padding ids, so its size "
                       "depends on how many the batch holds, which a spec does not say; expected no padding_idx with "
                       "sparse: true, found padding_idx " + std::to_string(call.attrs.integer("padding_idx")), "sparse");
    res.params.back().sparse_rows = numel(call.shape());
  }
  if (call.training() && call.trainable) res.save_input(0, "indices");  // embedding_backward(grad, indices, …)
  return res;
}

Shape full_shape(const LayerCall& call) {
  const auto shape = call.attrs.list("shape");
  for (std::int64_t d : shape)
    if (d < 1) throw LayerError("shape sizes must be positive, found " + to_string(shape), "shape");
  return shape;
}

LayerResult infer_parameter(const LayerCall& call) {
  LayerResult res;
  Shape shape = full_shape(call);
  res.outputs.push_back({shape, call.ctx.float_dtype});
  res.params.push_back({"value", std::move(shape)});
  res.alias = Alias::Parameter;
  return res;
}

// `autocast` (a Constant's only): the dtype of what it is made like, a linear's output: autocast's
// low-precision one when it is on, else the model's (T5's zeros bias, made in the query's dtype).
DType dtype_attr(const LayerCall& call) {
  const std::string& word = call.attrs.text("dtype");
  if (word == "autocast") return call.ctx.amp.value_or(call.ctx.float_dtype);
  return word == "float" ? call.ctx.float_dtype : *parse_dtype(word);
}

LayerResult infer_buffer(const LayerCall& call) {
  LayerResult res;
  Shape shape = full_shape(call);
  res.outputs.push_back({shape, dtype_attr(call)});
  // The module's buffer is the layer itself: its state_dict name is the layer's (no ".name").
  res.buffers.push_back({"", std::move(shape), dtype_attr(call), false, call.attrs.flag("persistent")});
  res.alias = Alias::Buffer;
  return res;
}

LayerResult infer_constant(const LayerCall& call) {
  for (std::size_t i = 0; i < call.inputs.size(); ++i)
    if (call.inputs[i].requires_grad)
      throw LayerError("a Constant is made without a gradient, but its input " + std::to_string(i) +
                       " needs one (detach it first, or use a layer that differentiates)");
  LayerResult res;
  Shape shape = full_shape(call);
  if (call.attrs.flag("per_sample")) shape.insert(shape.begin(), call.ctx.batch);
  res.outputs.push_back({std::move(shape), dtype_attr(call)});
  return res;
}

AttrDef dtype_word() {
  return AttrDef::word("dtype", {"float", "float32", "float16", "bfloat16", "float64", "int64", "int32", "bool"},
                       "float: the model's dtype");
}

AttrDef constant_dtype_word() {
  return AttrDef::word("dtype", {"float", "float32", "float16", "bfloat16", "float64", "int64", "int32", "bool", "autocast"},
                       "float: the model's dtype; autocast: autocast's low-precision dtype when it is on, else the "
                       "model's (made like a linear's output)");
}

const bool registered = [] {
  register_layer({.type = "Embedding",
                  .summary = "a lookup table: int64 ids [N, *] -> [N, *, embedding_dim]",
                  .attrs = {AttrDef::integer("num_embeddings", "rows of the table (the vocabulary)").needed().at_least(1),
                            AttrDef::integer("embedding_dim", "the size of each row").needed().at_least(1),
                            AttrDef::integer("padding_idx", "a row that gets no gradient").optional(),
                            AttrDef::flag("sparse", false, "a sparse gradient: only the rows looked up")},
                  .infer = infer_embedding});
  register_layer({.type = "Parameter",
                  .summary = "a learnable tensor read as it is (inputs: []), e.g. a class token",
                  .attrs = {AttrDef::list("shape", "the full shape; a leading 1 broadcasts over the batch").needed()},
                  .min_inputs = 0,
                  .max_inputs = 0,
                  .infer = infer_parameter});
  register_layer({.type = "Constant",
                  .summary = "a tensor made in forward with no gradient, from nothing (inputs: []) or from its inputs: "
                             "positions, masks, cos/sin",
                  .attrs = {AttrDef::list("shape", "the full shape; a leading 1 broadcasts over the batch").needed(),
                            constant_dtype_word(),
                            AttrDef::flag("per_sample", false,
                                          "shape is one sample's: the tensor is [batch, *shape] (a mask made for the batch, "
                                          "RoBERTa's position ids made from the ids)")},
                  .min_inputs = 0,
                  .max_inputs = -1,
                  .infer = infer_constant});
  register_layer({.type = "Buffer",
                  .summary = "a module's registered buffer, read as it is (inputs: []): persistent, unread allowed",
                  .attrs = {AttrDef::list("shape", "the full shape; a leading 1 broadcasts over the batch").needed(), dtype_word(),
                            AttrDef::flag("persistent", true, "in the state_dict (register_buffer's persistent=)")},
                  .min_inputs = 0,
                  .max_inputs = 0,
                  .infer = infer_buffer});
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
