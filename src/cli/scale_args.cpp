#include "scale_args.hpp"

#include <iostream>

#include "cli_support.hpp"
#include "nnmem/checked.hpp"

namespace nnmem::cli {

void ScaleArgs::add_to(CLI::App& app) {
  app.add_option("--checkpoint", checkpoint,
                 "activation checkpointing: spec (the spec's `checkpoint: true` entries), none, blocks (every top-level "
                 "block instance), every:K (groups of K top-level entries), selective (only the attention cores, as "
                 "Megatron recomputes them)")
      ->capture_default_str();
  app.add_option("--checkpoint-impl", checkpoint_impl, "torch.utils.checkpoint's use_reentrant=False or True")
      ->check(one_of({"non-reentrant", "reentrant"}))
      ->capture_default_str();
  app.add_option("--grad-accum", grad_accum,
                 "gradient accumulation: micro-steps (of --batch samples each) per optimizer step")
      ->check(integer_between(1, std::int64_t{1} << 40));
  app.add_option("--gpus", gpus, "data parallelism (DDP): GPUs (ranks) per node; every figure is one rank's")
      ->check(integer_between(1, std::int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--nodes", nodes, "data parallelism: nodes of --gpus GPUs each")
      ->check(integer_between(1, std::int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--bucket-cap-mb", bucket_cap_mb, "DDP's bucket_cap_mb: gradient buckets of this many MiB")
      ->check(CLI::Range(1.0 / (1 << 20), 1.0e6))
      ->default_str("25, and a first bucket of 1");
  app.add_option("--zero", zero,
                 "DeepSpeed's ZeRO stage (modelled): 1 shards the optimizer state over the ranks, 2 the gradients too, "
                 "3 the parameters too (gathered layer by layer)")
      ->check(integer_between(1, 3));
  app.add_option("--fsdp", fsdp,
                 "FSDP's sharding strategy (FSDP2, per parameter; modelled): full (FULL_SHARD), shard_grad_op, "
                 "hybrid (sharded within a node), no_shard")
      ->check(one_of({"full", "shard_grad_op", "hybrid", "no_shard"}));
  app.add_option("--offload", offload, "ZeRO's CPU offload: optimizer (state and master weights) and/or params (ZeRO-3); "
                                       "reported as CPU memory per node")
      ->check(one_of({"optimizer", "params"}))
      ->delimiter(',');
  app.add_option("--tp", tp, "tensor parallelism (Megatron-style, modelled): ranks each layer's Linear weights, attention "
                             "heads and vocabulary are split over")
      ->check(integer_between(1, 1 << 20))
      ->capture_default_str();
  app.add_flag("--sequence-parallel", sequence_parallel,
               "with --tp: Megatron's sequence parallelism (modelled): the norms', dropouts' and residuals' tensors split "
               "along the sequence over the tensor-parallel ranks");
  app.add_option("--pp", pp, "pipeline parallelism (modelled): stages the spec's layers (block instances) are split into")
      ->check(integer_between(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--schedule", schedule, "the pipeline's schedule: gpipe (every micro-batch in flight), 1f1b (pp - i at stage i), "
                                         "interleaved (with --virtual-stages)")
      ->check(one_of({"gpipe", "1f1b", "interleaved"}))
      ->capture_default_str();
  app.add_option("--virtual-stages", virtual_stages, "interleaved schedule: model chunks per pipeline rank")
      ->check(integer_between(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--stages", stages, "pipeline layers per stage (per chunk when interleaved), e.g. 9,8,8,7; default: balanced")
      ->check(integer_between(1, std::int64_t{1} << 30))
      ->delimiter(',');
}

ModelParallelOptions ScaleArgs::model_parallel() const {
  ModelParallelOptions m;
  m.tp = tp;
  m.pp = pp;
  m.sequence_parallel = sequence_parallel;
  m.schedule = *parse_schedule(schedule);
  m.virtual_stages = virtual_stages;
  m.stages = stages;
  return m;
}

ParallelOptions ScaleArgs::parallel() const {
  ParallelOptions p;
  p.gpus = gpus;
  p.nodes = nodes;
  if (tp * pp > 1) {  // Megatron's world: tp × pp × dp ranks; data parallelism runs over the dp
    p.gpus = checked_mul(gpus, nodes) / (tp * pp);
    p.nodes = 1;
  }
  if (bucket_cap_mb > 0) p.bucket_cap_mb = bucket_cap_mb;
  p.zero = zero;
  if (!fsdp.empty()) p.fsdp = *parse_fsdp(fsdp);
  for (const std::string& o : offload) (o == "params" ? p.offload_params : p.offload_optimizer) = true;
  return p;
}

void ScaleArgs::apply(StepOptions& step) const {
  step.grad_accum = grad_accum;
  if ((tp > 1 || pp > 1) && !model_parallel_command)
    throw CLI::ValidationError(tp > 1 ? "--tp" : "--pp", "tensor and pipeline parallelism are estimated by `nnmem estimate`, `fit`, `compare` and `sweep`; `check` checks the spec on one GPU");
  if (sequence_parallel && tp == 1)
    throw CLI::ValidationError("--sequence-parallel", "splits the sequence over the tensor-parallel ranks: it needs --tp above 1");
  const std::int64_t world = checked_mul(gpus, nodes), model = checked_mul(tp, pp);
  if (world % model != 0)
    throw CLI::ValidationError(tp > 1 ? "--tp" : "--pp", "--tp " + std::to_string(tp) + " × --pp " + std::to_string(pp) + " = " +
                                                             std::to_string(model) + " ranks do not divide the " + std::to_string(world) +
                                                             " GPUs (--gpus × --nodes); data parallelism runs over the quotient");
  if (model > 1 && fsdp == "hybrid")
    throw CLI::ValidationError("--fsdp", "hybrid shards within a node; with --tp or --pp the data-parallel group spans nodes "
                                         "as Megatron lays them out: use full");
  const ParallelOptions parallel = this->parallel();
  if (bucket_cap_mb > 0 && parallel.world_size() == 1)
    throw CLI::ValidationError("--bucket-cap-mb", "sizes DDP's buckets: it needs --gpus or --nodes above 1");
  if (bucket_cap_mb > 0 && parallel.sharded())
    throw CLI::ValidationError("--bucket-cap-mb", "sizes DDP's buckets; " + std::string(zero ? "--zero" : "--fsdp") +
                                                      " shards instead: drop one of them");
  if (!offload.empty() && !parallel.sharded())
    throw CLI::ValidationError("--offload", "offloads what ZeRO shards: it needs --zero");
  if (parallel.sharded()) {
    try {
      step.parallel = sharded_step(parallel);
    } catch (const Error& e) {
      throw CLI::ValidationError(zero && !fsdp.empty() ? "--fsdp" : "--offload", e.message());
    }
    const Sharding& s = step.parallel.sharding;
    if (s.active() && s.group == 1)
      std::cerr << "nnmem: warning: " << (zero ? "--zero " + std::to_string(zero) : "--fsdp " + fsdp) << " over "
                << (parallel.fsdp == FsdpStrategy::Hybrid ? "--gpus 1 per node"
                    : tp * pp > 1 ? "one data-parallel rank (--gpus × --nodes = --tp × --pp)"
                                  : "one GPU (--gpus 1, --nodes 1)")
                << " shards nothing: every rank still holds everything" << (s.parameters ? ", and gathers it again" : "") << "\n";
    step.plan_parallel = parallel_planner(parallel);
  } else {
    step.plan_parallel = ddp_planner(parallel);
    if (step.plan_parallel) {  // what the step is before a graph plans its buffers (fit's and sweep's headlines)
      step.parallel.strategy = "ddp";
      step.parallel.world_size = parallel.world_size();
      step.parallel.nodes = parallel.nodes;
    }
  }
  step.checkpoint.impl = *parse_checkpoint_impl(checkpoint_impl);
  if (parse_checkpoint_segments(checkpoint, step.checkpoint)) return;
  throw CLI::ValidationError("--checkpoint", checkpoint.rfind("every:", 0) == 0
                                                 ? "expected every:K with K a number of entries, at least 1, found '" + checkpoint + "'"
                                                 : "expected spec, none, blocks, selective or every:K, found '" + checkpoint + "'");
}

}  // namespace nnmem::cli
