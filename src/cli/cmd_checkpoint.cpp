// nnmem checkpoint: bytes on disk of the weights alone and of a training checkpoint.
#include <iostream>
#include <memory>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/checkpoint.hpp"

namespace nnmem::cli {

namespace {

struct CheckpointArgs {
  SpecArgs spec;
  std::string format = "torch";
  std::string optimizer = "adam";
  TorchArg torch;
  std::string dtype;
  std::string file;
  std::string output = "table";
};

int run(const CheckpointArgs& a) {
  CheckpointOptions o;
  o.format = a.format == "safetensors" ? CheckpointFormat::Safetensors : a.format == "tf" ? CheckpointFormat::TensorFlow : CheckpointFormat::Torch;
  o.optimizer = *parse_optimizer(a.optimizer);
  o.torch = &a.torch.profile();
  o.file_stem = a.file.substr(0, a.file.rfind('.'));
  if (!a.file.empty() && o.file_stem.empty()) throw CLI::ValidationError("--file", "'" + a.file + "' has no name before its extension");
  GraphOptions graph;
  if (!a.dtype.empty()) graph.float_dtype = parse_dtype(a.dtype);
  const CheckpointSizes c = checkpoint_sizes(build_graph(a.spec.spec(), graph), o);
  if (a.output == "json") std::cout << render_json(c) << '\n';
  else if (a.output == "csv") std::cout << render_csv(c);
  else if (a.output == "markdown") std::cout << render_markdown(c);
  else std::cout << render_table(c);
  return 0;
}

}  // namespace

Subcommand add_checkpoint(CLI::App& parent) {
  auto a = std::make_shared<CheckpointArgs>();
  CLI::App* app = parent.add_subcommand("checkpoint", "bytes on disk of the weights alone and of a training checkpoint "
                                                      "(weights, buffers, optimizer state), component by component");
  a->spec.add_to(*app);
  app->add_option("--format", a->format, "torch: torch.save; safetensors (a training checkpoint adds a torch.save'd "
                                         "optimizer.pt); tf: TensorFlow's .data and .index (modelled)")
      ->check(one_of({"torch", "safetensors", "tf"}))
      ->capture_default_str();
  app->add_option("--optimizer", a->optimizer, "the optimizer whose state the training checkpoint holds")
      ->check(one_of({"none", "sgd", "momentum", "nesterov", "adam", "adamw", "amsgrad"}))
      ->capture_default_str();
  a->torch.add_to(*app, "torch.save's layout (2.x: four more records, more param_group keys)");
  app->add_option("--dtype", a->dtype, "the parameters' dtype")
      ->check(one_of({"float32", "float16", "bfloat16", "float64"}))
      ->default_str("the spec's, else float32");
  app->add_option("--file", a->file, "the file's name: torch.save repeats its stem in every record")->default_str("MODEL.pt");
  app->add_option("--output", a->output, "output format")->check(one_of({"table", "json", "csv", "markdown"}))->capture_default_str();
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
