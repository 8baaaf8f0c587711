// Renderers: an Estimate as a torchinfo-style table, as markdown, CSV or JSON (stable layout,
// docs/json.md), and the figures of other tools' conventions (torchsummary's) for comparison.
// They only format what estimate() computed and checked, so they cannot fail on a large model.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "nnmem/estimate.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem {

/// The JSON layout's version; bumped only when a field changes meaning or disappears.
inline constexpr int kJsonSchemaVersion = 1;

/// torchsummary's figures of an estimate (estimate() computes them; see TorchSummaryFigures).
inline const TorchSummaryFigures& torchsummary_figures(const Estimate& estimate) { return estimate.torchsummary; }

/// What an estimate's report shows.
struct ReportOptions {
  bool summary = false;                      // the answer and the memory breakdown, no layer rows
  int depth = 0;                             // > 0: layers folded into one row per name prefix of this many parts
  std::optional<std::int64_t> budget_bytes;  // a verdict: does the step fit in it
  bool timeline = true;                      // JSON: the allocation timeline
};

/// "training, cuda, float32, optimizer adam, loss cross_entropy": the step a set of options
/// describes (dtype and loss when they are given).
std::string describe_step(const EstimateOptions& options);
/// The answer in a line: the peak, where it happens and what the device holds.
std::string answer_line(const Estimate& estimate);
/// Whether the step fits in `budget_bytes` and by how much: "fits, with 138.00 MiB (13.5 %) to spare".
std::string verdict(const Estimate& estimate, std::int64_t budget_bytes);

/// The answer, the per-layer table and the memory breakdown, for a terminal.
std::string render_table(const Estimate& estimate, const ReportOptions& options = {});
/// The same as markdown (GitHub's tables).
std::string render_markdown(const Estimate& estimate, const ReportOptions& options = {});
/// One row per layer (or per folded block); with `summary`, one row per memory component.
std::string render_csv(const Estimate& estimate, const ReportOptions& options = {});
/// torchsummary's layer list and figures, with exact bytes and how they differ from nnmem's.
std::string render_torchsummary(const Estimate& estimate);
/// DeepSpeed's ZeRO-2 and ZeRO-3 model-state estimates as it prints them, their exact bytes, and
/// nnmem's own peak beside them.
std::string render_deepspeed(const Estimate& estimate, const DeepSpeedConvention& convention);
/// Megatron-LM's theoretical memory for a transformer shape and parallel setup, as it prints it,
/// with the bytes and Korthikanti et al.'s per-layer activations (modelled).
std::string render_megatron(const TransformerShape& shape, const MegatronSetup& setup);
/// "tensor parallel 2 × pipeline parallel 4 × data parallel 1; schedule 1f1b, 8 micro-batches a step (--grad-accum)".
std::string describe_model_parallel(const ModelParallelOptions& options, std::int64_t data_parallel, std::int64_t micro_batches);
/// Tensor and pipeline parallelism: each stage's rank per GPU, and the most loaded one's breakdown.
std::string render_table(const ModelParallelEstimate& estimate, const ReportOptions& options = {});
/// The same as JSON (docs/json.md, "model_parallel"), each stage's estimate in full.
std::string render_json(const ModelParallelEstimate& estimate, const ReportOptions& options = {}, int indent = 2);
/// `fit --tp/--pp`: the largest micro-batch per GPU, what the most loaded stage needs; the stages at it when asked for.
std::string render_table(const ModelParallelFit& fit, bool with_estimate = false);
/// The estimate at the answer's micro-batch (render_json's) with a "fit" object.
std::string render_json(const ModelParallelFit& fit, const ReportOptions& options = {}, int indent = 2);
/// `compare --tp/--pp`: a row per per-GPU figure of the most loaded stage, a column per spec or variant.
std::string render_table(const ModelParallelComparison& comparison);
/// The same as JSON: {"schema_version", "columns": [{"name", "model_parallel", "fit"?}]}.
std::string render_json(const ModelParallelComparison& comparison, int indent = 2);
/// The estimate as JSON (indent < 0: one line).
std::string render_json(const Estimate& estimate, const ReportOptions& options = {}, int indent = 2);
/// The same, written to `os` as it is made: the layers and the timeline, which grow with the
/// model, are never held as a JSON tree.
void write_json(std::ostream& os, const Estimate& estimate, const ReportOptions& options = {}, int indent = 2);

/// The step's memory over time as an SVG picture: stacked by kind, the phases shaded, the peak
/// marked with its phase and layer (and what the device holds, and the budget, as lines).
std::string render_timeline_svg(const Estimate& estimate, const ReportOptions& options = {});
/// The `top` layers that hold the most (parameters, gradients, what backward keeps) as an SVG bar chart.
std::string render_layers_svg(const Estimate& estimate, std::size_t top = 20);
/// The timeline as Chrome trace-event JSON (Perfetto, chrome://tracing): a counter per memory
/// kind, and spans for the phases and for each layer's run of events (one time unit per event).
std::string render_trace_json(const Estimate& estimate);

struct BatchFit;
/// The largest batch that fits a budget, and how the search found it; with `with_estimate`, the
/// estimate at that batch after it.
std::string render_table(const BatchFit& fit, bool with_estimate = false);
/// The same as JSON: {"schema_version", "fit": {...}, "estimate": {...} or null}.
std::string render_json(const BatchFit& fit, const ReportOptions& options = {}, int indent = 2);

struct Comparison;
/// Columns side by side, a row per figure, each column's difference from the first.
std::string render_table(const Comparison& comparison);
std::string render_markdown(const Comparison& comparison);
std::string render_csv(const Comparison& comparison);
std::string render_json(const Comparison& comparison, int indent = 2);

struct Sweep;
/// A sweep: every component at every point, then the fitted formula, its largest residual and the
/// batch it implies for `options.budget_bytes`.
std::string render_table(const Sweep& sweep, const ReportOptions& options = {});
std::string render_markdown(const Sweep& sweep, const ReportOptions& options = {});
std::string render_csv(const Sweep& sweep, const ReportOptions& options = {});
std::string render_json(const Sweep& sweep, const ReportOptions& options = {}, int indent = 2);
/// The peak's components stacked against the swept variable(s), the budget as a line, the largest
/// point that fits marked.
std::string render_sweep_svg(const Sweep& sweep, const ReportOptions& options = {});
/// `sweep --tp/--pp`: the same, each point the most loaded stage's rank per GPU (its stage and
/// micro-batches in flight as columns; JSON: a "model_parallel" object), labelled modelled.
std::string render_table(const ModelParallelSweep& sweep, const ReportOptions& options = {});
std::string render_markdown(const ModelParallelSweep& sweep, const ReportOptions& options = {});
std::string render_csv(const ModelParallelSweep& sweep, const ReportOptions& options = {});
std::string render_json(const ModelParallelSweep& sweep, const ReportOptions& options = {}, int indent = 2);
std::string render_sweep_svg(const ModelParallelSweep& sweep, const ReportOptions& options = {});

struct CheckpointSizes;
/// Checkpoint sizes: the totals first, then each file and its components.
std::string render_table(const CheckpointSizes& checkpoint);
std::string render_markdown(const CheckpointSizes& checkpoint);
std::string render_csv(const CheckpointSizes& checkpoint);
std::string render_json(const CheckpointSizes& checkpoint, int indent = 2);

struct SafetensorsFile;
struct TensorComparison;
/// A safetensors file's header: tensors, elements and bytes by dtype; with a comparison, its
/// differences from a spec's state_dict.
std::string render_table(const SafetensorsFile& file, const std::optional<TensorComparison>& against);
std::string render_json(const SafetensorsFile& file, const std::optional<TensorComparison>& against, int indent = 2);

}  // namespace nnmem
