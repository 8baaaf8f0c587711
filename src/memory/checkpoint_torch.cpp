// torch.save, byte by byte: the pickle (protocol 2, as torch.save writes it) of a state_dict or
// an optimizer's, and the zip around it (PyTorch's miniz writer: every record's data aligned to
// 64 bytes by an "FB" extra field, a data descriptor after it, zip64 records at the end).
// Sizes only: each pickle opcode's length, each memo reference's, each record's headers.
#include <algorithm>
#include <map>

#include "checkpoint_layout.hpp"

namespace nnmem::detail {

namespace {

// The bytes a pickle takes, written as Python's pickler would write it.
class Pickle {
 public:
  std::int64_t bytes() const { return bytes_; }
  void op(std::int64_t n = 1) { bytes_ = checked_add(bytes_, n); }

  // BINPUT / LONG_BINPUT: every object saved is remembered, under the next index.
  int put() {
    op(memo_ < 256 ? 2 : 5);
    return memo_++;
  }
  void get(int index) { op(index < 256 ? 2 : 5); }
  // An object saved once and referenced after (a class, an interned string): `first` writes it.
  template <typename F>
  void shared(const std::string& key, F&& first) {
    if (auto it = shared_.find(key); it != shared_.end()) return get(it->second);
    first();
    shared_[key] = put();
  }
  void global(const std::string& module, const std::string& name) {
    shared("global " + module + "." + name, [&] { op(checked_add(3, static_cast<std::int64_t>(module.size() + name.size()))); });
  }
  int new_str(const std::string& s) {  // BINUNICODE
    op(checked_add(5, static_cast<std::int64_t>(s.size())));
    return put();
  }
  void interned(const std::string& s) {
    shared("str " + s, [&] { op(checked_add(5, static_cast<std::int64_t>(s.size()))); });
  }
  void integer(std::int64_t v) {
    if (v >= 0 && v < 256) return op(2);                          // BININT1
    if (v >= 0 && v < 65536) return op(3);                        // BININT2
    if (v >= INT32_MIN && v <= INT32_MAX) return op(5);           // BININT
    int n = 1;                                                    // LONG1: two's complement, little-endian
    while (n < 8 && (v >= (std::int64_t{1} << (8 * n - 1)) || v < -(std::int64_t{1} << (8 * n - 1)))) ++n;
    op(2 + n);
  }
  void tuple(const Shape& items) {
    if (items.empty()) return op(1);  // EMPTY_TUPLE, never memoised
    if (items.size() > 3) op(1);      // MARK
    for (std::int64_t v : items) integer(v);
    op(1);                            // TUPLE1..3 / TUPLE
    put();
  }
  // A dict's or list's items, in batches of 1,000: MARK … SETITEMS (APPENDS), or a lone SETITEM.
  template <typename F>
  void items(std::size_t count, F&& item) {
    for (std::size_t start = 0; start < count; start += 1000) {
      const std::size_t end = std::min(count, start + 1000);
      if (end - start > 1) op(1);
      for (std::size_t i = start; i < end; ++i) item(i);
      op(1);
    }
  }
  void empty_ordered_dict() {  // collections.OrderedDict(): its class, (), REDUCE
    global("collections", "OrderedDict");
    op(2);
    put();
  }

 private:
  std::int64_t bytes_ = 0;
  int memo_ = 0;
  std::map<std::string, int> shared_;
};

const char* storage_class(DType d) {
  switch (d) {
    case DType::Float32: return "FloatStorage";
    case DType::Float16: return "HalfStorage";
    case DType::BFloat16: return "BFloat16Storage";
    case DType::Float64: return "DoubleStorage";
    case DType::Int64: return "LongStorage";
    case DType::Int32: return "IntStorage";
    case DType::Int16: return "ShortStorage";
    case DType::Int8: return "CharStorage";
    case DType::UInt8: return "ByteStorage";
    case DType::Bool: return "BoolStorage";
  }
  return "FloatStorage";
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = checked_mul(strides[i], shape[i]);
  return strides;
}

// The storages written so far: each one's bytes (its record data/KEY), and the memo index of its
// key, which a tensor of a storage already written (a tied parameter) refers to.
struct Storages {
  std::vector<std::int64_t> bytes;
  std::vector<int> key_memo;
};

// A tensor, as torch.save pickles it: _rebuild_tensor_v2(storage, offset, size, stride,
// requires_grad, backward_hooks), the storage a persistent id ('storage', class, key,
// location, numel) whose bytes become the record data/KEY. `same_storage`: the index in
// `storages` of the storage it shares with a tensor written before, or -1.
void tensor(Pickle& p, const TensorType& t, Storages& storages, int same_storage = -1) {
  p.global("torch._utils", "_rebuild_tensor_v2");
  p.op(2);  // MARK, MARK
  p.interned("storage");
  p.global("torch", storage_class(t.dtype));
  if (same_storage >= 0) {
    p.get(storages.key_memo[static_cast<std::size_t>(same_storage)]);
  } else {
    storages.key_memo.push_back(p.new_str(std::to_string(storages.bytes.size())));
    storages.bytes.push_back(t.bytes());
  }
  p.interned("cpu");
  p.integer(t.numel());
  p.op(1);  // TUPLE
  p.put();
  p.op(1);  // BINPERSID
  p.integer(0);
  p.tuple(t.shape);
  p.tuple(contiguous_strides(t.shape));
  p.op(1);  // NEWFALSE
  p.empty_ordered_dict();
  p.op(1);  // TUPLE
  p.put();
  p.op(1);  // REDUCE
  p.put();
}

// model.state_dict(): an OrderedDict of the tensors, its _metadata (every module's version) as state.
void state_dict(Pickle& p, const ModelTensors& m, Storages& storages) {
  std::vector<int> storage_of(m.state.size(), -1);  // state entry -> its storage's index
  p.empty_ordered_dict();
  p.items(m.state.size(), [&](std::size_t i) {
    p.new_str(m.state[i].name);
    const int same = m.state[i].same_as;
    tensor(p, m.state[i].type, storages, same < 0 ? -1 : storage_of[static_cast<std::size_t>(same)]);
    storage_of[i] = same < 0 ? static_cast<int>(storages.bytes.size()) - 1 : storage_of[static_cast<std::size_t>(same)];
  });
  p.op(1);  // EMPTY_DICT: the state
  p.put();
  p.new_str("_metadata");
  p.empty_ordered_dict();
  p.items(m.modules.size(), [&](std::size_t i) {
    p.new_str(m.modules[i]);
    p.op(1);  // EMPTY_DICT {'version': N}
    p.put();
    p.interned("version");
    p.integer(1);  // 1, or 2 for batch norm: one byte either way
    p.op(1);       // SETITEM
  });
  p.op(2);  // SETITEM, BUILD
}

// What one param group's hyperparameters are in a version: (key, bytes of its value).
enum class Kind { Float, Int, Flag, Pair };
struct GroupKey {
  const char* name;
  Kind kind;
};

std::vector<GroupKey> group_keys(OptimizerKind kind, const TorchProfile& v) {
  const bool v2 = v.param_groups_2x_keys;
  switch (kind) {
    case OptimizerKind::Sgd:
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov: {
      std::vector<GroupKey> keys = {{"lr", Kind::Float}, {"momentum", kind == OptimizerKind::Sgd ? Kind::Int : Kind::Float},
                                    {"dampening", Kind::Int}, {"weight_decay", Kind::Int}, {"nesterov", Kind::Flag},
                                    {"maximize", Kind::Flag}, {"foreach", Kind::Flag}, {"differentiable", Kind::Flag}};
      if (v2) keys.push_back({"fused", Kind::Flag});
      return keys;
    }
    case OptimizerKind::AdamW:
      if (!v2)
        return {{"lr", Kind::Float}, {"betas", Kind::Pair}, {"eps", Kind::Float}, {"weight_decay", Kind::Float},
                {"amsgrad", Kind::Flag}, {"foreach", Kind::Flag}, {"maximize", Kind::Flag}, {"capturable", Kind::Flag}};
      [[fallthrough]];
    default: {
      std::vector<GroupKey> keys = {{"lr", Kind::Float},
                                    {"betas", Kind::Pair},
                                    {"eps", Kind::Float},
                                    {"weight_decay", kind == OptimizerKind::AdamW ? Kind::Float : Kind::Int},
                                    {"amsgrad", Kind::Flag},
                                    {"maximize", Kind::Flag},
                                    {"foreach", Kind::Flag},
                                    {"capturable", Kind::Flag},
                                    {"differentiable", Kind::Flag},
                                    {"fused", Kind::Flag}};
      if (v2) keys.push_back({"decoupled_weight_decay", Kind::Flag});
      return keys;
    }
  }
}

// optimizer.state_dict(): {'state': {index: {slot: tensor}}, 'param_groups': [{…, 'params': [0, 1, …]}]}.
void optimizer_state_dict(Pickle& p, const ModelTensors& m, const OptimizerLayout& layout, OptimizerKind kind,
                          const TorchProfile& v, Storages& storages) {
  std::vector<const NamedTensor*> params;  // model.parameters(): a tied parameter once
  for (const auto& t : m.state)
    if (t.trainable && t.same_as < 0) params.push_back(&t);
  p.op(1);  // EMPTY_DICT
  p.put();
  p.op(1);  // MARK
  p.new_str("state");
  p.op(1);
  p.put();
  const bool stateful = !layout.slots.empty() || layout.none_slot;
  p.items(stateful ? params.size() : 0, [&](std::size_t i) {
    p.integer(static_cast<std::int64_t>(i));
    p.op(1);  // EMPTY_DICT
    p.put();
    if (layout.none_slot) {
      p.interned("momentum_buffer");
      p.op(2);  // NONE, SETITEM
      return;
    }
    p.items(layout.slots.size(), [&](std::size_t k) {
      const SlotLayout& slot = layout.slots[k];
      p.interned(slot.name);
      tensor(p, slot.like_param ? params[i]->type : TensorType{{}, DType::Float32}, storages);
    });
  });
  p.new_str("param_groups");
  p.op(1);  // EMPTY_LIST
  p.put();
  p.op(1);  // EMPTY_DICT: the one group
  p.put();
  p.op(1);  // MARK
  for (const GroupKey& key : group_keys(kind, v)) {
    p.new_str(key.name);
    switch (key.kind) {
      case Kind::Float: p.op(9); break;  // BINFLOAT
      case Kind::Int: p.integer(0); break;
      case Kind::Flag: p.op(1); break;   // NEWFALSE, NEWTRUE, NONE
      case Kind::Pair:
        p.op(19);  // BINFLOAT, BINFLOAT, TUPLE2
        p.put();
        break;
    }
  }
  p.new_str("params");
  p.op(1);  // EMPTY_LIST
  p.put();
  p.items(params.size(), [&](std::size_t i) { p.integer(static_cast<std::int64_t>(i)); });
  p.op(3);  // SETITEMS (the group), APPEND (to the list), SETITEMS (the state_dict)
}

constexpr std::int64_t kUint32Max = 0xFFFFFFFF;

// One record of PyTorch's zip writer at `cursor`: the local header with the "FB" padding field
// that aligns the data to 64 bytes (and a zip64 field past 4 GiB), the data, its descriptor; and
// its central directory entry. Returns {local bytes, central bytes}.
std::pair<std::int64_t, std::int64_t> record(std::int64_t cursor, std::int64_t name, std::int64_t size) {
  const bool big = size >= kUint32Max, far = cursor >= kUint32Max;
  const std::int64_t zip64 = big || far ? 4 + (big ? 16 : 0) + (far ? 8 : 0) : 0;
  const std::int64_t start = cursor + 30 + name + 4 + zip64;
  const std::int64_t padding = (64 - start % 64) % 64 + 4;
  const std::int64_t descriptor = size == 0 ? 0 : zip64 ? 24 : 16;
  return {checked_add(30 + name + zip64 + padding + descriptor, size), 46 + name + zip64};
}

}  // namespace

OptimizerLayout optimizer_layout(OptimizerKind kind, const TorchProfile& version, const SourceLoc& where) {
  switch (kind) {
    case OptimizerKind::None: return {};
    case OptimizerKind::Sgd: return {{}, version.sgd_state_momentum_none};
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov: return {{{"momentum_buffer", true}}, false};
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: return {{{"step", false}, {"exp_avg", true}, {"exp_avg_sq", true}}, false};
    case OptimizerKind::AMSGrad:
      return {{{"step", false}, {"exp_avg", true}, {"exp_avg_sq", true}, {"max_exp_avg_sq", true}}, false};
    default: break;
  }
  throw Error(where, "checkpoint sizes model the state of none, sgd, momentum, nesterov, adam, adamw and amsgrad; not " +
                         std::string(name_of(kind)));
}

std::int64_t slot_bytes(const SlotLayout& slot, const NamedTensor& param) {
  return slot.like_param ? param.type.bytes() : dtype_size(DType::Float32);
}

CheckpointFile torch_save(const std::string& stem, const ModelTensors& model, bool with_model, const OptimizerLayout* layout,
                          OptimizerKind kind, const TorchProfile& version) {
  Pickle p;
  Storages storages;
  p.op(2);  // PROTO 2
  if (with_model && layout) {
    p.op(1);  // EMPTY_DICT
    p.put();
    p.op(1);  // MARK
    p.new_str("model");
    state_dict(p, model, storages);
    p.new_str("optimizer");
    optimizer_state_dict(p, model, *layout, kind, version, storages);
    p.op(1);  // SETITEMS
  } else if (with_model) {
    state_dict(p, model, storages);
  } else {
    optimizer_state_dict(p, model, *layout, kind, version, storages);
  }
  p.op(1);  // STOP

  // The records in the order torch.save writes them, with their contents' sizes.
  const bool v2 = version.save_extra_records;
  std::vector<std::pair<std::string, std::int64_t>> records = {{"data.pkl", p.bytes()}};
  if (v2) records.insert(records.end(), {{".format_version", 1}, {".storage_alignment", 2}, {"byteorder", 6}});
  std::vector<std::pair<std::string, std::int64_t>> data_records;
  for (std::size_t i = 0; i < storages.bytes.size(); ++i) data_records.emplace_back("data/" + std::to_string(i), storages.bytes[i]);
  if (version.save_storages_sorted_as_text) std::sort(data_records.begin(), data_records.end());
  records.insert(records.end(), data_records.begin(), data_records.end());
  records.emplace_back("version", 2);
  if (v2) records.emplace_back(".data/serialization_id", 40);
  std::int64_t cursor = 0, central = 0, data = 0;
  for (const auto& [name, size] : records) {
    const auto [local, entry] = record(cursor, static_cast<std::int64_t>(stem.size() + 1 + name.size()), size);
    cursor = checked_add(cursor, local);
    central = checked_add(central, entry);
    if (name.rfind("data/", 0) == 0) data = checked_add(data, size);
  }
  CheckpointFile f;
  f.name = stem + ".pt";
  f.bytes = checked_add(checked_add(cursor, central), 56 + 20 + 22);  // zip64 end record, its locator, end record
  f.parts = {{"tensor data (data/0 …)", data, false},
             {"pickle (data.pkl)", p.bytes(), true},
             {"zip: headers, 64-byte alignment, directory, small records", f.bytes - data - p.bytes(), true}};
  return f;
}

}  // namespace nnmem::detail
