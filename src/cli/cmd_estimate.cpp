// nnmem estimate (the answer, the per-layer table and the memory breakdown, in four formats)
// and nnmem check (the same estimate, only its verdict: exit 0 or the located error).
#include <algorithm>
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
  std::vector<std::string> plots;
  std::string trace;
};

// "layers:out.svg", "timeline:out.svg", or a file whose name says which: one beginning with
// "layers" draws the layers, any other the timeline.
struct Plot {
  std::string path;
  bool layers = false;
};
Plot parse_plot(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? "" : spec.substr(0, colon);
  const std::string path = kind == "layers" || kind == "timeline" ? spec.substr(colon + 1) : spec;
  const std::string name = path.substr(path.find_last_of('/') + 1);
  return {path, kind == "layers" || (kind.empty() && name.rfind("layers", 0) == 0)};
}

void write_plot(const std::string& spec, const Estimate& e, const ReportOptions& report) {
  const Plot plot = parse_plot(spec);
  write_file("--plot", plot.path, plot.layers ? render_layers_svg(e) : render_timeline_svg(e, report));
}

// Whether an output asked for reads the step's timeline (otherwise it is not recorded).
bool reads_timeline(const EstimateArgs& a) {
  return (a.format == "json" && !a.no_timeline) || !a.trace.empty() ||
         std::any_of(a.plots.begin(), a.plots.end(), [](const std::string& p) { return !parse_plot(p).layers; });
}

// --tp, --pp: every stage's rank, modelled; the table or the JSON.
int run_model_parallel(const EstimateArgs& a, const EstimateOptions& options, const ReportOptions& report) {
  if (a.format == "csv" || a.format == "markdown" || !a.convention.empty() || !a.plots.empty() || !a.trace.empty())
    throw CLI::ValidationError(a.step.scale.tp > 1 ? "--tp" : "--pp", "reports as a table or JSON (--format table|json); "
                                                                     "--format csv|markdown, --convention, --plot and --trace are for one device's step");
  const ModelParallelEstimate m = estimate_model_parallel(a.spec.spec(), options, a.step.scale.model_parallel());
  std::cout << (a.format == "json" ? render_json(m, report) + "\n" : render_table(m, report));
  return report.budget_bytes && m.stages[m.most_loaded()].peak_bytes > *report.budget_bytes ? kExitDoesNotFit : 0;
}

int run_estimate(const EstimateArgs& a) {
  EstimateOptions options = a.step.options();  // flag mistakes before reading the spec
  options.step.timeline = reads_timeline(a);
  ReportOptions report;
  report.budget_bytes = budget_option("--budget", a.budget);
  report.summary = a.summary;
  report.depth = a.depth;
  report.timeline = !a.no_timeline;
  if (a.step.scale.model_parallel().active()) return run_model_parallel(a, options, report);
  const Estimate e = estimate(a.spec.spec(), options);
  for (const auto& plot : a.plots) write_plot(plot, e, report);
  if (!a.trace.empty()) write_file("--trace", a.trace, render_trace_json(e));
  if (a.format == "json") write_json(std::cout, e, report), std::cout << '\n';
  else if (a.format == "csv") std::cout << render_csv(e, report);
  else if (a.format == "markdown") std::cout << render_markdown(e, report);
  else if (a.convention == "torchsummary") std::cout << render_torchsummary(e);
  else if (a.convention == "deepspeed") std::cout << render_deepspeed(e, deepspeed_convention(e, a.step.scale.parallel()));
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
  a->step.scale.model_parallel_command = true;
  a->step.add_to(*app);
  app->add_option("--format", a->format, "output format; csv: one row per layer, or per memory component with --summary")
      ->check(one_of({"table", "json", "csv", "markdown"}))
      ->capture_default_str();
  app->add_option("--convention", a->convention, "show another tool's figures instead")->check(one_of({"torchsummary", "deepspeed"}));
  app->add_option("--budget", a->budget, "a verdict: does the step fit in this (e.g. 24GiB)? Exit 2 when it does not");
  app->add_flag("--summary", a->summary, "the answer and the memory breakdown, without the per-layer rows");
  app->add_option("--depth", a->depth, "fold layers into one row per name prefix of this many parts (layer1.0: depth 2)")
      ->check(integer_between(1, 64));
  app->add_flag("--no-timeline", a->no_timeline, "JSON: leave out the allocation timeline");
  app->add_option("--plot", a->plots,
                  "draw an SVG: the memory timeline (timeline.svg) or the layers that hold the most (layers.svg); "
                  "a timeline: or layers: prefix says which whatever the name (repeatable)");
  app->add_option("--trace", a->trace, "write the timeline as Chrome trace-event JSON, for Perfetto or chrome://tracing");
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
