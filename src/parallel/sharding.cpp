// ZeRO's stages (DeepSpeed, deepspeed/runtime/zero/) and FSDP's sharding strategies
// (torch.distributed.fsdp, FSDP2's fully_shard) as what they make each rank hold: the memory
// stage simulates the step with it (src/memory/sharding.cpp). Modelled: DeepSpeed needs GPUs.
#include "../enum_names.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem {
namespace {

constexpr EnumNames<FsdpStrategy, 5> kFsdpNames{{{
    {FsdpStrategy::None, "none"}, {FsdpStrategy::Full, "full"}, {FsdpStrategy::ShardGradOp, "shard_grad_op"},
    {FsdpStrategy::Hybrid, "hybrid"}, {FsdpStrategy::NoShard, "no_shard"},
}}};
constexpr std::int64_t kReduceBucketElements = 500'000'000;  // DeepSpeed's reduce_bucket_size default (5e8)

}  // namespace

std::string_view name_of(FsdpStrategy strategy) { return kFsdpNames.name(strategy); }
std::optional<FsdpStrategy> parse_fsdp(std::string_view name) { return kFsdpNames.parse(name); }

DataParallelStep sharded_step(const ParallelOptions& options) {
  if (options.zero > 0 && options.fsdp != FsdpStrategy::None)
    throw Error(SourceLoc{}, "--zero " + std::to_string(options.zero) + " and --fsdp " + std::string(name_of(options.fsdp)) +
                                 " are two sharding strategies: choose one");
  if (options.zero < 0 || options.zero > 3) throw Error(SourceLoc{}, "--zero: expected stage 1, 2 or 3, found " + std::to_string(options.zero));
  DataParallelStep step;
  step.world_size = options.world_size();
  step.nodes = options.nodes;
  Sharding& s = step.sharding;
  s.group = step.world_size;
  if (options.zero > 0) {
    step.strategy = "zero" + std::to_string(options.zero);
    s.per_layer = true;
    s.master_weights = true;
    s.optimizer = true;
    s.gradients = options.zero >= 2;
    s.parameters = options.zero == 3;
    s.split = options.zero == 3 ? Sharding::Split::FlatEach : Sharding::Split::FlatAll;
    s.reduce_bucket_elements = s.gradients ? kReduceBucketElements : 0;
  } else {
    step.strategy = "fsdp_" + std::string(name_of(options.fsdp));
    const bool shard = options.fsdp != FsdpStrategy::NoShard;
    s.optimizer = s.gradients = s.parameters = shard;
    s.reshard_after_forward = options.fsdp != FsdpStrategy::ShardGradOp;
    if (options.fsdp == FsdpStrategy::Hybrid) s.group = options.gpus;  // sharded within a node, replicated across
  }
  if ((options.offload_optimizer || options.offload_params) && options.zero == 0)
    throw Error(SourceLoc{}, "--offload is ZeRO's (DeepSpeed's offload_optimizer, offload_param); with --fsdp " +
                                 std::string(name_of(options.fsdp)) + " CPU offload is not modelled");
  if (options.offload_params && options.zero != 3)
    throw Error(SourceLoc{}, "--offload params needs the parameters sharded: --zero 3, found --zero " + std::to_string(options.zero));
  s.offload_optimizer = options.offload_optimizer;
  s.offload_params = options.offload_params;
  return step;
}

std::function<DataParallelStep(const Graph&)> parallel_planner(const ParallelOptions& options) {
  if (!options.sharded()) return ddp_planner(options);
  const DataParallelStep step = sharded_step(options);
  return [step](const Graph&) { return step; };
}

}  // namespace nnmem
