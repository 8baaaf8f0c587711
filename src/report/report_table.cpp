// The report of an estimate for people: the answer first (the peak, where it happens, what the
// device holds, and a verdict against a budget), then a per-layer table in the spirit of
// torchinfo's summary() (optionally folded to a depth), then every component of a step's memory
// on its own row. The same rows render as a terminal table, markdown or CSV.
#include <algorithm>
#include <sstream>

#include "nnmem/checked.hpp"
#include "nnmem/plan.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {

namespace {

using report::TextTable;
using Align = TextTable::Align;

bool training(const Estimate& e) { return e.mode == Mode::Train; }
bool on_cuda(const Estimate& e) { return e.options.graph.device == Device::Cuda; }

// A layer's output shapes, space-separated. `readable` and longer than a column grows to
// (a Chunk's thousands of outputs): each run of equal shapes once, with its count ("[1, 2] x2,000").
std::string shapes(const std::vector<TensorType>& outputs, bool readable) {
  std::string s;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (i) s += ' ';  // appended piece by piece: a joined temporary trips GCC 12's bogus -Wrestrict
    s += to_string(outputs[i].shape);
  }
  if (!readable || s.size() <= TextTable::kWidest) return s;
  s.clear();
  for (std::size_t i = 0, j; i < outputs.size(); i = j) {
    const std::string shape = to_string(outputs[i].shape);
    for (j = i + 1; j < outputs.size() && to_string(outputs[j].shape) == shape; ++j) {}
    if (i) s += ' ';
    s += shape;
    if (j - i > 1) {
      s += " x";
      s += with_commas(static_cast<std::int64_t>(j - i));
    }
  }
  return s;
}

// The first `depth` dot-separated parts of a qualified name: "layer1.0" for "layer1.0.conv1".
std::string prefix(const std::string& name, int depth) {
  std::size_t end = 0;
  for (int d = 0; d < depth; ++d) {
    end = name.find('.', end == 0 ? 0 : end + 1);
    if (end == std::string::npos) return name;
  }
  return name.substr(0, end);
}

// One row per layer, or per run of consecutive layers whose names share a prefix of `depth`
// parts (a block instance): their parameters, MACs and kept bytes summed, the last one's output.
// `raw`: plain integers (CSV), else readable figures.
TextTable layer_table(const Estimate& e, int depth, bool raw) {
  TextTable t;
  t.column("Layer (type)", Align::Left);
  t.column("Output shape", Align::Left);
  t.column("Params");
  t.column("MACs");
  if (training(e)) t.column(raw ? "Saved bytes" : "Saved");
  std::vector<std::string> row;  // one row's cells, copied into the table: one vector for all rows
  for (std::size_t i = 0; i < e.layers.size();) {
    const std::string group = depth > 0 ? prefix(e.layers[i].name, depth) : e.layers[i].name;
    std::size_t j = i;
    std::int64_t params = 0, macs = 0, saved = 0;
    bool frozen = false;
    // Cannot overflow: estimate() checked these totals over all layers.
    for (; j < e.layers.size() && (j == i || (depth > 0 && prefix(e.layers[j].name, depth) == group)); ++j) {
      params += e.layers[j].params;
      macs += e.layers[j].macs;
      saved += e.layers[j].saved_bytes;
      frozen = frozen || (!e.layers[j].trainable && e.layers[j].params > 0);
    }
    std::string label = group;
    label += " (";
    label += j - i == 1 && group == e.layers[i].name ? e.layers[i].type : std::to_string(j - i) + " layers";
    label += ')';
    const auto figure = [&](std::int64_t v, std::string (*readable)(std::int64_t)) {
      return raw ? std::to_string(v) : v ? readable(v) : "--";
    };
    row.clear();
    row.push_back(std::move(label));
    row.push_back(shapes(e.layers[j - 1].outputs, !raw));
    row.push_back(raw || !params ? figure(params, nullptr) : with_commas(params) + (frozen ? "*" : ""));
    row.push_back(figure(macs, human_count));
    if (training(e)) row.push_back(figure(saved, human_bytes));
    t.row(row);
    i = j;
  }
  return t;
}

struct MemoryRow {
  std::string label;
  std::int64_t bytes;
  std::string note;
};

// What PyTorch's CUDA caching allocator does over the loop, by simulation (no GPU measured it).
void cuda_rows(std::vector<MemoryRow>& rows, const CudaAllocatorFigures& f, const Totals& t) {
  const std::string run = f.growing     ? "still growing after " + with_commas(f.iterations) +
                                             " iterations: the cache never settles with these settings, see --device-memory"
                         : !f.converged ? "still changing after " + with_commas(f.iterations) + " iterations"
                         : "steady from iteration " + std::to_string(f.steady_from) +
                               (f.period == 1 ? "" : ", in a cycle of " + std::to_string(f.period));
  rows.push_back({"CUDA max_memory_allocated(), modelled", t.max_allocated_bytes, "(blocks in use at once, rounded)"});
  const auto times = [](std::int64_t n) { return with_commas(n) + (n == 1 ? " time" : " times"); };
  const std::string retries =
      f.alloc_retries == 0 ? ""
                           : "; the cache released " + times(f.alloc_retries) + " to retry" +
                                 (f.converged && f.steady_alloc_retries > 0
                                      ? ", " + times(f.steady_alloc_retries) + " in every cycle"
                                      : "");
  rows.push_back({"CUDA max_memory_reserved(), modelled", t.reserved_bytes,
                  "(" + with_commas(f.segments) + (f.segments == 1 ? " segment" : " segments") +
                      (f.out_of_memory ? "" : "; " + run) + retries + ")"});
  if (f.out_of_memory) {
    const std::string when = f.oom_iteration == 0 ? "building the model" : "iteration " + std::to_string(f.oom_iteration);
    rows.push_back({"CUDA out of memory, modelled", f.oom_request_bytes,
                    "(the request that failed: " + when + ", " + std::string(name_of(f.oom_phase)) +
                        (f.oom_layer.empty() ? "" : ", " + f.oom_layer) + ")"});
  }
  rows.push_back({"framework overhead (--overhead)", t.overhead_bytes, ""});
  rows.push_back({"total on the device", t.device_bytes, ""});
}

// Every component of the step's memory, in the order a reader adds them up.
std::vector<MemoryRow> memory_rows(const Estimate& e) {
  const Totals& t = e.totals;
  const auto& o = e.options;
  const Sharding& sharding = o.step.parallel.sharding;
  const std::string shard = "this rank's shard of 1/" + std::to_string(sharding.group) + " (" + o.step.parallel.strategy + ", modelled)";
  std::vector<MemoryRow> rows = {{"parameters", t.param_bytes, sharding.parameters ? shard : ""}, {"buffers", t.buffer_bytes, ""}};
  if (training(e)) {
    rows.push_back({"gradients", t.grad_bytes,
                    o.step.keep_grads ? "kept between steps (--keep-grads)" : sharding.gradients ? shard : ""});
    if (!o.step.parallel.buffers.empty()) {
      std::int64_t buckets = 0;
      for (const auto& b : o.step.parallel.buffers) buckets = checked_add(buckets, b.bytes);
      rows.push_back({"gradient buckets (" + o.step.parallel.strategy + ")", buckets,
                      std::to_string(o.step.parallel.buffers.size()) + " bucket" + (o.step.parallel.buffers.size() == 1 ? "" : "s")});
    }
    rows.push_back({"optimizer state (" + std::string(name_of(o.step.optimizer)) + ")", t.optimizer_state_bytes,
                    sharding.offload_optimizer ? "offloaded to the CPU" : sharding.optimizer ? shard : ""});
    for (const auto& s : e.optimizer_slots) rows.push_back({"  " + s.name, s.bytes, ""});
    // Cannot overflow: estimate() checked the larger persistent_bytes, which includes both.
    rows.push_back({"weights + optimizer state", t.param_bytes + t.optimizer_state_bytes, ""});
  }
  rows.push_back({"input", t.input_bytes, ""});
  if (training(e)) rows.push_back({"target", t.target_bytes, ""});
  rows.push_back({"forward activations (all outputs)", t.activation_bytes, ""});
  if (training(e)) {
    rows.push_back({"saved for backward", t.saved_bytes, ""});
    rows.push_back({"backward transients (most at once)", t.backward_transient_bytes, "activation gradients in flight"});
  }
  const std::string where = std::string(name_of(t.peak_phase)) + (t.peak_layer.empty() ? "" : ", " + t.peak_layer) +
                            (e.options.step.grad_accum > 1 ? ", micro-step " + std::to_string(t.peak_micro_step) + " of " +
                                                                 std::to_string(e.options.step.grad_accum)
                                                           : "");
  rows.push_back({training(e) ? "peak of a training step" : "peak of a forward pass", t.peak_bytes, "(" + where + ")"});
  static const char* const labels[kMemoryKinds] = {"parameters",     "buffers",          "optimizer state",
                                                   "gradients",      "input + target",   "activations kept",
                                                   "autocast weight copies", "gradients of activations, temporaries",
                                                   "gradient buckets (DDP), reduce bucket (ZeRO)",
                                                   "all-gathered parameters (ZeRO-3, FSDP)"};
  for (std::size_t k = 0; k < kMemoryKinds; ++k)
    if (t.peak_breakdown[k] > 0) rows.push_back({std::string("  ") + labels[k], t.peak_breakdown[k], ""});
  if (e.cuda_allocator) cuda_rows(rows, *e.cuda_allocator, t);
  if (t.cpu_offload_bytes > 0)
    rows.push_back({"CPU memory per node (--offload)", t.cpu_offload_bytes,
                    "its " + std::to_string(o.step.parallel.world_size / o.step.parallel.nodes) + " ranks' offloaded state, modelled"});
  return rows;
}

TextTable memory_table(const Estimate& e) {
  TextTable t;
  t.column("Memory", Align::Left);
  t.column("bytes");
  t.column("size");
  t.column("", Align::Left);
  for (const auto& r : memory_rows(e)) t.row({r.label, with_commas(r.bytes), human_bytes(r.bytes), r.note});
  return t;
}

std::string title(const Estimate& e) { return e.model + ", batch " + with_commas(e.options.graph.batch); }

// "examples/resnet18.yaml: training, cuda, float32, optimizer adam, loss cross_entropy", with
// the resolved dtype and loss.
std::string estimated(const Estimate& e) {
  EstimateOptions o = e.options;
  o.graph.float_dtype = e.float_dtype;
  o.step.loss = e.loss;
  std::string s = e.file + ": " + describe_step(o);
  if (!e.checkpointed.empty())
    s += ", " + std::to_string(e.checkpointed.size()) + " checkpointed segment" + (e.checkpointed.size() == 1 ? "" : "s") +
         " (" + std::string(name_of(o.step.checkpoint.impl)) + ")";
  return s;
}

// The answer, and the verdict when there is a budget.
std::string headline(const Estimate& e, const ReportOptions& options, const std::string& bullet) {
  std::string s = bullet + title(e) + ": " + answer_line(e) + '\n';
  if (options.budget_bytes) s += bullet + verdict(e, *options.budget_bytes) + '\n';
  return s + bullet + estimated(e) + '\n';
}

std::string totals_lines(const Estimate& e, const std::string& bullet) {
  const Totals& t = e.totals;
  return bullet + "Total params: " + with_commas(t.params) + " (trainable " + with_commas(t.trainable_params) +
         ", frozen " + with_commas(t.non_trainable_params) + (t.non_trainable_params ? ", marked *" : "") + ")\n" + bullet +
         "Multiply-accumulates: " + with_commas(t.macs) + " (" + human_count(t.macs) + ")\n";
}

std::string percent(std::int64_t part, std::int64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

}  // namespace

std::string describe_step(const EstimateOptions& o) {
  const bool train = o.graph.mode == Mode::Train;
  std::string s = train ? "training" : "inference";
  s += o.graph.device == Device::Cuda ? ", cuda" : ", cpu";
  if (o.graph.float_dtype) s += ", " + std::string(dtype_name(*o.graph.float_dtype));
  if (o.graph.amp) s += " with " + std::string(dtype_name(*o.graph.amp)) + " autocast";
  if (train) s += ", optimizer " + std::string(name_of(o.step.optimizer));
  if (train && o.step.loss) s += ", loss " + std::string(name_of(*o.step.loss));
  if (train && o.step.loop == Loop::Function) s += ", each step a function returning loss.item()";
  if (train && !o.step.parallel.strategy.empty())
    s += ", per rank of " + std::to_string(o.step.parallel.world_size) + " (" + o.step.parallel.strategy +
         (o.step.parallel.nodes > 1 ? ", " + std::to_string(o.step.parallel.nodes) + " nodes" : "") + ")";
  if (train && o.step.grad_accum > 1) s += ", accumulating gradients over " + std::to_string(o.step.grad_accum) + " micro-steps";
  s += ", PyTorch " + std::string(o.graph.torch->version);
  return s;
}

std::string answer_line(const Estimate& e) {
  const Totals& t = e.totals;
  std::string s = "peak " + human_bytes_exact(t.peak_bytes) + " in " + std::string(name_of(t.peak_phase));
  if (!t.peak_layer.empty()) s += " at " + t.peak_layer;
  if (on_cuda(e)) s += "; the device holds " + human_bytes_exact(t.device_bytes) + " (modelled)";
  if (e.cuda_allocator && e.cuda_allocator->out_of_memory) s += ", and runs out of it (--device-memory)";
  return s;
}

std::string verdict(const Estimate& e, std::int64_t budget) {
  const std::int64_t need = needed_bytes(e);
  std::string s = "Budget " + human_bytes_exact(budget) + ": ";
  if (e.cuda_allocator && e.cuda_allocator->out_of_memory) return s + "does not fit, the step runs out of device memory";
  if (fits(e, budget)) return s + "fits, with " + human_bytes(budget - need) + " (" + percent(budget - need, budget) + ") to spare";
  return s + "does not fit, " + human_bytes(need - budget) + " (" + percent(need - budget, budget) + ") over";
}

// Sections are appended piece by piece: "\n" + a temporary trips GCC 12's bogus -Wrestrict.
std::string render_table(const Estimate& e, const ReportOptions& options) {
  std::string out = headline(e, options, "");
  if (!options.summary) {
    out += '\n';
    layer_table(e, options.depth, false).append_text(out);
  }
  out += '\n';
  out += totals_lines(e, "");
  out += '\n';
  out += memory_table(e).text();
  return out;
}

std::string render_markdown(const Estimate& e, const ReportOptions& options) {
  std::string out = "## " + title(e) + "\n\n";
  out += headline(e, options, "- ");
  out += '\n';
  if (!options.summary) {
    out += layer_table(e, options.depth, false).markdown();
    out += '\n';
  }
  out += totals_lines(e, "- ");
  out += '\n';
  out += memory_table(e).markdown();
  return out;
}

std::string render_csv(const Estimate& e, const ReportOptions& options) {
  if (!options.summary) return layer_table(e, options.depth, true).csv();
  // Indented rows are parts of the row above them: the optimizer's slots, the peak's make-up.
  TextTable t;
  t.column("component", Align::Left);
  t.column("part of", Align::Left);
  t.column("bytes");
  std::string whole;
  for (const auto& r : memory_rows(e)) {
    const bool part = r.label.rfind("  ", 0) == 0;
    if (!part) whole = r.label;
    t.row({part ? r.label.substr(2) : r.label, part ? whole : "", std::to_string(r.bytes)});
  }
  return t.csv();
}

}  // namespace nnmem
