// nnmem import: a Hugging Face config.json written as the nnmem spec it translates to — the
// family's template (blocks and variables) with the config's values — for reading and editing.
// `nnmem estimate config.json` estimates exactly this spec.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "nnmem/hf_config.hpp"

namespace nnmem::cli {

namespace {

struct ImportArgs {
  std::string file;
  std::string architecture;
  std::string output;
};

int run(const ImportArgs& a) {
  const ImportedSpec imported = import_hf_config(a.file, a.architecture);
  if (a.output.empty()) std::cout << imported.text;
  else write_file("--output", a.output, imported.text);
  return 0;
}

std::string supported() {
  std::string out = "Supported model_type values (and model classes):";
  for (const auto& line : supported_hf_models()) out += "\n  " + line;
  return out + "\n";
}

}  // namespace

Subcommand add_import(CLI::App& parent) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* app = parent.add_subcommand("import", "a Hugging Face config.json as the equivalent nnmem spec (YAML), for "
                                                  "editing; estimate and the other commands also read the config directly");
  app->add_option("FILE", a->file, "the config.json (model_type and architectures[0] choose the family and head)")->required();
  app->add_option("--architecture", a->architecture, "the model class, in place of architectures[0] (BertModel for a "
                                                     "checkpoint saved as BertForMaskedLM)");
  app->add_option("-o,--output", a->output, "write the spec to this file instead of standard output");
  app->footer(supported());
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
