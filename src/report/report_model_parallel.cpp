// Tensor and pipeline parallelism's report (docs/parallel.md): every stage's rank, per GPU, and
// the most loaded one's breakdown; the table and the JSON. Modelled figures, labelled so.
#include <array>
#include <functional>
#include <nlohmann/json.hpp>

#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {
namespace {

using nlohmann::ordered_json;
using Align = report::TextTable::Align;
using report::TextTable;

std::string setup_line(const ModelParallelEstimate& m) { return describe_model_parallel(m.options, m.data_parallel, m.micro_batches); }

std::string units_text(const PipelineStage& s) {
  if (s.units.empty()) return "";
  return s.units.size() == 1 ? s.units.front() : s.units.front() + " … " + s.units.back();
}

std::string roles_line(const ModelParallelEstimate& m) {
  std::array<int, 5> count{};
  for (const TpLayer& l : m.split) ++count[static_cast<std::size_t>(l.role)];
  std::string s;
  for (TpRole r : {TpRole::Column, TpRole::Row, TpRole::VocabEmbedding, TpRole::Experts, TpRole::Replicated})
    if (count[static_cast<std::size_t>(r)]) s += (s.empty() ? "" : ", ") + std::to_string(count[static_cast<std::size_t>(r)]) + " " + std::string(name_of(r));
  return "Layers with parameters: " + s + "\n";
}

std::string model_name(const ModelParallelEstimate& m) {
  const std::string& chunk = m.stages[m.most_loaded()].estimate.model;
  return chunk.substr(0, chunk.rfind(" chunk "));
}

}  // namespace

std::string describe_model_parallel(const ModelParallelOptions& o, std::int64_t data_parallel, std::int64_t micro_batches) {
  std::string s = "tensor parallel " + std::to_string(o.tp) + " × pipeline parallel " + std::to_string(o.pp) + " × data parallel " +
                  std::to_string(data_parallel);
  if (o.pp > 1) {
    s += "; schedule " + std::string(name_of(o.schedule));
    if (o.virtual_stages > 1) s += " with " + std::to_string(o.virtual_stages) + " virtual stages";
    s += ", " + std::to_string(micro_batches) + " micro-batch" + (micro_batches == 1 ? "" : "es") + " a step (--grad-accum)";
  }
  if (o.sequence_parallel) s += "; sequence parallel";
  return s;
}

std::string render_table(const ModelParallelEstimate& m, const ReportOptions& options) {
  const PipelineStage& worst = m.stages[m.most_loaded()];
  std::string out = model_name(m) + ": " + setup_line(m) + " — per GPU, modelled (no GPU cluster measured it)\n";
  out += "Most loaded: stage " + std::to_string(worst.index) + ", peak " + human_bytes_exact(worst.peak_bytes) + " per GPU\n";
  if (options.budget_bytes)
    out += "Budget " + human_bytes_exact(*options.budget_bytes) + ": " + (worst.peak_bytes <= *options.budget_bytes ? "fits" : "does not fit") + "\n";
  if (m.options.tp > 1) out += roles_line(m);
  out += '\n';
  TextTable t;
  t.column("Stage");
  t.column("Entries", Align::Left);
  t.column("Layers");
  t.column("Params/GPU");
  t.column("Params+grads+optim");
  t.column("Held/micro-batch");
  t.column("In flight");
  t.column("Peak/GPU");
  for (const PipelineStage& s : m.stages) {
    t.row({std::to_string(s.index), units_text(s), std::to_string(s.layers), with_commas(s.params), human_bytes(s.state_bytes),
           human_bytes(s.held_bytes), std::to_string(s.in_flight), human_bytes(s.peak_bytes)});
  }
  out += t.text();
  out += "\nStage " + std::to_string(worst.index) + ", one micro-batch's step simulated";
  if (m.options.virtual_stages > 1) out += " (its chunk with the most transient memory; the others' states add " +
                                           human_bytes(worst.persistent_bytes - worst.estimate.totals.persistent_bytes) + ")";
  const std::int64_t extra = worst.peak_bytes - worst.persistent_bytes - (worst.estimate.totals.peak_bytes - worst.estimate.totals.persistent_bytes);
  if (extra > 0) out += ", and " + human_bytes(extra) + " more for the other micro-batches' activations in flight";
  out += ":\n";
  ReportOptions summary = options;
  summary.summary = true;
  summary.budget_bytes.reset();
  out += render_table(worst.estimate, summary);
  return out;
}

std::string render_json(const ModelParallelEstimate& m, const ReportOptions& options, int indent) {
  ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  const ModelParallelOptions& o = m.options;
  ordered_json split = ordered_json::array();
  for (const TpLayer& l : m.split) split.push_back({{"name", l.name}, {"type", l.type}, {"role", name_of(l.role)}});
  ordered_json stages = ordered_json::array();
  for (const PipelineStage& s : m.stages)
    stages.push_back({{"index", s.index},
                      {"units", s.units},
                      {"layers", s.layers},
                      {"params", s.params},
                      {"state_bytes", s.state_bytes},
                      {"persistent_bytes", s.persistent_bytes},
                      {"in_flight", s.in_flight},
                      {"in_flight_chunks", s.in_flight_chunks},
                      {"held_bytes", s.held_bytes},
                      {"peak_bytes", s.peak_bytes},
                      {"estimate", ordered_json::parse(render_json(s.estimate, options, -1))}});
  j["model_parallel"] = {{"modelled", true},
                         {"tp", o.tp},
                         {"pp", o.pp},
                         {"dp", m.data_parallel},
                         {"schedule", name_of(o.schedule)},
                         {"virtual_stages", o.virtual_stages},
                         {"sequence_parallel", o.sequence_parallel},
                         {"micro_batches", m.micro_batches},
                         {"most_loaded", m.most_loaded()},
                         {"peak_bytes_per_gpu", m.stages[m.most_loaded()].peak_bytes},
                         {"split", split},
                         {"stages", stages}};
  return j.dump(indent);
}

std::string render_table(const ModelParallelFit& fit, bool with_estimate) {
  const ModelParallelEstimate& m = fit.estimate;
  const FitOptions& o = fit.options;
  const std::int64_t usable = o.budget_bytes - o.headroom_bytes;
  const std::string what = o.multiple_of > 1 ? "multiple of " + with_commas(o.multiple_of) : "micro-batch";
  std::string budget = human_bytes_exact(o.budget_bytes);
  if (o.headroom_bytes > 0) budget += " less " + human_bytes(o.headroom_bytes) + " headroom, " + human_bytes_exact(usable);
  std::string out = model_name(m) + ": " + setup_line(m) + " — per GPU, modelled (no GPU cluster measured it)\n";
  const std::string stage = " (stage " + std::to_string(m.stages[m.most_loaded()].index) + ", the most loaded)";
  if (fit.micro_batch == 0) {
    out += "No " + what + " per GPU fits in " + budget + ": micro-batch " + with_commas(o.multiple_of) + " needs " +
           human_bytes_exact(fit.needed_bytes) + stage + ", " + human_bytes(fit.needed_bytes - usable) + " over\n";
  } else {
    out += "Largest " + what + " per GPU that fits in " + budget + ": " + with_commas(fit.micro_batch) + "\n  it needs " +
           human_bytes_exact(fit.needed_bytes) + stage + ", " + human_bytes(usable - fit.needed_bytes) + " to spare\n";
    if (fit.next_needed_bytes > 0)
      out += "  micro-batch " + with_commas(fit.micro_batch + o.multiple_of) + " would need " + human_bytes_exact(fit.next_needed_bytes) +
             ", " + human_bytes(fit.next_needed_bytes - usable) + " over\n";
  }
  out += "Compared: the most loaded stage's peak of live tensors per GPU, the micro-batches in flight included\n";
  if (with_estimate) out += "\n" + render_table(m);
  return out;
}

std::string render_json(const ModelParallelFit& fit, const ReportOptions& options, int indent) {
  ordered_json j = ordered_json::parse(render_json(fit.estimate, options, -1));
  j["fit"] = {{"modelled", true},
              {"budget_bytes", fit.options.budget_bytes},
              {"headroom_bytes", fit.options.headroom_bytes},
              {"multiple_of", fit.options.multiple_of},
              {"micro_batch", fit.micro_batch},
              {"needed_bytes", fit.needed_bytes},
              {"next_needed_bytes", fit.next_needed_bytes}};
  return j.dump(indent);
}

std::string render_table(const ModelParallelComparison& c) {
  TextTable t;
  t.column("", Align::Left);
  for (const auto& col : c.columns) t.column(col.name);
  const auto row = [&](const std::string& label, const std::function<std::string(const ModelParallelComparison::Column&)>& cell) {
    std::vector<std::string> cells{label};
    for (const auto& col : c.columns) cells.push_back(cell(col));
    t.row(std::move(cells));
  };
  const auto worst = [](const ModelParallelComparison::Column& col) -> const PipelineStage& { return col.estimate.stages[col.estimate.most_loaded()]; };
  row("most loaded stage", [&](const auto& col) { return std::to_string(worst(col).index); });
  row("parameters per GPU (count)", [&](const auto& col) { return with_commas(worst(col).params); });
  row("params+grads+optim", [&](const auto& col) { return human_bytes(worst(col).state_bytes); });
  row("held per micro-batch", [&](const auto& col) { return human_bytes(worst(col).held_bytes); });
  row("micro-batches in flight", [&](const auto& col) { return std::to_string(worst(col).in_flight); });
  row("peak per GPU", [&](const auto& col) { return human_bytes(worst(col).peak_bytes); });
  if (c.budget_bytes)
    row("largest micro-batch in " + human_bytes(*c.budget_bytes), [](const auto& col) { return col.fit ? with_commas(col.fit->micro_batch) : ""; });
  return setup_line(c.columns.front().estimate) + " — per GPU, the most loaded stage's, modelled (no GPU cluster measured it)\n\n" + t.text();
}

std::string render_json(const ModelParallelComparison& c, int indent) {
  ordered_json columns = ordered_json::array();
  for (const auto& col : c.columns) {
    ordered_json j = {{"name", col.name}, {"model_parallel", ordered_json::parse(render_json(col.estimate, {}, -1))["model_parallel"]}};
    if (col.fit) j["fit"] = ordered_json::parse(render_json(*col.fit, {}, -1))["fit"];
    columns.push_back(std::move(j));
  }
  ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["budget_bytes"] = c.budget_bytes ? ordered_json(*c.budget_bytes) : ordered_json(nullptr);
  j["columns"] = std::move(columns);
  return j.dump(indent);
}

}  // namespace nnmem
