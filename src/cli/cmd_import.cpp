// nnmem import: a Hugging Face config.json or an Ultralytics model file written as the nnmem
// spec it translates to — a template's blocks and variables with the file's values, or the
// file's modules as block instances — for reading and editing. `nnmem estimate FILE` estimates
// exactly this spec.
#include <iostream>
#include <memory>

#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/hf_config.hpp"
#include "nnmem/ultralytics.hpp"

namespace nnmem::cli {

namespace {

struct ImportArgs {
  std::string file;
  std::string architecture;
  std::string scale;
  std::string output;
};

int run(const ImportArgs& a) {
  if (!is_hf_config(a.file) && !a.architecture.empty()) throw UsageError("--architecture is for a Hugging Face config.json");
  if (is_hf_config(a.file) && !a.scale.empty()) throw UsageError("--scale is for an Ultralytics model file");
  const std::string text =
      is_hf_config(a.file) ? import_hf_config(a.file, a.architecture).text : import_ultralytics(a.file, a.scale).text;
  if (a.output.empty()) std::cout << text;
  else write_file("--output", a.output, text);
  return 0;
}

std::string supported() {
  std::string out = "Supported model_type values (and model classes):";
  for (const auto& line : supported_hf_models()) out += "\n  " + line;
  return out + "\nUltralytics model files (backbone and head): the modules YOLOv8 uses (Conv, C2f, SPPF, nn.Upsample, "
               "Concat, Detect)\n";
}

}  // namespace

Subcommand add_import(CLI::App& parent) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* app = parent.add_subcommand("import", "a Hugging Face config.json or an Ultralytics model YAML as the equivalent "
                                                  "nnmem spec, for editing; estimate and the other commands also read them directly");
  app->add_option("FILE", a->file, "the config.json (model_type and architectures[0] choose the family and head), or the "
                                   "Ultralytics model file")->required();
  app->add_option("--scale", a->scale, "an Ultralytics model file's scale (n, s, m, l, x), in place of its file name's");
  app->add_option("--architecture", a->architecture, "the model class, in place of architectures[0] (BertModel for a "
                                                     "checkpoint saved as BertForMaskedLM)");
  app->add_option("-o,--output", a->output, "write the spec to this file instead of standard output");
  app->footer(supported());
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
