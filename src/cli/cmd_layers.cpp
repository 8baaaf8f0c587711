// nnmem layers [TYPE]: the layer types, or one type's attributes and defaults.
#include <iostream>
#include <memory>

#include "args.hpp"
#include "commands.hpp"

namespace nnmem::cli {

namespace {

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
    std::cerr << "nnmem: error: unknown layer type '" << type << "'" << layer_type_hint(type) << '\n';
    return kExitError;
  }
  std::cout << d->type << ": " << d->summary << '\n';
  const std::string inputs = d->min_inputs == d->max_inputs ? std::to_string(d->min_inputs)
                             : d->max_inputs < 0           ? std::to_string(d->min_inputs) + " or more"
                                                           : std::to_string(d->min_inputs) + " to " + std::to_string(d->max_inputs);
  std::cout << "inputs: " << inputs << '\n';
  for (const TorchProfile& p : torch_profiles())
    if (!p.has_layer(d->type)) std::cout << "not in PyTorch " << p.version << '\n';
  for (const TorchProfile& p : torch_profiles())  // what its CPU kernels cannot do in 16 bits (an error there)
    for (const DType dtype : {DType::BFloat16, DType::Float16}) {
      const CpuKernelGap* gap = p.cpu_kernel_gap(d->type, dtype);
      if (!gap) continue;
      std::cout << "PyTorch " << p.version << " on the CPU: " << gap->op << ' ' << gap->failure()
                << (gap->when == CpuKernelGap::When::BesideFloat32 ? " (under autocast)" : "")
                << '\n';
    }
  if (!d->versions.empty()) std::cout << "by PyTorch version: " << d->versions << '\n';
  if (d->attrs.empty()) std::cout << "attributes: none\n";
  for (const auto& attr : d->attrs) std::cout << "  " << attr.name << ": " << attr.describe() << "\n      " << attr.help << '\n';
  return 0;
}

}  // namespace

Subcommand add_layers(CLI::App& parent) {
  auto type = std::make_shared<std::string>();
  auto torch = std::make_shared<TorchArg>();
  CLI::App* app = parent.add_subcommand("layers", "list the layer types, or one type's attributes");
  app->add_option("TYPE", *type, "a layer type, e.g. Conv2d");
  torch->add_to(*app, "list the types of this PyTorch version");
  return {app, [type, torch] { return run_layers(*type, torch->profile()); }};
}

}  // namespace nnmem::cli
