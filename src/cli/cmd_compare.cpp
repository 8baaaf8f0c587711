// nnmem compare: several specs, or one spec under named variants, side by side (with --tp/--pp,
// each one's most loaded stage per GPU).
#include <iostream>
#include <memory>
#include <sstream>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/parallel.hpp"
#include "nnmem/plan.hpp"

namespace nnmem::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> paths;
  LoadArgs load;
  StepArgs step;
  std::vector<std::vector<std::string>> variants;
  std::string budget;
  std::string format = "table";
};

// "big:--set hidden=1024,depth=4 --input x=[3,64,64] --batch 8": a name, then its overrides.
struct Variant {
  std::string name;
  LoadOptions load;
  std::optional<std::int64_t> batch;
};

Variant parse_variant(const std::vector<std::string>& words, const LoadOptions& base) {
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0)
    throw CLI::ValidationError("--variant", "expected NAME:--set k=v,… (or --input, --batch), found '" + text + "'");
  Variant v{text.substr(0, colon), base, std::nullopt};
  std::istringstream rest(text.substr(colon + 1));
  for (std::string flag, value; rest >> flag;) {
    if (!(rest >> value)) throw CLI::ValidationError("--variant", "'" + flag + "' in variant '" + v.name + "' needs a value");
    if (flag == "--set") {
      for (const auto& item : split_list(value)) v.load.overrides.push_back(assignment("--variant " + v.name + " --set", item));
    } else if (flag == "--input") {
      for (const auto& item : split_list(value)) v.load.input_shapes.push_back(assignment("--variant " + v.name + " --input", item));
    } else if (flag == "--batch") {
      char* end = nullptr;
      const long long b = std::strtoll(value.c_str(), &end, 10);
      if (*end || b < 1 || b > kMaxBatch)
        throw CLI::ValidationError("--variant", "--batch in variant '" + v.name + "': expected an integer from 1 to 2^40, found '" + value + "'");
      v.batch = b;
    } else {
      throw CLI::ValidationError("--variant", "variant '" + v.name + "': expected --set, --input or --batch, found '" + flag + "'");
    }
  }
  return v;
}

int run(const CompareArgs& a) {
  const EstimateOptions options = a.step.options();
  Comparison c;
  c.budget_bytes = budget_option("--budget", a.budget);
  std::vector<Variant> variants;
  for (const auto& words : a.variants) variants.push_back(parse_variant(words, a.load.options()));
  if (variants.empty()) variants.push_back({"", a.load.options(), std::nullopt});
  if (a.paths.size() * variants.size() < 2)
    throw CLI::ValidationError("compare", "needs two columns: two specs or more, or a spec and two --variant or more");
  const ModelParallelOptions mp = a.step.scale.model_parallel();
  if (mp.active() && (a.format == "csv" || a.format == "markdown"))
    throw CLI::ValidationError(a.step.scale.tp > 1 ? "--tp" : "--pp", "compares as a table or JSON (--format table|json)");
  ModelParallelComparison per_gpu;  // --tp, --pp: the most loaded stage's figures per GPU
  per_gpu.budget_bytes = c.budget_bytes;
  for (const auto& path : a.paths)
    for (const auto& v : variants) {
      EstimateOptions o = options;
      if (v.batch) o.graph.batch = *v.batch;
      const ModelSpec spec = load_spec(path, v.load, a.load.import);
      const std::string name = v.name.empty() ? spec.name : a.paths.size() > 1 ? spec.name + ":" + v.name : v.name;
      FitOptions f;
      f.budget_bytes = c.budget_bytes.value_or(0);
      f.with_estimate = false;
      if (mp.active()) {
        per_gpu.columns.push_back({name, estimate_model_parallel(spec, o, mp), {}});
        if (c.budget_bytes) per_gpu.columns.back().fit = fit_model_parallel(spec, o, mp, f);
        continue;
      }
      Comparison::Column column{name, estimate(spec, o), {}};
      if (c.budget_bytes) column.fit = fit_batch(spec, o, f);
      c.columns.push_back(std::move(column));
    }
  if (mp.active()) {
    std::cout << (a.format == "json" ? render_json(per_gpu) + "\n" : render_table(per_gpu));
    return 0;
  }
  if (a.format == "json") std::cout << render_json(c) << '\n';
  else if (a.format == "csv") std::cout << render_csv(c);
  else if (a.format == "markdown") std::cout << render_markdown(c);
  else std::cout << render_table(c);
  return 0;
}

}  // namespace

Subcommand add_compare(CLI::App& parent) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* app = parent.add_subcommand("compare", "several specs, or one spec under named variants, side by side: parameters, "
                                                   "MACs, every memory component, the peak, the largest batch for --budget; "
                                                   "deltas against the first column");
  a->step.scale.model_parallel_command = true;
  app->add_option("SPEC", a->paths, "the model specs (YAML), or - for standard input")->required();
  a->load.add_to(*app);
  a->step.add_to(*app);
  app->add_option("--variant", a->variants,
                  "NAME:--set k=v,… a column of the spec under these overrides (also --input NAME=[…], --batch N; "
                  "quote a variant with several); repeatable")
      ->expected(1, 2)
      ->allow_extra_args(false);
  app->add_option("--budget", a->budget, "each column's largest batch that fits in this (e.g. 24GiB)");
  app->add_option("--format", a->format, "output format")->check(one_of({"table", "json", "csv", "markdown"}))->capture_default_str();
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
