// nnmem sweep: every component at every point of a grid of batch sizes and spec variables, the
// peak fitted as a formula, and a picture (with --tp/--pp, per GPU: the most loaded stage's).
#include <iostream>
#include <memory>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/parallel.hpp"
#include "nnmem/sweep.hpp"

namespace nnmem::cli {

namespace {

struct SweepArgs {
  SpecArgs spec;
  StepArgs step;
  std::vector<std::string> vary;
  std::string format = "table";
  std::string plot;
  std::string budget;
};

int run(const SweepArgs& a) {
  const EstimateOptions options = a.step.options();
  ReportOptions report;
  report.budget_bytes = budget_option("--budget", a.budget);
  std::vector<SweepVariable> vary;
  for (const auto& text : a.vary) {
    const auto [name, values] = assignment("--vary", text);
    for (const auto& v : vary)
      if (v.name == name) throw CLI::ValidationError("--vary", "'" + name + "' is varied twice; give its values once");
    vary.push_back({name, parse_sweep_values(values, SourceLoc{"--vary " + text, 0, 0})});
    if (name == "batch")
      for (const auto& b : vary.back().values)
        if (b.find_first_not_of("0123456789") != std::string::npos || b == "0" || b.size() > 13)
          throw CLI::ValidationError("--vary", "batch sizes are integers from 1 to 2^40, found '" + b + "'");
  }
  const auto load = [&](const LoadOptions& lo) { return load_spec(a.spec.path, lo, a.spec.load.import); };
  const auto print = [&](const auto& s) {  // a Sweep, or with --tp/--pp a ModelParallelSweep
    if (!a.plot.empty()) write_file("--plot", a.plot, render_sweep_svg(s, report));
    if (a.format == "json") std::cout << render_json(s, report) << '\n';
    else if (a.format == "csv") std::cout << render_csv(s, report);
    else if (a.format == "markdown") std::cout << render_markdown(s, report);
    else std::cout << render_table(s, report);
  };
  if (const ModelParallelOptions mp = a.step.scale.model_parallel(); mp.active())
    print(sweep_model_parallel(load, a.spec.load.options(), vary, options, mp));
  else
    print(sweep(load, a.spec.load.options(), vary, options));
  return 0;
}

}  // namespace

Subcommand add_sweep(CLI::App& parent) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* app = parent.add_subcommand("sweep", "every component of the step over a grid of batch sizes and spec variables, "
                                                 "the peak fitted as a formula (least squares), and a picture");
  a->spec.add_to(*app);
  a->step.scale.model_parallel_command = true;
  a->step.add_to(*app);
  app->add_option("--vary", a->vary,
                  "NAME=VALUES: batch or a spec variable, over values such as 1,2,4..512 (A..B doubles from A to B) "
                  "or 8..64+8 (steps of 8); repeatable: the grid of all combinations")
      ->required();
  app->add_option("--format", a->format, "output format")->check(one_of({"table", "json", "csv", "markdown"}))->capture_default_str();
  app->add_option("--plot", a->plot, "draw the components against the swept variable as an SVG");
  app->add_option("--budget", a->budget, "mark what fits in this (e.g. 24GiB): a line, the largest point, the formula's batch");
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
