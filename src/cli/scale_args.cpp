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
}

void ScaleArgs::apply(StepOptions& step) const {
  step.grad_accum = grad_accum;
  CheckpointOptions& c = step.checkpoint;
  c.impl = *parse_checkpoint_impl(checkpoint_impl);
  if (checkpoint == "spec") c.segments = CheckpointSegments::Spec;
  else if (checkpoint == "none") c.segments = CheckpointSegments::None;
  else if (checkpoint == "blocks") c.segments = CheckpointSegments::Blocks;
  else if (checkpoint.rfind("every:", 0) == 0) {
    const std::string k = checkpoint.substr(6);
    const bool digits = !k.empty() && k.size() <= 12 && k.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoll(k) < 1)
      throw CLI::ValidationError("--checkpoint", "expected every:K with K a whole number of entries, at least 1, found '" +
                                                     checkpoint + "'");
    c.segments = CheckpointSegments::Every;
    c.every = std::stoll(k);
  } else {
    throw CLI::ValidationError("--checkpoint", "expected spec, none, blocks or every:K, found '" + checkpoint + "'");
  }
}

}  // namespace nnmem::cli
