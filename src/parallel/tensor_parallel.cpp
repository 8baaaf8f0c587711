// Megatron-style tensor parallelism as one rank's spec (docs/parallel.md, "Tensor parallelism"):
// which tensors are split over the ranks is followed through the graph from the spec's own
// structure, and the layers that split them are rewritten to a rank's share. Modelled.
//
// A Linear (or transformers' Conv1D) reading a whole tensor is column-parallel: its weight's rows and its output's last
// dimension are split. A Linear reading a tensor split along its last dimension is
// row-parallel: its weight's columns are split and its output is whole again (all-reduced). An
// Embedding of the vocabulary is vocabulary-parallel (ceil(V / T) rows, the output all-reduced
// whole; other tables, positions and token types, are replicated). Between
// them, views, transposes, element-wise ops, attention and matrix products carry the split
// along; norms and everything else are replicated and must not read a split tensor.
//
// With sequence parallelism (Korthikanti et al. 2022; Megatron's --sequence-parallel) the tensors
// between the tensor-parallel regions (norms, dropout, residual adds) are split along their
// sequence (dimension -2) instead of held whole: a whole activation read by a norm or a dropout
// is scattered to the rank's shard where it is made (a float input given as the shard, as a
// pipeline stage receives it), a column-parallel Linear reading a shard all-gathers it (and
// keeps the shard: ColumnParallelLinear), a row-parallel one reduce-scatters its output
// (RowParallelLinear), and another layer that needs the whole sequence reads it gathered.
#include <algorithm>

#include "../enum_names.hpp"
#include "collectives.hpp"
#include "split_dims.hpp"
#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem {
namespace {

using tensor_split::elementwise;
using tensor_split::is_linear;
using tensor_split::is_view;
using tensor_split::linears_of_conv1d;
using tensor_split::moved_dim;
using tensor_split::reduces;
using tensor_split::view_split_dim;

constexpr int kWhole = -1;
constexpr EnumNames<TpRole, 5> kTpRoles{{{
    {TpRole::Replicated, "replicated"}, {TpRole::Column, "column-parallel"}, {TpRole::Row, "row-parallel"},
    {TpRole::VocabEmbedding, "vocabulary-parallel"}, {TpRole::Experts, "expert-tensor-parallel"},
}}};

class Splitter {
 public:
  Splitter(const Graph& g, std::int64_t tp, bool sequence_parallel)
      : g_(g), tp_(tp), sp_(sequence_parallel), split_(g.values.size(), kWhole), local_(g.values.size(), 0), seq_(g.values.size(), false) {}

  TensorParallelSpec run() {
    check_heads();
    // The vocabulary's table: the largest of those reading a model input (the token ids;
    // positions come from a Constant or a buffer), else the largest. (The largest alone took
    // GPT-2's 1,024 positions for the vocabulary of a char-level model of 65 tokens.)
    std::int64_t largest = 0, reading_input = 0;
    for (const Node& n : g_.nodes)
      if (spec_of(n).type == "Embedding") {
        largest = std::max(largest, rows(n));
        if (reads_model_input(n)) reading_input = std::max(reading_input, rows(n));
      }
    vocab_reads_input_ = reading_input > 0;
    vocab_ = vocab_reads_input_ ? reading_input : largest;
    out_.spec = g_.spec;
    linears_of_conv1d(out_.spec);
    if (sp_) shard_inputs();
    for (const Node& n : g_.nodes) {
      visit(n);
      if (sp_)
        for (int v : n.outputs)
          if (scattered(v)) scatter(n, v);
    }
    insert_collectives(out_.spec, std::move(scatters_), std::move(gathers_));
    return std::move(out_);
  }

 private:
  const LayerSpec& spec_of(const Node& n) const { return g_.layer(n); }
  const Shape& shape(int v) const { return g_.values[static_cast<std::size_t>(v)].type.shape; }
  [[noreturn]] void fail(const Node& n, const std::string& what) const {
    const LayerSpec& l = spec_of(n);
    throw Error(l.loc, "--tp " + std::to_string(tp_) + ": " + l.title() + " " + what);
  }
  std::string split_text(int v) const {
    return "'" + g_.values[static_cast<std::size_t>(v)].name + "' " + to_string(shape(v)) + ", split over the ranks along dimension " +
           std::to_string(split_[static_cast<std::size_t>(v)]);
  }
  void set_attr(const Node& n, const std::string& attr, std::int64_t value) {
    for (Attribute& a : out_.spec.layers[static_cast<std::size_t>(n.layer)].attrs)
      if (a.name == attr) a.value.integer = value;
  }
  void role(const Node& n, TpRole r) { out_.split.push_back({spec_of(n).name, spec_of(n).type, r}); }
  void mark(int v, int dim, std::int64_t local, bool seq = false) {
    split_[static_cast<std::size_t>(v)] = dim;
    local_[static_cast<std::size_t>(v)] = local;
    seq_[static_cast<std::size_t>(v)] = seq;
  }
  // Marks `out` split as `from` is.
  void carry(int out, int dim, int from) { mark(out, dim, local_[static_cast<std::size_t>(from)], seq_[static_cast<std::size_t>(from)]); }
  bool seq(int v) const { return seq_[static_cast<std::size_t>(v)]; }

  // --- Sequence parallelism: where the sequence-split regions begin.

  // A whole float activation with a sequence (dimension -2 of at least [N, s, h]) read by a norm
  // or a dropout: the region Megatron splits along the sequence.
  bool scattered(int v) const {
    const TensorValue& val = g_.values[static_cast<std::size_t>(v)];
    if (split_[static_cast<std::size_t>(v)] != kWhole || val.type.shape.size() < 3 || !is_floating(val.type.dtype)) return false;
    return std::any_of(val.readers.begin(), val.readers.end(), [&](int r) {
      const std::string& t = spec_of(g_.nodes[static_cast<std::size_t>(r)]).type;
      return t == "LayerNorm" || t == "RMSNorm" || t == "Dropout";
    });
  }
  std::int64_t seq_share(const Node& n, int v) const {
    const Shape& s = shape(v);
    const std::int64_t len = s[s.size() - 2];
    if (len % tp_ != 0)
      fail(n, "reads '" + g_.values[static_cast<std::size_t>(v)].name + "' " + to_string(s) + ", which --sequence-parallel splits along its "
              "sequence (dimension " + std::to_string(s.size() - 2) + "): expected its length to divide by " + std::to_string(tp_) +
              ", found " + std::to_string(len));
    return len / tp_;
  }
  const Node& first_reader(int v) const { return g_.nodes[static_cast<std::size_t>(g_.values[static_cast<std::size_t>(v)].readers.front())]; }
  // A float input read in a sequence-parallel region is given as the rank's shard.
  void shard_inputs() {
    for (InputSpec& in : out_.spec.inputs) {
      const auto v = std::find_if(g_.values.begin(), g_.values.end(), [&](const TensorValue& t) { return t.producer < 0 && t.name == in.name; });
      if (v == g_.values.end()) continue;
      const int id = static_cast<int>(v - g_.values.begin());
      if (!scattered(id)) continue;
      const std::int64_t share = seq_share(first_reader(id), id);
      in.shape[in.shape.size() - 2] = share;
      mark(id, static_cast<int>(v->type.shape.size() - 2), share, true);
    }
  }
  // A layer's output: a ScatterToSequenceParallelRegion after it, which its readers read instead.
  void scatter(const Node& n, int v) {
    const std::int64_t share = seq_share(first_reader(v), v);
    mark(v, static_cast<int>(shape(v).size() - 2), share, true);
    const std::string& value = g_.values[static_cast<std::size_t>(v)].name;
    scatters_.push_back({static_cast<std::size_t>(n.layer),
                         collective_layer(spec_of(n), "ScatterToSequenceParallelRegion", value + ".scatter_to_sequence_parallel_region",
                                          value, tp_)});
  }
  // Whether `n` can read the sequence shard `v`: a Linear (it gathers), a norm, or an
  // element-wise layer not working along the sequence. Others (a pooler's first token, a view
  // across it) read the whole sequence, gathered.
  bool reads_shard(const Node& n, int v) const {
    const LayerSpec& l = spec_of(n);
    if (is_linear(l.type) || l.type == "LayerNorm" || l.type == "RMSNorm") return true;
    if (l.type == "MatMul" || l.type == "ScaledDotProductAttention") return false;  // attention over the whole sequence
    const Attribute* dim = l.find_attr("dim");
    const auto rank = static_cast<std::int64_t>(shape(v).size());
    if (dim && dim->value.kind == Value::Kind::Int && (dim->value.integer + rank) % rank == split_[static_cast<std::size_t>(v)]) return false;
    return elementwise(n, g_);
  }
  // A GatherFromSequenceParallelRegion before `n`, which `n` reads instead of the shard.
  void gather(const Node& n, int v) {
    const LayerSpec& to = spec_of(n);
    const std::string& value = g_.values[static_cast<std::size_t>(v)].name;
    if (static_cast<std::size_t>(split_[static_cast<std::size_t>(v)]) + 2 != shape(v).size())
      fail(n, "reads " + split_text(v) + ", a sequence shard whose sequence is no longer its dimension -2: it cannot be "
              "gathered back whole there; expected the layers of a sequence-parallel region to keep [N, s, h]");
    std::string name = to.name + ".gather_from_sequence_parallel_region";
    int before = 0;  // gathers for `n` already: a second shard it reads gets a name of its own
    for (const Collective& c : gathers_) {
      if (c.at != static_cast<std::size_t>(n.layer)) continue;
      if (c.layer.inputs.front() == value) return;  // read twice: gathered once
      ++before;
    }
    if (before > 0) name += "_" + std::to_string(before + 1);
    gathers_.push_back({static_cast<std::size_t>(n.layer), collective_layer(to, "GatherFromSequenceParallelRegion", name, value, tp_)});
  }
  void retype(const Node& n, const char* type) {
    LayerSpec& l = out_.spec.layers[static_cast<std::size_t>(n.layer)];
    l.type = type;
    l.attrs.push_back({"sequence_parallel", ranks_value(tp_, l.loc), l.loc});
  }

  // Attention heads split across the ranks: the query's and the key-value heads must divide.
  void check_heads() const {
    for (const Node& n : g_.nodes) {
      const std::string& t = spec_of(n).type;
      std::int64_t q = 0, kv = 0;
      if (t == "ScaledDotProductAttention" && shape(n.inputs[0]).size() == 4) {
        q = shape(n.inputs[0])[1];
        kv = shape(n.inputs[1])[1];
      } else if (t == "MultiheadAttention") {
        fail(n, "is one module with its projections inside; for tensor parallelism write its projections as Linear layers "
                "and its core as ScaledDotProductAttention, as examples/gpt2.yaml does");
      } else {
        continue;
      }
      if (q % tp_ != 0 || kv % tp_ != 0)
        fail(n, "splits its attention heads across the ranks: expected the " + std::to_string(q) + " query heads and " +
                    std::to_string(kv) + " key-value heads to divide by " + std::to_string(tp_) + ", found remainders " +
                    std::to_string(q % tp_) + " and " + std::to_string(kv % tp_));
    }
  }

  void visit(const Node& n) {
    const std::string& t = spec_of(n).type;
    int in = kWhole, reader = -1;
    for (int v : n.inputs) {
      if (split_[static_cast<std::size_t>(v)] == kWhole) continue;
      if (seq(v) && !reads_shard(n, v)) {
        gather(n, v);
        continue;
      }
      in = split_[static_cast<std::size_t>(v)], reader = v;
    }
    if (is_linear(t) && routes(n)) return router(n, in, reader);
    if (is_linear(t)) return linear(n, in, reader);
    if (t == "MoEExperts" && in == kWhole) return experts(n);
    if (t == "Embedding" && rows(n) == vocab_ && (!vocab_reads_input_ || reads_model_input(n))) {
      set_attr(n, "num_embeddings", ceil_div(vocab_));
      return role(n, TpRole::VocabEmbedding);
    }
    if (in == kWhole) {
      if (!n.result->params.empty()) role(n, TpRole::Replicated);
      return;
    }
    const int out = n.outputs.front();
    const std::size_t rank_in = shape(reader).size();
    if (is_view(t)) return view(n, reader, out);
    if (t == "Transpose" || t == "Permute") return move_dim(n, reader, out);
    if (t == "ScaledDotProductAttention" || t == "MatMul") {
      if (static_cast<std::size_t>(in) + 2 >= rank_in) fail(n, "multiplies along the split dimension of " + split_text(reader));
      // The output has the query's heads (the first operand's): with grouped-query attention a
      // rank's key-value heads are fewer.
      const int first = n.inputs.front();
      return carry(out, in, split_[static_cast<std::size_t>(first)] == kWhole ? reader : first);
    }
    if (seq(reader) && (t == "LayerNorm" || t == "RMSNorm")) return norm_of_shard(n, reader, out);
    if (reduces(t)) fail(n, "normalises or reduces a tensor split across the ranks, " + split_text(reader) + "; only Linear, views, "
                            "transposes, element-wise layers and attention can read one");
    const Attribute* dim = spec_of(n).find_attr("dim");
    if (dim && dim->value.kind == Value::Kind::Int) {
      const std::int64_t d = dim->value.integer < 0 ? dim->value.integer + static_cast<std::int64_t>(rank_in) : dim->value.integer;
      if (d == in && (t == "Split" || t == "Chunk")) return split_parts(n, reader);
      if (d == in) fail(n, "works along the split dimension of " + split_text(reader));
    }
    if (!elementwise(n, g_)) fail(n, "cannot read " + split_text(reader) + ": only Linear, views, transposes, element-wise "
                                    "layers and attention can");
    const std::size_t from_end = rank_in - static_cast<std::size_t>(in);
    for (int v : n.inputs) {
      const Shape& s = shape(v);
      if (split_[static_cast<std::size_t>(v)] != kWhole || s.size() < from_end) continue;
      if (s[s.size() - from_end] != 1)
        fail(n, "combines " + split_text(reader) + " with the whole tensor '" + g_.values[static_cast<std::size_t>(v)].name +
                    "' " + to_string(s) + "; expected both split or the whole one broadcast along that dimension");
    }
    const Shape& o = shape(out);
    carry(out, static_cast<int>(o.size() - from_end), reader);
    for (std::size_t k = 1; k < n.outputs.size(); ++k) carry(n.outputs[k], split_[static_cast<std::size_t>(out)], out);
  }

  bool reads_model_input(const Node& n) const {
    return !n.inputs.empty() && std::find(g_.inputs.begin(), g_.inputs.end(), n.inputs.front()) != g_.inputs.end();
  }
  // An Embedding's rows.
  std::int64_t rows(const Node& n) const { return spec_of(n).find_attr("num_embeddings")->value.integer; }
  std::int64_t ceil_div(std::int64_t n) const { return (n + tp_ - 1) / tp_; }

  // A norm over the features of a sequence shard: the shard normalised, its weights replicated.
  void norm_of_shard(const Node& n, int reader, int out) {
    const Attribute* normalized = spec_of(n).find_attr("normalized_shape");
    const std::size_t dims = normalized && normalized->value.kind == Value::Kind::List ? normalized->value.items.size() : 1;
    if (static_cast<std::size_t>(split_[static_cast<std::size_t>(reader)]) + dims >= shape(reader).size())
      fail(n, "normalises over the sequence of " + split_text(reader) + ", which --sequence-parallel splits");
    carry(out, split_[static_cast<std::size_t>(reader)], reader);
    if (!n.result->params.empty()) role(n, TpRole::Replicated);
  }

  // Column-parallel (whole input, or a sequence shard it gathers) or row-parallel (input split
  // along its last dimension).
  void linear(const Node& n, int in, int reader) {
    const int out = n.outputs.front();
    const Shape& o = shape(out);
    const bool gathers = in != kWhole && seq(reader);
    if (gathers) retype(n, "ColumnParallelLinear");
    if (in == kWhole || gathers) {
      const std::int64_t features = o.back();
      const bool head = std::find(g_.outputs.begin(), g_.outputs.end(), out) != g_.outputs.end() ||
                        std::any_of(g_.values[static_cast<std::size_t>(out)].readers.begin(),
                                    g_.values[static_cast<std::size_t>(out)].readers.end(),
                                    [&](int r) { return is_view(spec_of(g_.nodes[static_cast<std::size_t>(r)]).type) &&
                                                        std::find(g_.outputs.begin(), g_.outputs.end(),
                                                                  g_.nodes[static_cast<std::size_t>(r)].outputs.front()) != g_.outputs.end(); });
      if (features % tp_ != 0 && !head)
        fail(n, "is column-parallel: expected its out_features to divide by " + std::to_string(tp_) + ", found " + std::to_string(features));
      const std::int64_t local = ceil_div(features);  // a head's vocabulary padded, as Megatron pads it
      set_attr(n, "out_features", local);
      mark(out, static_cast<int>(o.size() - 1), local);
      return role(n, TpRole::Column);
    }
    if (static_cast<std::size_t>(in) + 1 != shape(reader).size())
      fail(n, "reads " + split_text(reader) + "; a row-parallel Linear needs it split along its last dimension");
    set_attr(n, "in_features", local_[static_cast<std::size_t>(reader)]);  // when the spec gives it
    role(n, TpRole::Row);
    if (sp_ && o.size() >= 3) {  // reduce-scattered to the rank's sequence shard
      const std::int64_t share = seq_share(n, out);
      retype(n, "RowParallelLinear");
      mark(out, static_cast<int>(o.size() - 2), share, true);
    }
  }

  // A mixture of experts' router (Megatron's TopKRouter): a Linear whose logits an MoEExperts
  // layer routes by. Replicated, not split: every rank scores every expert, on the tokens it holds
  // (with sequence parallelism, its shard: the logits keep the shard's split).
  bool routes(const Node& n) const {
    const int out = n.outputs.front();
    const auto& readers = g_.values[static_cast<std::size_t>(out)].readers;
    return std::any_of(readers.begin(), readers.end(), [&](int r) {
      const Node& m = g_.nodes[static_cast<std::size_t>(r)];
      return spec_of(m).type == "MoEExperts" && m.inputs.size() > 1 && m.inputs[1] == out;
    });
  }
  void router(const Node& n, int in, int reader) {
    if (in != kWhole && !seq(reader))
      fail(n, "is a mixture of experts' router, replicated on every rank; it cannot read " + split_text(reader));
    const Shape& o = shape(n.outputs.front());
    if (in != kWhole) mark(n.outputs.front(), static_cast<int>(o.size() - 2), local_[static_cast<std::size_t>(reader)], true);
    role(n, TpRole::Replicated);
  }
  // The experts (Megatron's expert tensor parallelism at the tensor-parallel size, no expert
  // parallelism): every rank runs every expert on all the tokens, each expert's fc1 column- and
  // fc2 row-parallel, so a rank holds intermediate_size / tp of each; the output is all-reduced
  // whole, or with sequence parallelism reduce-scattered to the rank's shard.
  void experts(const Node& n) {
    const Attribute* inter = spec_of(n).find_attr("intermediate_size");
    if (inter->value.integer % tp_ != 0)
      fail(n, "splits each expert's intermediate_size across the ranks (fc1 column-, fc2 row-parallel): expected it to divide by " +
                  std::to_string(tp_) + ", found " + std::to_string(inter->value.integer));
    set_attr(n, "intermediate_size", inter->value.integer / tp_);
    role(n, TpRole::Experts);
    const int out = n.outputs.front();
    if (sp_ && shape(out).size() >= 3) scatter(n, out);
  }

  // A fused projection's parts (GPT-2's c_attn: q, k, v): each part split as the whole was, so a
  // rank holds its heads' share of every part (Megatron's fused QKV layout).
  void split_parts(const Node& n, int reader) {
    const int d = split_[static_cast<std::size_t>(reader)];
    const std::int64_t whole = shape(reader)[static_cast<std::size_t>(d)], local = local_[static_cast<std::size_t>(reader)];
    const auto share = [&](std::int64_t part) {
      if (checked_mul(part, local) % whole != 0)
        fail(n, "cuts " + split_text(reader) + " into a part of " + std::to_string(part) + ", which does not split over the ranks");
      return checked_mul(part, local) / whole;
    };
    for (int v : n.outputs) mark(v, d, share(shape(v)[static_cast<std::size_t>(d)]), seq(reader));
    for (Attribute& a : out_.spec.layers[static_cast<std::size_t>(n.layer)].attrs) {
      if (a.name != "split_size_or_sections") continue;
      if (a.value.kind == Value::Kind::Int) a.value.integer = share(a.value.integer);
      for (Value& item : a.value.items) item.integer = share(item.integer);
    }
  }

  // A view: the output dimension that begins where the input's split one begins carries the split.
  void view(const Node& n, int reader, int out) {
    const Shape& b = shape(out);
    const int d = split_[static_cast<std::size_t>(reader)];
    const std::int64_t whole = shape(reader)[static_cast<std::size_t>(d)], local = local_[static_cast<std::size_t>(reader)];
    const std::optional<std::size_t> at = view_split_dim(shape(reader), b, d, local);
    if (!at)
      fail(n, "reshapes " + split_text(reader) + " into " + to_string(b) + ", which cuts across the split; expected the split "
              "dimension to begin a dimension of the new shape (heads outermost)");
    const std::size_t j = *at;
    const std::int64_t share = checked_mul(b[j], local) / whole;
    mark(out, static_cast<int>(j), share, seq(reader));
    const std::string& t = spec_of(n).type;
    if (t != "View" && t != "Reshape") return;
    const LayerSpec& l = spec_of(n);
    const Attribute* given = l.find_attr("shape");
    const Attribute* with_batch = l.find_attr("with_batch");
    const std::size_t skip = with_batch && with_batch->value.boolean ? 0 : 1;
    if (!given || j < skip) fail(n, "reshapes the batch dimension of " + split_text(reader));
    for (Attribute& a2 : out_.spec.layers[static_cast<std::size_t>(n.layer)].attrs)
      if (a2.name == "shape" && a2.value.items[j - skip].integer != -1) a2.value.items[j - skip].integer = share;
  }

  void move_dim(const Node& n, int reader, int out) {
    const auto rank = static_cast<std::int64_t>(shape(reader).size());
    carry(out, moved_dim(spec_of(n), rank, split_[static_cast<std::size_t>(reader)]), reader);
  }

  const Graph& g_;
  std::int64_t tp_;
  bool sp_;
  std::vector<int> split_;               // per value: the dimension split across the ranks, or kWhole
  std::vector<std::int64_t> local_;      // per split value: a rank's size of that dimension
  std::vector<bool> seq_;                // per split value: split along the sequence (sequence parallelism)
  std::vector<Collective> scatters_, gathers_;  // in the layers' order
  std::int64_t vocab_ = 0;               // the vocabulary's rows (run())
  bool vocab_reads_input_ = false;       // the vocabulary's table reads a model input (the token ids)
  TensorParallelSpec out_;
};

}  // namespace

std::string_view name_of(TpRole role) { return kTpRoles.name(role); }

TensorParallelSpec tensor_parallel_rank(const Graph& full, std::int64_t tp, bool sequence_parallel) {
  if (tp < 1) throw Error(SourceLoc{}, "--tp: expected at least 1 rank, found " + std::to_string(tp));
  if (sequence_parallel && tp == 1)
    throw Error(full.spec.loc, "--sequence-parallel splits the sequence over the tensor-parallel ranks: it needs --tp above 1, found --tp 1");
  if (tp == 1) return {full.spec, {}};
  return Splitter(full, tp, sequence_parallel).run();
}

}  // namespace nnmem
