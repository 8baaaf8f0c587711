// The step's memory over time, as pictures and as a trace: the timeline stacked by kind with
// the phases shaded and the peak marked (what PyTorch's memory snapshot viewer shows after a
// run), the layers that hold the most, and Chrome trace-event counters for Perfetto.
#include <algorithm>
#include <array>

#include "json_out.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "svg.hpp"

namespace nnmem {

namespace {

using report::StackedChart;

constexpr std::array<const char*, kMemoryKinds> kColors = {"#4e79a7", "#a0cbe8", "#f28e2b", "#e15759",
                                                          "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#ff9da7"};
constexpr std::array<const char*, kMemoryKinds> kLabels = {"parameters", "buffers", "optimizer state", "gradients",
                                                          "input + target", "activations kept", "autocast weight copies",
                                                          "activation gradients, temporaries", "gradient buckets (DDP)", "all-gathered parameters"};

// The timeline reduced to at most `columns` moments: each the moment of most memory among a run
// of consecutive events, so that no peak is lost. Per kind, the bytes live then.
struct Moment {
  std::size_t event;
  std::array<std::int64_t, kMemoryKinds> live{};
};

std::vector<Moment> moments(const Estimate& e, std::size_t columns) {
  const std::size_t n = e.timeline.size();
  const std::size_t per = std::max<std::size_t>(1, (n + columns - 1) / columns);
  std::vector<Moment> out;
  std::array<std::int64_t, kMemoryKinds> live{};
  Moment best{0, {}};
  std::int64_t best_total = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const TimelineEvent& ev = e.timeline[i];
    live[static_cast<std::size_t>(ev.kind)] += ev.delta;
    if (ev.live > best_total) best_total = ev.live, best = {i, live};
    if ((i + 1) % per == 0 || i + 1 == n) {
      out.push_back(best);
      best_total = -1;
    }
  }
  return out;
}

const char* phase_color(Phase p) { return p == Phase::Forward ? "#e8eef8" : p == Phase::Backward ? "#fbeee2" : "#efe8f8"; }

std::string step_words(const Estimate& e) {
  EstimateOptions o = e.options;
  o.graph.float_dtype = e.float_dtype;
  o.step.loss = e.loss;
  return e.model + ", batch " + with_commas(e.options.graph.batch) + ", " + describe_step(o);
}

}  // namespace

std::string render_timeline_svg(const Estimate& e, const ReportOptions& options) {
  const std::vector<Moment> ms = moments(e, 1200);
  StackedChart c;
  c.title = "Memory of one " + std::string(e.mode == Mode::Train ? "training step" : "forward pass") + ", allocation by allocation";
  c.subtitle = step_words(e) + "; " + with_commas(static_cast<std::int64_t>(e.timeline.size())) + " allocations and releases";
  c.x_label = "allocation events in the order the step makes them";
  c.points_as_steps = true;
  c.y_max = e.totals.peak_bytes;
  for (const Moment& m : ms) c.x_ticks.push_back(with_commas(static_cast<std::int64_t>(m.event)));
  for (std::size_t k = 0; k < kMemoryKinds; ++k) {
    StackedChart::Series s{kLabels[k], kColors[k], {}};
    for (const Moment& m : ms) s.values.push_back(m.live[k]);
    if (std::any_of(s.values.begin(), s.values.end(), [](std::int64_t v) { return v > 0; })) c.series.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < ms.size();) {
    const Phase p = e.timeline[ms[i].event].phase;
    std::size_t j = i;
    while (j + 1 < ms.size() && e.timeline[ms[j + 1].event].phase == p) ++j;
    c.bands.push_back({i, j, std::string(name_of(p)), phase_color(p)});
    i = j + 1;
  }
  const Totals& t = e.totals;
  const auto peak = std::find_if(ms.begin(), ms.end(), [&](const Moment& m) { return e.timeline[m.event].live == t.peak_bytes; });
  if (peak != ms.end())
    c.marks.push_back({static_cast<std::size_t>(peak - ms.begin()), t.peak_bytes,
                       "peak " + human_bytes(t.peak_bytes) + ": " + std::string(name_of(t.peak_phase)) +
                           (t.peak_layer.empty() ? "" : ", " + t.peak_layer),
                       "#c0392b"});
  if (e.options.graph.device == Device::Cuda)
    c.lines.push_back({t.device_bytes, "the device holds " + human_bytes(t.device_bytes), "#555555"});
  if (options.budget_bytes) c.lines.push_back({*options.budget_bytes, "budget " + human_bytes(*options.budget_bytes), "#1a7f37"});
  return report::render(c);
}

std::string render_layers_svg(const Estimate& e, std::size_t top) {
  struct Row {
    const LayerEstimate* layer;
    std::array<std::int64_t, 3> parts;  // parameters, their gradients, what backward keeps (or the output, in eval)
    std::int64_t total;
  };
  const bool training = e.mode == Mode::Train;
  std::vector<Row> rows;
  for (const auto& l : e.layers) {
    const std::int64_t grads = training && l.trainable ? l.param_bytes : 0;
    const std::array<std::int64_t, 3> parts = {l.param_bytes, grads, training ? l.saved_bytes : l.output_bytes};
    // Cannot overflow: estimate() checked each of these totals over all layers.
    rows.push_back({&l, parts, parts[0] + parts[1] + parts[2]});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.total > b.total; });
  rows.resize(std::min(rows.size(), top));
  const double left = 290, width = 620, bar = 22, gap = 8, head = 86;
  report::Svg svg(1100, head + static_cast<double>(rows.size()) * (bar + gap) + 40);
  svg.text(20, 28, "The " + std::to_string(rows.size()) + " layers that hold the most memory", 17, "start", "#111", true);
  svg.text(20, 48, step_words(e) + " (optimizer state, in proportion to parameters, not drawn)", 12, "start", "#555");
  const std::array<const char*, 3> names = {"parameters", "gradients", training ? "kept for backward" : "output"};
  const std::array<const char*, 3> colors = {kColors[0], kColors[3], kColors[5]};
  for (std::size_t k = 0; k < 3; ++k) {
    svg.rect(left + static_cast<double>(k) * 170, 58, 14, 14, colors[k], 0.85);
    svg.text(left + static_cast<double>(k) * 170 + 20, 70, names[k], 12);
  }
  const double most = rows.empty() ? 1 : static_cast<double>(std::max<std::int64_t>(rows.front().total, 1));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = head + static_cast<double>(i) * (bar + gap);
    svg.text(left - 10, y + bar * 0.7, rows[i].layer->name + " (" + rows[i].layer->type + ")", 12, "end");
    double x = left;
    for (std::size_t k = 0; k < 3; ++k) {
      const double w = static_cast<double>(rows[i].parts[k]) / most * width;
      svg.rect(x, y, w, bar, colors[k], 0.85);
      svg.title(std::string(names[k]) + ": " + human_bytes_exact(rows[i].parts[k]));
      x += w;
    }
    svg.text(x + 8, y + bar * 0.7, human_bytes(rows[i].total), 12, "start", "#333");
  }
  return svg.str();
}

// Written as ordered_json's dump() would write it, member by member: as a JSON tree, the trace
// of a 100,000-layer step (53 MB of text) took 820 MB and three seconds.
std::string render_trace_json(const Estimate& e) {
  std::string out;
  JsonOut j(out, -1, 0);
  const auto number = [&](std::string_view key, std::int64_t n) { j.key(key).value(n); };
  const auto text = [&](std::string_view key, std::string_view value) { j.key(key).value(value); };
  // An event's members up to its args: name, ph, [ts, [dur,]] pid, tid.
  const auto event = [&](std::string_view name, std::string_view ph, int tid, std::int64_t ts = -1, std::int64_t dur = -1) {
    j.item();
    j.begin('{');
    text("name", name);
    text("ph", ph);
    if (ts >= 0) number("ts", ts);
    if (dur >= 0) number("dur", dur);
    number("pid", 1);
    number("tid", tid);
    j.key("args").begin('{');
  };
  const auto done = [&] {
    j.end('}');  // args
    j.end('}');
  };
  j.begin('{');
  j.key("traceEvents").begin('[');
  const auto thread = [&](std::string_view name, int tid, const std::string& value) {
    event(name, "M", tid);
    text("name", value);
    done();
  };
  thread("process_name", 0, "nnmem: " + step_words(e));
  thread("thread_name", 1, "phases");
  thread("thread_name", 2, "layers");
  // Counters at most every event (100,000 moments at most: no peak lost), one track per kind.
  for (const Moment& m : moments(e, 100000)) {
    event("memory (bytes)", "C", 0, static_cast<std::int64_t>(m.event));
    for (std::size_t k = 0; k < kMemoryKinds; ++k) number(kLabels[k], m.live[k]);
    done();
  }
  // Spans: each phase, and each run of events one layer makes (timestamps count events, not time).
  const auto spans = [&](int tid, auto key) {
    for (std::size_t i = 0; i < e.timeline.size();) {
      std::size_t j_end = i;
      while (j_end + 1 < e.timeline.size() && key(e.timeline[j_end + 1]) == key(e.timeline[i])) ++j_end;
      const std::string name = key(e.timeline[i]);
      if (!name.empty()) {
        event(name, "X", tid, static_cast<std::int64_t>(i), static_cast<std::int64_t>(j_end - i + 1));
        number("live_bytes_after", e.timeline[j_end].live);
        done();
      }
      i = j_end + 1;
    }
  };
  spans(1, [](const TimelineEvent& ev) { return std::string(name_of(ev.phase)); });
  spans(2, [&](const TimelineEvent& ev) {
    const std::string_view layer = e.timeline.layer(ev);
    return layer.empty() ? std::string() : std::string(name_of(ev.phase)).append(" ").append(layer);
  });
  j.end(']');
  text("displayTimeUnit", "ns");
  j.key("otherData").begin('{');
  text("model", e.model);
  number("peak_bytes", e.totals.peak_bytes);
  text("time", "one unit per allocation event");
  j.end('}');
  j.end('}');
  return out;
}

}  // namespace nnmem
