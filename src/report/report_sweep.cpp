// `nnmem sweep`: every component at every point (table, markdown, CSV, JSON), the fitted formula
// with its largest residual and the batch it implies, and the picture: the peak's components
// stacked against the swept variable, the budget as a line, the largest point that fits marked.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "nnmem/report.hpp"
#include "nnmem/sweep.hpp"
#include "nnmem/units.hpp"
#include "svg.hpp"
#include "text_table.hpp"

namespace nnmem {

namespace {

using report::TextTable;

// --tp/--pp: the setup every point's figures are the most loaded stage's rank of; null without.
using Mp = const ModelParallelSweep*;

bool cuda(const Sweep& s) { return s.options.graph.device == Device::Cuda; }

std::string where(const Totals& t) { return std::string(name_of(t.peak_phase)) + (t.peak_layer.empty() ? "" : " " + t.peak_layer); }

TextTable rows(const Sweep& s, Mp mp, const ReportOptions& r, bool raw) {
  TextTable t;
  for (const auto& v : s.vary) t.column(v.name);
  for (const char* c : {"parameters", "gradients", "optimizer state", "activations kept", "peak"}) t.column(c);
  if (cuda(s) && !mp) t.column("device holds");
  if (mp) t.column("stage"), t.column("in flight");
  t.column("peak at", TextTable::Align::Left);
  if (r.budget_bytes) t.column("fits", TextTable::Align::Left);
  const auto bytes = [&](std::int64_t b) { return raw ? std::to_string(b) : human_bytes(b); };
  for (const auto& p : s.points) {
    std::vector<std::string> row = p.values;
    const Totals& t0 = p.totals;
    for (std::int64_t b : {t0.param_bytes, t0.grad_bytes, t0.optimizer_state_bytes, t0.saved_bytes, t0.peak_bytes}) row.push_back(bytes(b));
    if (cuda(s) && !mp) row.push_back(bytes(p.needed_bytes));
    if (mp) row.push_back(std::to_string(p.stage.value_or(0))), row.push_back(std::to_string(p.in_flight));
    row.push_back(where(t0));
    if (r.budget_bytes) row.push_back(p.needed_bytes <= *r.budget_bytes ? "yes" : "no");
    t.row(std::move(row));
  }
  return t;
}

std::string power(const std::string& name, int p) { return p == 1 ? name : p == 2 ? name + "²" : ""; }

// "1.20 GiB + 84.12 MiB × batch" (readable) or "1288490188.0 + 88214323.2 × batch" (bytes).
std::string formula(const PolynomialFit& f, bool readable) {
  std::string out;
  for (const auto& term : f.terms) {
    if (term.coefficient == 0) continue;
    const double magnitude = std::fabs(term.coefficient);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", magnitude);
    std::string s = readable ? human_bytes(static_cast<std::int64_t>(std::llround(magnitude))) : buf;
    for (std::size_t v = 0; v < f.variables.size(); ++v)
      if (term.powers[v]) s += " × " + power(f.variables[v], term.powers[v]);
    out += out.empty() ? (term.coefficient < 0 ? "-" + s : s) : (term.coefficient < 0 ? " - " : " + ") + s;
  }
  return out.empty() ? "0" : out;
}

// What the formula implies for the budget: the largest batch at each value of the other variables.
std::vector<std::string> implied_batches(const Sweep& s, std::int64_t budget) {
  std::vector<std::string> out;
  if (!s.fit) return out;
  std::vector<std::vector<double>> others = {{}};  // the distinct combinations, batch's entry 0
  std::vector<std::string> labels = {""};
  for (const auto& v : s.vary) {
    std::vector<std::vector<double>> next;
    std::vector<std::string> next_labels;
    for (std::size_t i = 0; i < others.size(); ++i)
      for (const auto& value : v.name == "batch" ? std::vector<std::string>{"0"} : v.values) {
        next.push_back(others[i]);
        next.back().push_back(std::strtod(value.c_str(), nullptr));
        next_labels.push_back(v.name == "batch" ? labels[i] : labels[i] + (labels[i].empty() ? "" : ", ") + v.name + "=" + value);
      }
    others = std::move(next);
    labels = std::move(next_labels);
  }
  for (std::size_t i = 0; i < others.size(); ++i)
    if (const auto b = s.fit->largest_batch(budget, others[i])) out.push_back((labels[i].empty() ? "" : labels[i] + ": ") + "batch ≤ " + with_commas(*b));
  return out;
}

std::string fit_lines(const Sweep& s, const ReportOptions& r, const std::string& bullet) {
  if (!s.fit) return bullet + "No formula: the swept values are not all numbers, or there are too few points.\n";
  const PolynomialFit& f = *s.fit;
  std::string out = bullet + "Fit (least squares, " + std::to_string(s.points.size()) + " points): peak ≈ " + formula(f, true) + "\n" +
                    bullet + "  in bytes: " + formula(f, false) + "; largest residual " +
                    human_bytes_exact(static_cast<std::int64_t>(std::ceil(f.max_residual))) + "\n";
  if (r.budget_bytes) {
    const auto batches = implied_batches(s, *r.budget_bytes);
    std::string joined;
    for (const auto& b : batches) joined += (joined.empty() ? "" : "; ") + b;
    if (!joined.empty())
      out += bullet + "  budget " + human_bytes(*r.budget_bytes) + ", by the formula (the peak, before the allocator rounds): " + joined +
             " (nnmem fit gives the exact answer)\n";
  }
  return out;
}

std::string heading(const Sweep& s, Mp mp) {
  std::string vars;
  for (const auto& v : s.vary) vars += (vars.empty() ? "" : " and ") + v.name;
  std::string out = s.model + " (" + s.file + "): " + describe_step(s.options) + ", over " + vars;
  if (mp)
    out += "; " + describe_model_parallel(mp->options, mp->data_parallel, mp->micro_batches) +
           " — per GPU, the most loaded stage's, modelled (no GPU cluster measured it)";
  return out;
}

std::string table(const Sweep& s, Mp mp, const ReportOptions& r) { return heading(s, mp) + "\n\n" + rows(s, mp, r, false).text() + "\n" + fit_lines(s, r, ""); }
std::string markdown(const Sweep& s, Mp mp, const ReportOptions& r) {
  return "## " + heading(s, mp) + "\n\n" + rows(s, mp, r, false).markdown() + "\n" + fit_lines(s, r, "- ");
}

std::string json(const Sweep& s, Mp mp, const ReportOptions& r, int indent) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["model"] = {{"name", s.model}, {"file", s.file}};
  const DataParallelStep& p = s.options.step.parallel;  // every point's figures are one rank's
  j["parallel"] = {{"strategy", p.strategy.empty() ? "single" : p.strategy}, {"world_size", p.world_size}, {"nodes", p.nodes}};
  if (mp) {
    const ModelParallelOptions& o = mp->options;
    j["model_parallel"] = {{"modelled", true}, {"tp", o.tp}, {"pp", o.pp}, {"dp", mp->data_parallel}, {"schedule", name_of(o.schedule)},
                           {"virtual_stages", o.virtual_stages}, {"sequence_parallel", o.sequence_parallel},
                           {"micro_batches", mp->micro_batches}, {"points_are", "the most loaded stage's rank, per GPU"}};
  }
  j["vary"] = ordered_json::array();
  for (const auto& v : s.vary) j["vary"].push_back({{"name", v.name}, {"values", v.values}});
  j["points"] = ordered_json::array();
  for (const auto& p : s.points) {
    const Totals& t = p.totals;
    ordered_json breakdown = ordered_json::object();
    for (std::size_t k = 0; k < kMemoryKinds; ++k) breakdown[std::string(name_of(static_cast<MemoryKind>(k)))] = t.peak_breakdown[k];
    j["points"].push_back({{"values", p.values}, {"param_bytes", t.param_bytes}, {"buffer_bytes", t.buffer_bytes},
                           {"grad_bytes", t.grad_bytes}, {"optimizer_state_bytes", t.optimizer_state_bytes},
                           {"input_bytes", t.input_bytes}, {"activation_bytes", t.activation_bytes}, {"saved_bytes", t.saved_bytes},
                           {"peak_bytes", t.peak_bytes}, {"peak_phase", name_of(t.peak_phase)}, {"peak_layer", t.peak_layer},
                           {"peak_breakdown", breakdown}, {"needed_bytes", p.needed_bytes},
                           {"fits", r.budget_bytes ? ordered_json(p.needed_bytes <= *r.budget_bytes) : ordered_json(nullptr)}});
    if (mp) j["points"].back()["stage"] = p.stage.value_or(0), j["points"].back()["in_flight"] = p.in_flight;
  }
  if (s.fit) {
    ordered_json terms = ordered_json::array();
    for (const auto& t : s.fit->terms) terms.push_back({{"powers", t.powers}, {"coefficient", t.coefficient}});
    j["fit"] = {{"of", "peak_bytes"}, {"variables", s.fit->variables}, {"terms", terms}, {"max_residual", s.fit->max_residual},
                {"formula", formula(*s.fit, true)}};
  } else {
    j["fit"] = nullptr;
  }
  j["budget_bytes"] = r.budget_bytes ? ordered_json(*r.budget_bytes) : ordered_json(nullptr);
  return j.dump(indent);
}

std::string svg(const Sweep& s, Mp mp, const ReportOptions& r) {
  static constexpr std::array<const char*, kMemoryKinds> colors = {"#4e79a7", "#a0cbe8", "#f28e2b", "#e15759",
                                                                  "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#ff9da7"};
  static constexpr std::array<const char*, kMemoryKinds> labels = {"parameters", "buffers", "optimizer state", "gradients",
                                                                  "input + target", "activations kept", "autocast weight copies",
                                                                  "activation gradients, temporaries", "gradient buckets (DDP)", "all-gathered parameters"};
  report::StackedChart c;
  c.title = "Peak of a " + std::string(s.options.graph.mode == Mode::Train ? "training step" : "forward pass") +
            (mp ? " per GPU (the most loaded pipeline stage)" : "") + ", what it is made of";
  c.subtitle = heading(s, mp) + (s.fit ? "; peak ≈ " + formula(*s.fit, true) : "");
  for (const auto& v : s.vary) c.x_label += (c.x_label.empty() ? "" : ", ") + v.name;
  const bool one_number = s.vary.size() == 1 && s.fit.has_value();  // a linear axis of its values
  for (const auto& p : s.points) {
    if (one_number) c.x_values.push_back(std::strtod(p.values[0].c_str(), nullptr));
    std::string label;
    for (std::size_t v = 0; v < p.values.size(); ++v) label += (v ? "," : "") + p.values[v];
    c.x_ticks.push_back(label);
    c.y_max = std::max(c.y_max, std::max(p.totals.peak_bytes, p.needed_bytes));
  }
  for (std::size_t k = 0; k < kMemoryKinds; ++k) {
    report::StackedChart::Series series{labels[k], colors[k], {}};
    for (const auto& p : s.points) series.values.push_back(p.totals.peak_breakdown[k]);
    if (std::any_of(series.values.begin(), series.values.end(), [](std::int64_t v) { return v > 0; })) c.series.push_back(std::move(series));
  }
  if (r.budget_bytes) {
    c.lines.push_back({*r.budget_bytes, "budget " + human_bytes(*r.budget_bytes), "#1a7f37"});
    std::optional<std::size_t> largest;
    for (std::size_t i = 0; i < s.points.size(); ++i)
      if (s.points[i].needed_bytes <= *r.budget_bytes) largest = i;
    if (largest)
      c.marks.push_back({*largest, s.points[*largest].totals.peak_bytes,
                         "largest that fits: " + c.x_ticks[*largest] + " (" + human_bytes(s.points[*largest].needed_bytes) +
                             (cuda(s) && !mp ? " on the device)" : ")"),
                         "#1a7f37"});
  }
  return report::render(c);
}

}  // namespace

std::string render_table(const Sweep& s, const ReportOptions& r) { return table(s, nullptr, r); }
std::string render_markdown(const Sweep& s, const ReportOptions& r) { return markdown(s, nullptr, r); }
std::string render_csv(const Sweep& s, const ReportOptions& r) { return rows(s, nullptr, r, true).csv(); }
std::string render_json(const Sweep& s, const ReportOptions& r, int indent) { return json(s, nullptr, r, indent); }
std::string render_sweep_svg(const Sweep& s, const ReportOptions& r) { return svg(s, nullptr, r); }
std::string render_table(const ModelParallelSweep& s, const ReportOptions& r) { return table(s.sweep, &s, r); }
std::string render_markdown(const ModelParallelSweep& s, const ReportOptions& r) { return markdown(s.sweep, &s, r); }
std::string render_csv(const ModelParallelSweep& s, const ReportOptions& r) { return rows(s.sweep, &s, r, true).csv(); }
std::string render_json(const ModelParallelSweep& s, const ReportOptions& r, int indent) { return json(s.sweep, &s, r, indent); }
std::string render_sweep_svg(const ModelParallelSweep& s, const ReportOptions& r) { return svg(s.sweep, &s, r); }

}  // namespace nnmem
