// nnmem estimate (the answer, the per-layer table and the memory breakdown, in four formats)
// and nnmem check (the same estimate, only its verdict: exit 0 or the located error).
#include <iostream>
#include <memory>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/plan.hpp"

namespace nnmem::cli {

namespace {

struct EstimateArgs {
  SpecArgs spec;
  StepArgs step;
  std::string format = "table";
  std::string convention;
  std::string budget;
  bool summary = false;
  int depth = 0;
  bool no_timeline = false;
};

int run_estimate(const EstimateArgs& a) {
  const EstimateOptions options = a.step.options();  // flag mistakes before reading the spec
  ReportOptions report;
  report.budget_bytes = budget_option("--budget", a.budget);
  report.summary = a.summary;
  report.depth = a.depth;
  report.timeline = !a.no_timeline;
  const Estimate e = estimate(a.spec.spec(), options);
  if (a.format == "json") std::cout << render_json(e, report) << '\n';
  else if (a.format == "csv") std::cout << render_csv(e, report);
  else if (a.format == "markdown") std::cout << render_markdown(e, report);
  else if (a.convention == "torchsummary") std::cout << render_torchsummary(e);
  else std::cout << render_table(e, report);
  return report.budget_bytes && needed_bytes(e) > *report.budget_bytes ? kExitDoesNotFit : 0;
}

struct CheckArgs {
  SpecArgs spec;
  StepArgs step;
};

int run_check(const CheckArgs& a) {
  const EstimateOptions options = a.step.options();
  const Estimate e = estimate(a.spec.spec(), options);
  std::cout << a.spec.path << ": ok (" << e.layers.size() << " layers, " << with_commas(e.totals.params) << " parameters)\n";
  return 0;
}

}  // namespace

Subcommand add_estimate(CLI::App& parent) {
  auto a = std::make_shared<EstimateArgs>();
  CLI::App* app = parent.add_subcommand("estimate", "the answer (peak, where, what the device holds), per-layer shapes, "
                                                    "parameters and MACs, and every component of a step's memory");
  a->spec.add_to(*app);
  a->step.add_to(*app);
  app->add_option("--format", a->format, "output format; csv: one row per layer, or per memory component with --summary")
      ->check(one_of({"table", "json", "csv", "markdown"}))
      ->capture_default_str();
  app->add_option("--convention", a->convention, "show another tool's figures instead")->check(one_of({"torchsummary"}));
  app->add_option("--budget", a->budget, "a verdict: does the step fit in this (e.g. 24GiB)? Exit 2 when it does not");
  app->add_flag("--summary", a->summary, "the answer and the memory breakdown, without the per-layer rows");
  app->add_option("--depth", a->depth, "fold layers into one row per name prefix of this many parts (layer1.0: depth 2)")
      ->check(integer_between(1, 64));
  app->add_flag("--no-timeline", a->no_timeline, "JSON: leave out the allocation timeline");
  return {app, [a] { return run_estimate(*a); }};
}

Subcommand add_check(CLI::App& parent) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* app = parent.add_subcommand(
      "check", "validate a spec by estimating it (with estimate's flags): exit 0, or print the located error and exit 1");
  a->spec.add_to(*app);
  a->step.add_to(*app);
  return {app, [a] { return run_check(*a); }};
}

}  // namespace nnmem::cli
