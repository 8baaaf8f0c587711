// nnmem fit: the largest batch whose step fits a budget (with --tp/--pp: the largest micro-batch per
// GPU whose most loaded pipeline stage does).
#include <iostream>
#include <memory>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/parallel.hpp"
#include "nnmem/plan.hpp"

namespace nnmem::cli {

namespace {

struct FitArgs {
  SpecArgs spec;
  StepArgs step;
  std::string budget;
  std::string headroom = "0";
  std::int64_t multiple_of = 1;
  std::string format = "table";
  bool table = false;
};

// "10%" of the budget, or a size.
std::int64_t headroom_bytes(const std::string& text, std::int64_t budget) {
  if (!text.empty() && text.back() == '%') {
    char* end = nullptr;
    const double percent = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() - 1 || !(percent >= 0 && percent < 100))
      throw CLI::ValidationError("--headroom", "expected a percentage from 0% to below 100%, or a size, found '" + text + "'");
    return static_cast<std::int64_t>(static_cast<double>(budget) * percent / 100.0);
  }
  const std::int64_t bytes = parse_size_option("--headroom", text);
  if (bytes >= budget) throw CLI::ValidationError("--headroom", "'" + text + "' leaves nothing of the budget");
  return bytes;
}

int run(const FitArgs& a) {
  EstimateOptions options = a.step.options();
  FitOptions fit;
  fit.budget_bytes = *budget_option("--budget", a.budget);
  fit.headroom_bytes = headroom_bytes(a.headroom, fit.budget_bytes);
  fit.multiple_of = a.multiple_of;
  fit.with_estimate = a.table || a.format == "json";
  if (const ModelParallelOptions mp = a.step.scale.model_parallel(); mp.active()) {  // --tp, --pp: the micro-batch per GPU
    const ModelParallelFit result = fit_model_parallel(a.spec.spec(), options, mp, fit);
    std::cout << (a.format == "json" ? render_json(result) + "\n" : render_table(result, a.table));
    return result.micro_batch > 0 ? 0 : kExitDoesNotFit;
  }
  const BatchFit result = fit_batch(a.spec.spec(), options, fit);
  std::cout << (a.format == "json" ? render_json(result) + "\n" : render_table(result, a.table));
  return result.batch > 0 ? 0 : kExitDoesNotFit;
}

}  // namespace

Subcommand add_fit(CLI::App& parent) {
  auto a = std::make_shared<FitArgs>();
  CLI::App* app = parent.add_subcommand(
      "fit", "the largest batch whose training step fits in a memory budget (exit 2 when no batch does)");
  a->spec.add_to(*app);
  a->step.scale.model_parallel_command = true;
  a->step.add_to(*app, false);
  app->add_option("--budget", a->budget, "the memory to fit in, e.g. 24GiB or 80GB (with --overhead for the CUDA context)")
      ->required();
  app->add_option("--headroom", a->headroom, "keep this much of the budget free: a size (2GiB) or a percentage (10%)")
      ->capture_default_str();
  app->add_option("--multiple-of", a->multiple_of, "only batches that are multiples of this")
      ->check(integer_between(1, kMaxBatch))
      ->capture_default_str();
  app->add_option("--format", a->format, "output format")->check(one_of({"table", "json"}))->capture_default_str();
  app->add_flag("--table", a->table, "also print the estimate at that batch");
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
