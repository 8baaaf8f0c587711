#include "scale_args.hpp"

#include "cli_support.hpp"

namespace nnmem::cli {

void ScaleArgs::add_to(CLI::App& app) {
  app.add_option("--checkpoint", checkpoint,
                 "activation checkpointing: spec (the spec's `checkpoint: true` entries), none, blocks (every top-level "
                 "block instance), every:K (groups of K top-level entries)")
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
}

ParallelOptions ScaleArgs::parallel() const {
  ParallelOptions p;
  p.gpus = gpus;
  p.nodes = nodes;
  if (bucket_cap_mb > 0) p.bucket_cap_mb = bucket_cap_mb;
  return p;
}

void ScaleArgs::apply(StepOptions& step) const {
  step.grad_accum = grad_accum;
  const ParallelOptions parallel = this->parallel();
  if (bucket_cap_mb > 0 && parallel.world_size() == 1)
    throw CLI::ValidationError("--bucket-cap-mb", "sizes DDP's buckets: it needs --gpus or --nodes above 1");
  step.plan_parallel = ddp_planner(parallel);
  if (step.plan_parallel) {  // what the step is before a graph plans its buffers (fit's and sweep's headlines)
    step.parallel.strategy = "ddp";
    step.parallel.world_size = parallel.world_size();
    step.parallel.nodes = parallel.nodes;
  }
  step.checkpoint.impl = *parse_checkpoint_impl(checkpoint_impl);
  if (parse_checkpoint_segments(checkpoint, step.checkpoint)) return;
  throw CLI::ValidationError("--checkpoint", checkpoint.rfind("every:", 0) == 0
                                                 ? "expected every:K with K a number of entries, at least 1, found '" + checkpoint + "'"
                                                 : "expected spec, none, blocks or every:K, found '" + checkpoint + "'");
}

}  // namespace nnmem::cli
