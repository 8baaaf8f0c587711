// Option groups shared by the subcommands: the spec and how to load it, the step to estimate,
// and how to report it. Each group adds its flags to a CLI11 app and turns them into the
// library's options; mistakes raise CLI11 errors that name the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"
#include "nnmem/report.hpp"
#include "scale_args.hpp"

namespace nnmem::cli {

/// Exit codes: 0 success (and "fits"), 1 an error, 2 the step does not fit the budget.
inline constexpr int kExitError = 1;
inline constexpr int kExitDoesNotFit = 2;

/// "NAME=VALUE" split at the first '='; a CLI::ValidationError naming `option` otherwise.
std::pair<std::string, std::string> assignment(const std::string& option, const std::string& text);
/// `text` split at the commas outside brackets: "a=1,k=[3,3]" -> {"a=1", "k=[3,3]"}.
std::vector<std::string> split_list(const std::string& text);
/// Loads a spec file, or standard input when `path` is "-" (read once; named "<stdin>" in locations),
/// or a file of another format translated into its spec: a Hugging Face config.json (as
/// `architecture` when not empty), an Ultralytics model YAML (at `scale` when not empty).
struct ImportChoice {
  std::string architecture;  // --architecture: a Hugging Face config's model class
  std::string scale;         // --scale: an Ultralytics model file's scale
};
ModelSpec load_spec(const std::string& path, const LoadOptions& options, const ImportChoice& choice = {});

/// --set, --input, --max-layers, --architecture and --scale: how a spec is loaded.
struct LoadArgs {
  std::vector<std::string> sets;
  std::vector<std::string> inputs;
  std::int64_t max_layers = 100000;
  ImportChoice import;  // --architecture, --scale

  void add_to(CLI::App& app);
  LoadOptions options() const;
};

/// The spec (a path, or - for standard input) and how to load it.
struct SpecArgs {
  std::string path;
  LoadArgs load;

  void add_to(CLI::App& app);
  ModelSpec spec() const { return load_spec(path, load.options(), load.import); }
};

/// --torch: the PyTorch version whose behaviour is modelled (every subcommand takes it).
struct TorchArg {
  std::string version{default_torch_profile().version};

  void add_to(CLI::App& app, const std::string& help = "the PyTorch version whose behaviour is modelled");
  const TorchProfile& profile() const { return *find_torch_profile(version); }
};

/// What a step is: shared by every subcommand that estimates, so that `check` catches
/// everything `estimate` would with the same flags. `fit` finds the batch itself.
struct StepArgs {
  std::int64_t batch = 1;
  std::string mode = "train";
  std::string device = "cuda";
  std::string dtype;
  std::string amp;
  std::string optimizer = "adam";
  std::string loss;
  std::string overhead = "0";
  bool keep_grads = false;
  bool foreach = false;
  bool fused = false;
  std::string loop = "plain";
  bool rmsprop_momentum = false;
  bool rmsprop_centered = false;
  TorchArg torch;
  std::int64_t max_split_size_mib = 0;  // 0: PyTorch's default, no limit
  std::int64_t roundup_power2_divisions = 0;
  bool expandable_segments = false;
  std::string device_memory;
  ScaleArgs scale;

  void add_to(CLI::App& app, bool with_batch = true);
  EstimateOptions options() const;
};

/// A size option ("24GiB") that must be above zero; std::nullopt when not given.
std::optional<std::int64_t> budget_option(const std::string& option, const std::string& text);

}  // namespace nnmem::cli
