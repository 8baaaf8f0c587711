// ZeRO's and FSDP's sharding in a rank's simulated step (sharding.hpp). Modelled: DeepSpeed
// needs GPUs; FSDP's own figures on the CPU are compared in validation/ (docs/parallel.md).
#include "sharding.hpp"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "nnmem/checked.hpp"
#include "step.hpp"

namespace nnmem::detail {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0); }

bool low_precision(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

}  // namespace

std::int64_t shard_bytes(const Sharding& s, const Parameter& t) {
  const std::int64_t n = std::max<std::int64_t>(s.group, 1);
  const std::int64_t numel = t.numel;
  if (s.split == Sharding::Split::Dim0 && t.dim0 > 0) {
    const std::int64_t rows = t.dim0;
    const std::int64_t rest = numel / rows;
    return checked_mul(checked_mul(ceil_div(rows, n), rest), dtype_size(t.dtype));
  }
  return checked_mul(ceil_div(numel, n), dtype_size(t.dtype));
}

ShardPlan plan_sharding(const Graph& graph, const Sharding& s, bool training) {
  ShardPlan p;
  std::vector<const Parameter*> trainable;  // each trainable tensor once, in model.parameters()' order
  for (const Parameter& param : graph.parameters)
    if (training && param.trainable) trainable.push_back(&param);
  p.unit_of.assign(graph.nodes.size(), -1);
  if (s.active()) {
    p.param_bytes.reserve(graph.parameters.size());
    for (const Parameter& param : graph.parameters)
      p.param_bytes.push_back(!s.parameters ? param.bytes() : s.offload_params ? 0 : shard_bytes(s, param));
  }
  if (s.offload_params)
    for (const Parameter& param : graph.parameters) p.offloaded_bytes = checked_add(p.offloaded_bytes, shard_bytes(s, param));
  // The optimizer's parameters, and the gradients kept: per parameter, or flat per dtype.
  std::map<DType, std::int64_t> flat;  // dtype -> trainable elements
  for (const Parameter* t : trainable) flat[t->dtype] = checked_add(flat[t->dtype], t->numel);
  const auto master = [&](DType d) { return s.master_weights && low_precision(d) ? DType::Float32 : d; };
  // Unsharded, the optimizer steps every trainable tensor as it is (below).
  if (s.optimizer && s.split == Sharding::Split::FlatAll) {
    for (const auto& [dtype, numel] : flat) {
      p.optimizer_params.push_back({ceil_div(numel, s.group), master(dtype)});
      p.optimizer_names.push_back("the flat " + std::string(dtype_name(dtype)) + " partition");
    }
  } else if (s.optimizer) {
    for (const Parameter* t : trainable) p.optimizer_params.push_back({shard_bytes(s, *t) / dtype_size(t->dtype), master(t->dtype)});
  }
  // ZeRO's float32 master partition of 16-bit parameters (float32 ones are their own).
  for (std::size_t k = 0; s.optimizer && k < p.optimizer_params.size(); ++k)
    if (p.optimizer_params[k].dtype != (s.split == Sharding::Split::FlatAll ? std::next(flat.begin(), static_cast<std::ptrdiff_t>(k))->first
                                                                             : trainable[k]->dtype))
      p.master_bytes = checked_add(p.master_bytes, p.optimizer_params[k].bytes());
  for (const Parameter* t : trainable)
    p.grad_bytes = checked_add(p.grad_bytes, !s.gradients ? t->bytes() : s.split == Sharding::Split::FlatAll ? 0 : shard_bytes(s, *t));
  if (s.gradients && s.split == Sharding::Split::FlatAll)
    for (const auto& [dtype, numel] : flat) p.grad_bytes = checked_add(p.grad_bytes, checked_mul(ceil_div(numel, s.group), dtype_size(dtype)));
  if (s.gradients && s.reduce_bucket_elements > 0 && !trainable.empty()) {
    std::int64_t total = 0;
    for (const auto& [dtype, numel] : flat) total = checked_add(total, numel);
    p.reduce_bucket_bytes = checked_mul(std::min(s.reduce_bucket_elements, total), dtype_size(trainable.front()->dtype));
  }
  if (!s.optimizer && training) p.optimizer_params = trainable_tensors(graph);
  if (!s.active()) return p;
  // The units: each layer with parameters (ZeRO), or each top-level entry holding some (FSDP).
  std::set<int> seen;
  std::string last_entry;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const LayerSpec& layer = graph.layer(node);
    if (node.params.empty()) continue;
    const std::string name = s.per_layer ? layer.name : layer.unit;
    if (p.units.empty() || s.per_layer || name != last_entry) p.units.push_back({name, {}, 0, 0});
    last_entry = name;
    ShardPlan::Unit& u = p.units.back();
    p.unit_of[i] = static_cast<int>(p.units.size()) - 1;
    for (int param : node.params) {
      if (!seen.insert(param).second) continue;
      u.params.push_back(param);
      const Parameter& decl = graph.parameters[static_cast<std::size_t>(param)];
      if (decl.trainable) u.grad_bytes = checked_add(u.grad_bytes, shard_bytes(s, decl));
      if (s.parameters) u.gathered_bytes = checked_add(u.gathered_bytes, checked_mul(shard_bytes(s, decl), s.group));
    }
  }
  // FSDP: the nodes of an entry without parameters of their own (its activations, views) are in it too.
  if (s.per_layer) return p;
  std::map<std::string, int> by_name;
  for (std::size_t u = 0; u < p.units.size(); ++u) by_name[p.units[u].name] = static_cast<int>(u);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i)
    if (const auto it = by_name.find(graph.layer(graph.nodes[i]).unit); p.unit_of[i] < 0 && it != by_name.end()) p.unit_of[i] = it->second;
  return p;
}

void per_rank_totals(Estimate& e, const ShardPlan& plan, const StepOptions& options, Device device) {
  const Sharding& s = options.parallel.sharding;
  Totals& t = e.totals;
  t.param_bytes = 0;
  for (std::int64_t b : plan.param_bytes) t.param_bytes = checked_add(t.param_bytes, b);
  t.grad_bytes = plan.grad_bytes;
  e.optimizer_slots = optimizer_slots(options, device, plan.optimizer_params);
  if (plan.master_bytes > 0) e.optimizer_slots.insert(e.optimizer_slots.begin(), {"float32 master weights", plan.master_bytes});
  t.optimizer_state_bytes = 0;
  for (const OptimizerSlot& slot : e.optimizer_slots) t.optimizer_state_bytes = checked_add(t.optimizer_state_bytes, slot.bytes);
  std::int64_t cpu = plan.offloaded_bytes;
  if (s.offload_optimizer) {
    cpu = checked_add(cpu, t.optimizer_state_bytes);
    t.optimizer_state_bytes = 0;
    e.optimizer_slots.clear();
  }
  const std::int64_t ranks_per_node = options.parallel.world_size / std::max<std::int64_t>(options.parallel.nodes, 1);
  t.cpu_offload_bytes = checked_mul(cpu, ranks_per_node);
  t.persistent_bytes = checked_add(checked_add(t.param_bytes, t.buffer_bytes), t.optimizer_state_bytes);
  if (options.keep_grads) t.persistent_bytes = checked_add(t.persistent_bytes, t.grad_bytes);
}

void ShardRun::let_go(int& block) {
  if (block >= 0) memory_.release(block);
  block = -1;
}

void ShardRun::all_gather(int unit) {
  if (unit < 0 || unit >= static_cast<int>(plan_.units.size()) || !s_.parameters) return;
  const ShardPlan::Unit& u = plan_.units[static_cast<std::size_t>(unit)];
  int& buffer = gathered_[static_cast<std::size_t>(unit)];
  if (buffer < 0 && unsharded_[static_cast<std::size_t>(unit)].empty() && u.gathered_bytes > 0)
    buffer = memory_.alloc(MemoryKind::Gathered, u.gathered_bytes, {"all-gather buffer of ", u.name});
}

void ShardRun::unshard(int unit, bool backward) {
  auto& params = unsharded_[static_cast<std::size_t>(unit)];
  if (!s_.parameters || !params.empty()) return;  // SHARD_GRAD_OP: still unsharded from forward
  all_gather(unit);
  for (int p : plan_.units[static_cast<std::size_t>(unit)].params) {  // N padded shards (the parameter a view of them)
    const Parameter& param = graph_.parameters[static_cast<std::size_t>(p)];
    params.push_back(memory_.alloc(MemoryKind::Gathered, checked_mul(shard_bytes(s_, param), s_.group), {"unsharded ", graph_.layer(graph_.owner(param)).name, ".", graph_.param_own_name(param)}));
  }
  int& buffer = gathered_[static_cast<std::size_t>(unit)];
  if (backward) {
    let_go(buffer);
  } else {  // freed once the next unit's copy-out is done
    let_go(last_gather_);
    last_gather_ = std::exchange(buffer, -1);
  }
}

void ShardRun::reshard(int unit) {
  for (int b : unsharded_[static_cast<std::size_t>(unit)]) memory_.release(b);
  unsharded_[static_cast<std::size_t>(unit)].clear();
}

void ShardRun::forward(std::size_t node) {
  const int u = plan_.unit_of[node];
  if (u < 0 || (node > 0 && plan_.unit_of[node - 1] == u)) return;
  unshard(u, false);
  if (s_.per_layer) all_gather(u + 1);  // ZeRO-3 prefetches the next layer's parameters
}

void ShardRun::forward_done(std::size_t node) {
  const int u = plan_.unit_of[node];
  if (u < 0 || !s_.reshard_after_forward) return;
  if (node + 1 < plan_.unit_of.size() && plan_.unit_of[node + 1] == u) return;
  reshard(u);
}

void ShardRun::forward_end() { let_go(last_gather_); }

void ShardRun::backward(std::size_t node, bool add_into) {
  const int u = plan_.unit_of[node];
  if (u == current_) return;
  if (current_ >= 0) finish(current_, add_into);
  current_ = u;
  if (u < 0) return;
  unshard(u, true);
  all_gather(u - 1);  // prefetched while this unit's backward runs
}

bool ShardRun::take_gradient(int param, int block) {
  if (!s_.gradients) return false;
  pending_.emplace_back(param, block);
  return true;
}

// The unit's backward is over: its unsharded parameters are freed, its gradients reduce-scattered
// (each rank keeps its shard; the full gradients are freed).
void ShardRun::finish(int unit, bool add_into) {
  reshard(unit);
  if (pending_.empty()) return;
  // Freed in the unit's order of parameters, the last one once its shard exists.
  const std::vector<int>& order = plan_.units[static_cast<std::size_t>(unit)].params;
  const auto rank = [&](int param) { return std::find(order.begin(), order.end(), param) - order.begin(); };
  std::stable_sort(pending_.begin(), pending_.end(), [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  std::int64_t shard = 0, full = 0;
  for (const auto& [param, block] : pending_) {
    const Parameter& t = graph_.parameters[static_cast<std::size_t>(param)];
    shard = checked_add(shard, shard_bytes(s_, t));
    full = checked_add(full, checked_mul(shard_bytes(s_, t), s_.group));
  }
  const std::string& name = plan_.units[static_cast<std::size_t>(unit)].name;
  if (plan_.reduce_bucket_bytes == 0) {  // FSDP: a reduce-scatter input of N shards
    let_go(last_reduce_);
    last_reduce_ = memory_.alloc(MemoryKind::CommBuffers, full, {"reduce-scatter input of ", name});
  }
  for (std::size_t k = 0; k + 1 < pending_.size(); ++k) memory_.release(pending_[k].second);
  if (s_.split == Sharding::Split::FlatAll) {  // ZeRO-2: reduced into the flat partition
    if (flat_grad_ < 0 && !add_into) {
      flat_grad_ = memory_.alloc(MemoryKind::Gradients, plan_.grad_bytes, "gradient partition (flat)");
      memory_.mark(flat_grad_, Carry::Grad);
    }
  } else if (add_into) {  // added into the shards kept from before
    memory_.release(memory_.alloc(MemoryKind::Transients, shard, {"reduce-scattered grads of ", name}));
  } else {
    memory_.mark(memory_.alloc(MemoryKind::Gradients, shard, {"grad shards of ", name}), Carry::Grad);
  }
  memory_.release(pending_.back().second);
  pending_.clear();
}

void ShardRun::backward_done(bool add_into) {
  if (current_ >= 0) finish(current_, add_into);
  current_ = -1;
  let_go(last_reduce_);
  for (std::size_t u = 0; u < gathered_.size(); ++u) {  // unused prefetches, SHARD_GRAD_OP's parameters
    let_go(gathered_[u]);
    reshard(static_cast<int>(u));
  }
}

}  // namespace nnmem::detail
