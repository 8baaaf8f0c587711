// nnmem inspect: a .safetensors file's tensors from its header alone, and with --spec the
// differences between the spec's state_dict and the file.
#include <iostream>
#include <memory>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/report.hpp"
#include "nnmem/safetensors.hpp"

namespace nnmem::cli {

namespace {

struct InspectArgs {
  std::string file;
  std::string spec;
  LoadArgs load;
  std::string dtype;
  std::string format = "table";
};

int run(const InspectArgs& a) {
  const SafetensorsFile f = read_safetensors(a.file);
  std::optional<TensorComparison> against;
  if (!a.spec.empty()) {
    GraphOptions graph;
    if (!a.dtype.empty()) graph.float_dtype = parse_dtype(a.dtype);
    const ModelSpec spec = load_spec(a.spec, a.load.options(), a.load.import);
    against = TensorComparison{spec.file, compare_tensors(build_graph(spec, graph), f)};
  }
  std::cout << (a.format == "json" ? render_json(f, against) + "\n" : render_table(f, against));
  return against && !against->differences.empty() ? 2 : 0;
}

}  // namespace

Subcommand add_inspect(CLI::App& parent) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* app = parent.add_subcommand("inspect", "a .safetensors file's tensors, elements and bytes by dtype, from its "
                                                   "header alone; with --spec, how the spec's state_dict differs from it");
  app->add_option("FILE", a->file, "the .safetensors file (only its header is read)")->required();
  app->add_option("--spec", a->spec, "a model spec whose parameters and buffers to check against the file, by name and shape");
  a->load.add_to(*app);
  app->add_option("--dtype", a->dtype, "the spec's parameters' dtype")
      ->check(one_of({"float32", "float16", "bfloat16", "float64"}))
      ->default_str("the spec's, else float32");
  app->add_option("--format", a->format, "output format")->check(one_of({"table", "json"}))->capture_default_str();
  app->footer("Exit status: 0, or 2 when the spec's tensors differ from the file's (1: an error).");
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
