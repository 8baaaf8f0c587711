// ZeRO's and FSDP's sharding in a rank's simulated step (docs/parallel.md): what the rank keeps
// of each parameter, gradient and optimizer state tensor, the units whose parameters it gathers
// before their forward and backward, and the reduce-scatter of their gradients. Private to the
// memory stage; the step simulator (simulate.cpp) calls ShardRun at fixed points. Modelled.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memory_tracker.hpp"
#include "step.hpp"
#include "nnmem/estimate.hpp"
#include "nnmem/graph.hpp"

namespace nnmem::detail {

/// A rank's share of a tensor under `s`, in bytes (the largest rank's: shards are padded).
std::int64_t shard_bytes(const Sharding& s, const Parameter& t);

struct ShardPlan {
  /// What is gathered and reduced together: a layer with parameters (ZeRO) or a top-level
  /// entry of the spec (FSDP's wrapped modules).
  struct Unit {
    std::string name;
    std::vector<int> params;     // Graph::parameters it gathers (each in its first unit)
    std::int64_t gathered_bytes = 0;
    std::int64_t grad_bytes = 0;  // its trainable parameters' gradient shards: one block, as reduce-scattered
  };
  std::vector<Unit> units;
  std::vector<int> unit_of;                 // per node: its unit, or -1
  std::vector<StepTensor> optimizer_params; // what the rank's optimizer steps: shards, or one flat partition per dtype
  std::vector<std::string> optimizer_names; // their names
  std::vector<std::int64_t> param_bytes;    // sharding active: per Graph::parameters, what the rank holds on the device
  std::int64_t grad_bytes = 0;              // the gradients the rank keeps (all, shards or a flat partition)
  std::int64_t master_bytes = 0;            // ZeRO: the float32 partition of 16-bit parameters
  std::int64_t reduce_bucket_bytes = 0;     // ZeRO-2/3's reduce bucket
  std::int64_t offloaded_bytes = 0;         // per rank, in CPU memory: what --offload moves there
};

/// The plan for `graph`'s trainable parameters under `s` (empty units without sharding; no
/// optimizer and no gradients unless `training`).
ShardPlan plan_sharding(const Graph& graph, const Sharding& s, bool training);

/// The estimate's totals as one rank holds them: its parameters, gradients and optimizer state
/// on the device, and what its node's CPU memory holds for its ranks (--offload).
void per_rank_totals(Estimate& e, const ShardPlan& plan, const StepOptions& options, Device device);

/// The sharded step's side of the simulation, FSDP2's sequence as it runs on the CPU (ZeRO's
/// modelled the same way, with its reduce bucket in place of reduce-scatter inputs):
///   before a unit's forward, its shards are all-gathered into one buffer of N shards, copied
///   out into each parameter's unsharded tensor, and the previous unit's all-gather buffer is
///   freed; after its forward the unsharded parameters are freed (FULL_SHARD, ZeRO-3);
///   entering its backward, the same (the all-gather buffer freed after the copy-out) and the
///   next unit's all-gather prefetched; leaving it, the unsharded parameters are freed, the
///   previous unit's reduce-scatter input is let go, the gradients copied into a new one of N
///   shards and freed, and this rank's shard of them becomes .grad. ZeRO-3 also prefetches the
///   next layer's parameters in forward.
class ShardRun {
 public:
  /// `plan` is the caller's (simulate_step's), kept by reference: it outlives the run.
  ShardRun(const Graph& graph, const Sharding& s, const ShardPlan& plan, MemoryTracker& memory)
      : graph_(graph), s_(s), plan_(plan), memory_(memory), unsharded_(plan_.units.size()),
        gathered_(plan_.units.size(), -1) {}
  const ShardPlan& plan() const { return plan_; }

  void forward(std::size_t node);       // before the node: its unit's parameters, at its first node
  void forward_done(std::size_t node);  // after the node: resharded after its unit's last
  void forward_end();                   // the root's forward returns: the last all-gather buffer freed
  /// Backward, before node by node in reverse: leaving a unit finishes it, entering one gathers it.
  void backward(std::size_t node, bool add_into);
  /// A parameter's complete gradient: taken over (freed once reduce-scattered) when gradients
  /// are sharded; false otherwise.
  bool take_gradient(int param, int block);
  void backward_done(bool add_into);

 private:
  void all_gather(int unit);              // the buffer of N shards, unless prefetched
  void unshard(int unit, bool backward);  // copied out into the unsharded parameters
  void reshard(int unit);
  void finish(int unit, bool add_into);
  void let_go(int& block);

  const Graph& graph_;
  const Sharding& s_;
  const ShardPlan& plan_;
  MemoryTracker& memory_;
  std::vector<std::vector<int>> unsharded_;  // per unit: its unsharded parameters' blocks
  std::vector<int> gathered_;                // per unit: its all-gather buffer, while it lives
  int last_gather_ = -1;                     // forward: the previous unit's all-gather buffer
  int last_reduce_ = -1;                     // backward: the previous unit's reduce-scatter input
  std::vector<std::pair<int, int>> pending_; // (parameter, full gradient) awaiting the reduce-scatter
  int current_ = -1;                         // the unit backward is in
  int flat_grad_ = -1;                       // ZeRO-2: the flat gradient partition
};

}  // namespace nnmem::detail
