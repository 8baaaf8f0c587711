// Renderers: an Estimate as a torchinfo-style table, as JSON (stable layout, docs/json.md), and
// the figures of other tools' conventions (torchsummary's) for comparison.
#pragma once

#include <cstdint>
#include <string>

#include "nnmem/estimate.hpp"

namespace nnmem {

/// The JSON layout's version; bumped only when a field changes meaning or disappears.
inline constexpr int kJsonSchemaVersion = 1;

/// torchsummary's four figures (torchsummary 1.5): 4 bytes per element whatever the dtype;
/// forward/backward = 2 × the outputs of every module with a forward hook (layers marked
/// `functional` have none); params = the parameters of those modules.
struct TorchSummaryFigures {
  std::int64_t input_bytes = 0;
  std::int64_t forward_backward_bytes = 0;
  std::int64_t params_bytes = 0;
  std::int64_t total_bytes = 0;
};
TorchSummaryFigures torchsummary_figures(const Estimate& estimate);

/// The per-layer table and the memory breakdown, for a terminal.
std::string render_table(const Estimate& estimate);
/// torchsummary's layer list and figures, with exact bytes and how they differ from nnmem's.
std::string render_torchsummary(const Estimate& estimate);
/// The estimate as JSON (indent < 0: one line).
std::string render_json(const Estimate& estimate, int indent = 2);

}  // namespace nnmem
