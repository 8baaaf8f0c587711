// nnmem layers [TYPE]: the layer types, or one type's attributes and defaults.
#include <iostream>
#include <memory>

#include "args.hpp"
#include "commands.hpp"

namespace nnmem::cli {

namespace {

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
    std::cerr << "nnmem: error: unknown layer type '" << type << "'" << layer_type_hint(type) << '\n';
    return kExitError;
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

Subcommand add_layers(CLI::App& parent) {
  auto type = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand("layers", "list the layer types, or one type's attributes");
  app->add_option("TYPE", *type, "a layer type, e.g. Conv2d");
  return {app, [type] { return run_layers(*type); }};
}

}  // namespace nnmem::cli
