// The nnmem command line: parses flags, calls the library, prints. One options struct per
// subcommand; every library error arrives as nnmem::Error and exits with code 1, and so does
// every command-line mistake, in words that say what was expected and what was found.
#include <CLI/CLI.hpp>

#include <iostream>
#include <limits>

#include "cli_support.hpp"
#include "scale_args.hpp"
#include "nnmem/estimate.hpp"
#include "nnmem/plan.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

namespace {

using namespace nnmem;
using namespace nnmem::cli;

// --- subcommands ------------------------------------------------------------------------------

struct SpecArgs {
  std::string path;
  std::vector<std::string> sets;
  std::int64_t max_layers = 100000;

  void add_to(CLI::App& app) {
    app.add_option("SPEC", path, "the model spec (YAML)")->required();
    app.add_option("--set", sets, "override a spec variable: NAME=VALUE (repeatable)");
    app.add_option("--max-layers", max_layers, "refuse specs that expand to more layers than this")->check(positive_integer());
  }

  ModelSpec load() const {
    LoadOptions options;
    options.max_layers = max_layers;
    for (const auto& s : sets) {
      const auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        throw CLI::ValidationError("--set", "expected NAME=VALUE, found '" + s + "'");
      options.overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
    return load_spec_file(path, options);
  }
};

std::vector<std::string> versions() {
  std::vector<std::string> v;
  for (const TorchProfile& p : torch_profiles()) v.emplace_back(p.version);
  return v;
}

// What a step is: shared by `estimate` and `check`, so that `check` catches everything
// `estimate` would with the same flags.
struct StepArgs {
  std::int64_t batch = 1;
  std::string mode = "train";
  std::string device = "cuda";
  std::string dtype;
  std::string amp;
  std::string optimizer = "adam";
  std::string torch{default_torch_profile().version};
  std::string loss;
  std::string overhead = "0";
  bool keep_grads = false;
  bool foreach = false;
  bool fused = false;
  std::string loop = "plain";
  bool rmsprop_momentum = false;
  bool rmsprop_centered = false;
  std::int64_t max_split_size_mib = 0;  // 0: PyTorch's default, no limit
  std::int64_t roundup_power2_divisions = 0;
  bool expandable_segments = false;
  std::string device_memory;
  ScaleArgs scale;

  // `fit` finds the batch itself: it takes every flag but --batch.
  void add_to(CLI::App& app, bool with_batch = true) {
    if (with_batch)
      app.add_option("-b,--batch,--micro-batch", batch, "batch size: per forward pass (per micro-step, per GPU)")
          ->check(integer_between(1, kMaxBatch));
    app.add_option("--mode", mode, "a training step, or inference (no gradients)")->check(one_of({"train", "eval"}));
    app.add_option("--device", device, "whose kernels' conventions to follow")->check(one_of({"cuda", "cpu"}));
    app.add_option("--dtype", dtype, "parameters and activations dtype (default: the spec's, else float32)")
        ->check(one_of({"float32", "float16", "bfloat16", "float64"}));
    app.add_option("--amp", amp, "mixed precision as torch.autocast runs it: float32 weights, these low-precision copies")
        ->check(one_of({"float16", "bfloat16"}));
    app.add_option("--torch", torch, "the PyTorch version whose behaviour is modelled: " + torch_versions())
        ->check(one_of(versions()))
        ->capture_default_str();
    app.add_option("--optimizer", optimizer, "optimizer whose state and temporaries are counted")
        ->check(one_of({"none", "sgd", "momentum", "nesterov", "adam", "adamw", "amsgrad", "rmsprop", "adagrad", "adam8bit"}));
    app.add_option("--loss", loss, "loss (default: the spec's, else mean)")->check(one_of({"cross_entropy", "mse", "mean", "bce_with_logits", "nll", "l1", "smooth_l1", "huber"}));
    app.add_option("--overhead", overhead, "framework overhead added on CUDA, e.g. 500MiB (the CUDA context)");
    app.add_flag("--keep-grads", keep_grads, "zero_grad(set_to_none=False): gradients persist between steps");
    app.add_flag("--foreach", foreach, "the optimizer's multi-tensor (foreach) implementation");
    app.add_flag("--fused", fused, "the optimizer's fused kernel (SGD, Adam, AdamW; on the CPU from torch 2.x)");
    app.add_option("--loop", loop, "plain: `for ...: out = model(x); loss = ...` (the previous step's out and loss live "
                                    "until rebound); function: a train_step() that returns loss.item()")
        ->check(one_of({"plain", "function"}));
    app.add_flag("--rmsprop-momentum", rmsprop_momentum, "RMSprop with momentum > 0");
    app.add_flag("--rmsprop-centered", rmsprop_centered, "RMSprop with centered=True");
    // The CUDA caching allocator's settings (PYTORCH_CUDA_ALLOC_CONF), for its simulation.
    app.add_option("--max-split-size", max_split_size_mib, "CUDA allocator: max_split_size_mb, in MiB (at least 20)")
        ->check(integer_between(20, std::numeric_limits<std::int64_t>::max() >> 20));
    app.add_option("--roundup-power2-divisions", roundup_power2_divisions,
                   "CUDA allocator: roundup_power2_divisions, for every size (a power of two; 0 or 1: off)")
        ->check(power_of_two_or_zero());
    app.add_flag("--expandable-segments", expandable_segments, "CUDA allocator: expandable_segments:True");
    app.add_option("--device-memory", device_memory,
                   "CUDA: the device's memory, e.g. 24GiB; the allocator may reserve it less --overhead, and runs out "
                   "of memory (after releasing its cache) beyond that");
    scale.add_to(app);
  }

  EstimateOptions options() const {
    EstimateOptions o;
    o.graph.batch = batch;
    o.graph.mode = mode == "eval" ? Mode::Eval : Mode::Train;
    o.graph.device = device == "cpu" ? Device::Cpu : Device::Cuda;
    if (!dtype.empty()) o.graph.float_dtype = parse_dtype(dtype);
    if (!amp.empty()) o.graph.amp = parse_dtype(amp);
    o.graph.torch = find_torch_profile(torch);
    o.step.optimizer = *parse_optimizer(optimizer);
    o.step.rmsprop_momentum = rmsprop_momentum;
    o.step.rmsprop_centered = rmsprop_centered;
    if (!loss.empty()) o.step.loss = parse_loss(loss);
    o.step.keep_grads = keep_grads;
    o.step.foreach = foreach;
    o.step.fused = fused;
    o.step.loop = *parse_loop(loop);
    o.step.overhead_bytes = parse_size_option("--overhead", overhead);
    if (max_split_size_mib > 0) o.step.allocator.max_split_size = max_split_size_mib << 20;
    o.step.allocator.roundup_power2_divisions.fill(roundup_power2_divisions);
    o.step.allocator.expandable_segments = expandable_segments;
    if (!device_memory.empty()) {
      const std::int64_t total = parse_size_option("--device-memory", device_memory);
      if (total <= o.step.overhead_bytes)
        throw CLI::ValidationError("--device-memory", "expected more than --overhead (" + with_commas(o.step.overhead_bytes) +
                                                          " bytes), found '" + device_memory + "'");
      o.step.allocator.capacity_bytes = total - o.step.overhead_bytes;
    }
    scale.apply(o.step);
    return o;
  }
};

struct EstimateArgs {
  SpecArgs spec;
  StepArgs step;
  std::string format = "table";
  std::string convention;

  void add_to(CLI::App& app) {
    spec.add_to(app);
    step.add_to(app);
    app.add_option("--format", format, "output format")->check(one_of({"table", "json"}));
    app.add_option("--convention", convention, "also show another tool's figures")->check(one_of({"torchsummary"}));
  }
};

int run_estimate(const EstimateArgs& a) {
  const EstimateOptions options = a.step.options();  // flag mistakes before reading the spec
  const Estimate e = estimate(a.spec.load(), options);
  if (a.format == "json") std::cout << render_json(e) << '\n';
  else if (a.convention == "torchsummary") std::cout << render_torchsummary(e);
  else std::cout << render_table(e);
  return 0;
}

struct FitArgs {
  SpecArgs spec;
  StepArgs step;
  std::string budget;
  std::string format = "table";

  void add_to(CLI::App& app) {
    spec.add_to(app);
    step.add_to(app, false);
    app.add_option("--budget", budget, "the memory to fit in, e.g. 24GiB or 80GB (with --overhead for the CUDA context)")
        ->required();
    app.add_option("--format", format, "output format")->check(one_of({"table", "json"}));
  }
};

int run_fit(const FitArgs& a) {
  const EstimateOptions options = a.step.options();
  const std::int64_t budget = parse_size_option("--budget", a.budget);
  if (budget < 1) throw CLI::ValidationError("--budget", "expected a size above zero, found '" + a.budget + "'");
  const BatchFit fit = fit_batch(a.spec.load(), options, budget);
  std::cout << (a.format == "json" ? render_json(fit) + "\n" : render_table(fit));
  return 0;
}

int run_check(const SpecArgs& spec, const StepArgs& step) {
  const EstimateOptions options = step.options();
  const Estimate e = estimate(spec.load(), options);
  std::cout << spec.path << ": ok (" << e.layers.size() << " layers, " << with_commas(e.totals.params) << " parameters)\n";
  return 0;
}

int run_layers(const std::string& type, const TorchProfile& torch) {
  if (type.empty()) {
    for (const auto& t : layer_types()) {
      if (!torch.has_layer(t)) continue;
      const LayerDef& d = *find_layer(t);
      std::cout << "  " << t << std::string(t.size() < 22 ? 22 - t.size() : 1, ' ') << d.summary << '\n';
    }
    return 0;
  }
  const LayerDef* d = find_layer(type);
  if (!d) {
    const std::string near = nearest_name(type, layer_types());
    std::cerr << "nnmem: error: unknown layer type '" << type << "'" << (near.empty() ? "" : "; did you mean '" + near + "'?")
              << '\n';
    return 1;
  }
  std::cout << d->type << ": " << d->summary << '\n';
  const std::string inputs = d->min_inputs == d->max_inputs ? std::to_string(d->min_inputs)
                             : d->max_inputs < 0           ? std::to_string(d->min_inputs) + " or more"
                                                           : std::to_string(d->min_inputs) + " to " + std::to_string(d->max_inputs);
  std::cout << "inputs: " << inputs << '\n';
  for (const TorchProfile& p : torch_profiles())
    if (!p.has_layer(d->type)) std::cout << "not in PyTorch " << p.version << '\n';
  if (!d->versions.empty()) std::cout << "by PyTorch version: " << d->versions << '\n';
  if (d->attrs.empty()) std::cout << "attributes: none\n";
  for (const auto& attr : d->attrs) std::cout << "  " << attr.name << ": " << attr.describe() << "\n      " << attr.help << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nnmem: how much memory a neural network needs, from a YAML spec, before any framework code exists"};
  app.set_version_flag("--version", "nnmem 0.1.0");
  app.require_subcommand(1);
  app.allow_extras();

  EstimateArgs estimate_args;
  CLI::App* estimate_cmd = app.add_subcommand("estimate", "per-layer shapes, parameters and MACs, and a step's memory");
  estimate_args.add_to(*estimate_cmd);

  SpecArgs check_spec;
  StepArgs check_step;
  CLI::App* check_cmd = app.add_subcommand(
      "check", "validate a spec by estimating it (with estimate's flags): exit 0, or print the located error and exit 1");
  check_spec.add_to(*check_cmd);
  check_step.add_to(*check_cmd);

  FitArgs fit_args;
  CLI::App* fit_cmd = app.add_subcommand("fit", "the largest batch whose training step fits in a memory budget");
  fit_args.add_to(*fit_cmd);

  std::string layer_type;
  CLI::App* layers_cmd = app.add_subcommand("layers", "list the layer types, or one type's attributes");
  layers_cmd->add_option("TYPE", layer_type, "a layer type, e.g. Conv2d");
  std::string layers_torch{default_torch_profile().version};
  layers_cmd->add_option("--torch", layers_torch, "list the types of this PyTorch version: " + torch_versions())
      ->check(one_of(versions()))
      ->capture_default_str();
  for (CLI::App* cmd : {estimate_cmd, check_cmd, fit_cmd, layers_cmd}) cmd->allow_extras();

  try {
    check_command(argc, argv, app);
    app.parse(argc, argv);
    check_extras(app);
    for (const CLI::App* cmd : {estimate_cmd, check_cmd, fit_cmd, layers_cmd})
      if (*cmd) check_extras(*cmd);
    if (*estimate_cmd) return run_estimate(estimate_args);
    if (*check_cmd) return run_check(check_spec, check_step);
    if (*fit_cmd) return run_fit(fit_args);
    return run_layers(layer_type, *find_torch_profile(layers_torch));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--batch: 1 required INT:INT in [1 - 1099511627776] missing".
    const std::string what = e.what();
    const std::string message = what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0
                                    ? what.substr(0, what.find(':')) + ": needs a value"
                                    : what;
    std::cerr << "nnmem: error: " << message << "\nRun with --help for more information.\n";
    return 1;
  } catch (const CLI::ParseError& e) {
    std::cerr << "nnmem: error: " << e.what() << "\nRun with --help for more information.\n";
    return 1;
  } catch (const UsageError& e) {
    std::cerr << "nnmem: error: " << e.what() << "\nRun with --help for more information.\n";
    return 1;
  } catch (const nnmem::Error& e) {
    std::cerr << e.format() << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "nnmem: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // The library turns what it can into located errors; this is the last resort (an
    // OverflowError it could not place, or a bug), still a clear message and exit code 1.
    std::cerr << "nnmem: error: " << e.what() << '\n';
    return 1;
  }
}
