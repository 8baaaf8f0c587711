// Command-line flags for what goes beyond one plain training step: activation checkpointing and
// gradient accumulation (and, in the parallel stage, data parallelism and sharding). Shared by
// every subcommand that estimates a step.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem::cli {

struct ScaleArgs {
  std::string checkpoint = "spec";
  std::string checkpoint_impl = "non-reentrant";
  std::int64_t grad_accum = 1;
  std::int64_t gpus = 1;
  std::int64_t nodes = 1;
  double bucket_cap_mb = 0;  // 0: DDP's default
  int zero = 0;              // 0: no ZeRO
  std::string fsdp;          // "": no FSDP
  std::vector<std::string> offload;  // "optimizer", "params"
  std::int64_t tp = 1, pp = 1, virtual_stages = 1;
  bool sequence_parallel = false;
  std::string schedule = "1f1b";
  std::vector<std::int64_t> stages;
  bool model_parallel_command = false;  // tensor and pipeline parallelism: `estimate`, `fit`, `compare` and `sweep`

  void add_to(CLI::App& app);
  /// Data parallelism over the ranks tensor and pipeline parallelism leave: --gpus × --nodes / (tp × pp).
  ParallelOptions parallel() const;
  ModelParallelOptions model_parallel() const;
  /// Sets the step's options; throws CLI::ValidationError for a malformed value.
  void apply(StepOptions& step) const;
};

}  // namespace nnmem::cli
