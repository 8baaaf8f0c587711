// `nnmem compare`: design variants side by side — a row per figure, a column per spec or
// variant, and after each column but the first its difference from the first, absolute and
// relative.
#include <cstdio>
#include <functional>

#include <nlohmann/json.hpp>

#include "nnmem/plan.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {

namespace {

using report::TextTable;

// A row: a figure of each column, in bytes or a count, or a text (where the peak happens).
struct Metric {
  std::string label, key;  // key: the JSON field
  bool bytes = true;
  std::function<std::optional<std::int64_t>(const Comparison::Column&)> value;
  std::function<std::string(const Comparison::Column&)> text = nullptr;
};

std::vector<Metric> metrics(const Comparison& c) {
  using Col = Comparison::Column;
  const auto total = [](std::int64_t Totals::*field) {
    return [field](const Col& col) -> std::optional<std::int64_t> { return col.estimate.totals.*field; };
  };
  std::vector<Metric> m = {
      {"batch", "batch", false, [](const Col& col) -> std::optional<std::int64_t> { return col.estimate.options.graph.batch; }},
      {"parameters (count)", "params", false, total(&Totals::params)},
      {"multiply-accumulates", "macs", false, total(&Totals::macs)},
      {"parameters", "param_bytes", true, total(&Totals::param_bytes)},
      {"buffers", "buffer_bytes", true, total(&Totals::buffer_bytes)},
      {"gradients", "grad_bytes", true, total(&Totals::grad_bytes)},
      {"optimizer state", "optimizer_state_bytes", true, total(&Totals::optimizer_state_bytes)},
      {"input", "input_bytes", true, total(&Totals::input_bytes)},
      {"forward activations", "activation_bytes", true, total(&Totals::activation_bytes)},
      {"saved for backward", "saved_bytes", true, total(&Totals::saved_bytes)},
      {"backward transients", "backward_transient_bytes", true, total(&Totals::backward_transient_bytes)},
      {"peak of the step", "peak_bytes", true, total(&Totals::peak_bytes)},
      {"peak at", "peak_at", false, nullptr,
       [](const Col& col) {
         const Totals& t = col.estimate.totals;
         return std::string(name_of(t.peak_phase)) + (t.peak_layer.empty() ? "" : " " + t.peak_layer);
       }},
  };
  if (!c.columns.empty() && c.columns.front().estimate.options.graph.device == Device::Cuda)
    m.push_back({"the device holds", "device_bytes", true, total(&Totals::device_bytes)});
  if (c.budget_bytes)
    m.push_back({"largest batch in " + human_bytes(*c.budget_bytes), "largest_batch", false, [](const Col& col) -> std::optional<std::int64_t> {
                   return col.fit ? std::optional(col.fit->batch) : std::nullopt;
                 }});
  return m;
}

std::string readable(const Metric& m, std::int64_t v) { return m.bytes ? human_bytes(v) : with_commas(v); }

std::string delta(const Metric& m, std::int64_t v, std::int64_t first) {
  const std::int64_t d = v - first;  // both below 2^63 and non-negative: no overflow
  if (d == 0) return "same";
  std::string s = d > 0 ? "+" : "";  // appended, not joined: a joined temporary trips GCC 12's bogus -Wrestrict
  s += readable(m, d);
  if (first != 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.1f %%)", 100.0 * static_cast<double>(d) / static_cast<double>(first));
    s += buf;
  }
  return s;
}

TextTable table(const Comparison& c, bool raw) {
  TextTable t;
  t.column("", TextTable::Align::Left);
  for (std::size_t i = 0; i < c.columns.size(); ++i) {
    t.column(c.columns[i].name);
    if (i > 0) t.column("vs " + c.columns[0].name);
  }
  for (const Metric& m : metrics(c)) {
    std::vector<std::string> row = {m.label};
    const auto first = m.value ? m.value(c.columns[0]) : std::nullopt;
    for (std::size_t i = 0; i < c.columns.size(); ++i) {
      if (m.text) {
        row.push_back(m.text(c.columns[i]));
        if (i > 0) row.push_back(m.text(c.columns[i]) == m.text(c.columns[0]) ? "same" : "differs");
        continue;
      }
      const auto v = m.value(c.columns[i]);
      row.push_back(!v ? "" : raw ? std::to_string(*v) : readable(m, *v));
      if (i > 0) row.push_back(!v || !first ? "" : raw ? std::to_string(*v - *first) : delta(m, *v, *first));
    }
    t.row(std::move(row));
  }
  return t;
}

std::string heading(const Comparison& c) {
  EstimateOptions o = c.columns.front().estimate.options;
  o.graph.float_dtype.reset();
  o.step.loss.reset();
  std::string files;
  for (const auto& col : c.columns)
    if (files.find(col.estimate.file) == std::string::npos) files += (files.empty() ? "" : ", ") + col.estimate.file;
  return "Comparing " + files + ": " + describe_step(o) + "\n";
}

}  // namespace

std::string render_table(const Comparison& c) { return heading(c) + "\n" + table(c, false).text(); }
std::string render_markdown(const Comparison& c) { return "- " + heading(c) + "\n" + table(c, false).markdown(); }
std::string render_csv(const Comparison& c) { return table(c, true).csv(); }

std::string render_json(const Comparison& c, int indent) {
  using nlohmann::ordered_json;
  ordered_json columns = ordered_json::array();
  const std::vector<Metric> ms = metrics(c);
  for (const auto& col : c.columns) {
    ordered_json values = ordered_json::object();
    for (const Metric& m : ms) {
      if (m.text) values[m.key] = m.text(col);
      else if (const auto v = m.value(col)) values[m.key] = *v;
    }
    ordered_json set = ordered_json::object(), input = ordered_json::object();
    for (const auto& [k, v] : col.estimate.set) set[k] = v;
    for (const auto& [k, v] : col.estimate.input_shapes) input[k] = v;
    columns.push_back({{"name", col.name}, {"file", col.estimate.file}, {"set", set}, {"input", input}, {"values", values}});
  }
  ordered_json deltas = ordered_json::array();
  for (std::size_t i = 1; i < c.columns.size(); ++i) {
    ordered_json values = ordered_json::object();
    for (const Metric& m : ms)
      if (m.value)
        if (const auto v = m.value(c.columns[i]), first = m.value(c.columns[0]); v && first) values[m.key] = *v - *first;
    deltas.push_back({{"name", c.columns[i].name}, {"against", c.columns[0].name}, {"values", values}});
  }
  return ordered_json{{"schema_version", kJsonSchemaVersion},
                      {"budget_bytes", c.budget_bytes ? ordered_json(*c.budget_bytes) : ordered_json(nullptr)},
                      {"columns", columns},
                      {"deltas", deltas}}
      .dump(indent);
}

}  // namespace nnmem
