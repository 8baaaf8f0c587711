// Renderers: an Estimate as a torchinfo-style table, as JSON (stable layout, docs/json.md), and
// the figures of other tools' conventions (torchsummary's) for comparison. They only format
// what estimate() computed and checked, so they cannot fail on a large model.
#pragma once

#include <cstdint>
#include <string>

#include "nnmem/estimate.hpp"

namespace nnmem {

/// The JSON layout's version; bumped only when a field changes meaning or disappears.
inline constexpr int kJsonSchemaVersion = 1;

/// torchsummary's figures of an estimate (estimate() computes them; see TorchSummaryFigures).
inline const TorchSummaryFigures& torchsummary_figures(const Estimate& estimate) { return estimate.torchsummary; }

/// The per-layer table and the memory breakdown, for a terminal.
std::string render_table(const Estimate& estimate);
/// torchsummary's layer list and figures, with exact bytes and how they differ from nnmem's.
std::string render_torchsummary(const Estimate& estimate);
/// The estimate as JSON (indent < 0: one line).
std::string render_json(const Estimate& estimate, int indent = 2);

struct BatchFit;
/// The largest batch that fits a budget: a few lines, and the estimate at that batch.
std::string render_table(const BatchFit& fit);
/// The same as JSON: {"schema_version", "fit": {...}, "estimate": {...}}.
std::string render_json(const BatchFit& fit, int indent = 2);

}  // namespace nnmem
