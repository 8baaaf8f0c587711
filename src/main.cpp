// The nnmem command line: parses flags, calls the library, prints. One options struct per
// subcommand; every library error arrives as nnmem::Error and exits with code 1.
#include <CLI/CLI.hpp>

#include <iostream>

#include "nnmem/estimate.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

namespace {

using namespace nnmem;

struct SpecArgs {
  std::string path;
  std::vector<std::string> sets;
  std::int64_t max_layers = 100000;

  void add_to(CLI::App& app) {
    app.add_option("SPEC", path, "the model spec (YAML)")->required();
    app.add_option("--set", sets, "override a spec variable: NAME=VALUE (repeatable)");
    app.add_option("--max-layers", max_layers, "refuse specs that expand to more layers than this")
        ->check(CLI::PositiveNumber);
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

struct EstimateArgs {
  SpecArgs spec;
  std::int64_t batch = 1;
  std::string format = "table";
  std::string convention;
  std::string mode = "train";
  std::string device = "cuda";
  std::string dtype;
  std::string optimizer = "adam";
  std::string loss;
  std::string overhead = "0";
  bool keep_grads = false;
  bool foreach = false;
  bool rmsprop_momentum = false;
  bool rmsprop_centered = false;
};

template <typename T>
std::map<std::string, T> choices(std::initializer_list<std::pair<const std::string, T>> list) {
  return std::map<std::string, T>(list);
}

void add_estimate(CLI::App& app, EstimateArgs& a) {
  a.spec.add_to(app);
  app.add_option("-b,--batch", a.batch, "batch size")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--format", a.format, "output format")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--convention", a.convention, "also show another tool's figures")->check(CLI::IsMember({"torchsummary"}));
  app.add_option("--mode", a.mode, "a training step, or inference (no gradients)")->check(CLI::IsMember({"train", "eval"}));
  app.add_option("--device", a.device, "whose kernels' conventions to follow")->check(CLI::IsMember({"cuda", "cpu"}));
  app.add_option("--dtype", a.dtype, "parameters and activations dtype (default: the spec's, else float32)")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16", "float64"}));
  app.add_option("--optimizer", a.optimizer, "optimizer whose state and temporaries are counted")
      ->check(CLI::IsMember({"none", "sgd", "momentum", "nesterov", "adam", "adamw", "amsgrad", "rmsprop", "adagrad", "adam8bit"}));
  app.add_option("--loss", a.loss, "loss (default: the spec's, else mean)")->check(CLI::IsMember({"cross_entropy", "mse", "mean"}));
  app.add_option("--overhead", a.overhead, "framework overhead added on CUDA, e.g. 500MiB (the CUDA context)");
  app.add_flag("--keep-grads", a.keep_grads, "zero_grad(set_to_none=False): gradients persist between steps");
  app.add_flag("--foreach", a.foreach, "the optimizer's multi-tensor (foreach) implementation");
  app.add_flag("--rmsprop-momentum", a.rmsprop_momentum, "RMSprop with momentum > 0");
  app.add_flag("--rmsprop-centered", a.rmsprop_centered, "RMSprop with centered=True");
}

int run_estimate(const EstimateArgs& a) {
  EstimateOptions o;
  o.graph.batch = a.batch;
  o.graph.mode = a.mode == "eval" ? Mode::Eval : Mode::Train;
  o.graph.device = a.device == "cpu" ? Device::Cpu : Device::Cuda;
  if (!a.dtype.empty()) o.graph.float_dtype = parse_dtype(a.dtype);
  o.step.optimizer = *parse_optimizer(a.optimizer);
  o.step.rmsprop_momentum = a.rmsprop_momentum;
  o.step.rmsprop_centered = a.rmsprop_centered;
  if (!a.loss.empty()) o.step.loss = parse_loss(a.loss);
  o.step.keep_grads = a.keep_grads;
  o.step.foreach = a.foreach;
  const auto overhead = parse_bytes(a.overhead);
  if (!overhead) throw CLI::ValidationError("--overhead", "expected a size such as 500MiB or 1.2GB, found '" + a.overhead + "'");
  o.step.overhead_bytes = *overhead;

  const Estimate e = estimate(a.spec.load(), o);
  if (a.format == "json") std::cout << render_json(e) << '\n';
  else if (a.convention == "torchsummary") std::cout << render_torchsummary(e);
  else std::cout << render_table(e);
  return 0;
}

int run_check(const SpecArgs& a) {
  const Graph g = build_graph(a.load());
  std::int64_t params = 0;
  for (const auto& n : g.nodes) params = checked_add(params, n.param_count);
  std::cout << a.path << ": ok (" << g.nodes.size() << " layers, " << with_commas(params) << " parameters)\n";
  return 0;
}

int run_layers(const std::string& type) {
  if (type.empty()) {
    for (const auto& t : layer_types()) {
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
  if (d->attrs.empty()) std::cout << "attributes: none\n";
  for (const auto& attr : d->attrs) std::cout << "  " << attr.name << ": " << attr.describe() << "\n      " << attr.help << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nnmem: how much memory a neural network needs, from a YAML spec, before any framework code exists"};
  app.set_version_flag("--version", "nnmem 0.1.0");
  app.require_subcommand(1);

  EstimateArgs estimate_args;
  CLI::App* estimate_cmd = app.add_subcommand("estimate", "per-layer shapes, parameters and MACs, and a step's memory");
  add_estimate(*estimate_cmd, estimate_args);

  SpecArgs check_args;
  CLI::App* check_cmd = app.add_subcommand("check", "validate a spec: exit 0, or print the located error and exit 1");
  check_args.add_to(*check_cmd);

  std::string layer_type;
  CLI::App* layers_cmd = app.add_subcommand("layers", "list the layer types, or one type's attributes");
  layers_cmd->add_option("TYPE", layer_type, "a layer type, e.g. Conv2d");

  try {
    app.parse(argc, argv);
    if (*estimate_cmd) return run_estimate(estimate_args);
    if (*check_cmd) return run_check(check_args);
    return run_layers(layer_type);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nnmem: error: " << e.what() << "\nRun with --help for more information.\n";
    return 1;
  } catch (const nnmem::Error& e) {
    std::cerr << e.format() << '\n';
    return 1;
  }
}
