// Shared helpers for the unit tests: build a graph or an estimate from inline YAML or a file
// under the source tree, run a single layer, and capture the located error of a bad spec.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>

#include "nnmem/estimate.hpp"
#include "nnmem/graph.hpp"
#include "nnmem/report.hpp"
#include "nnmem/spec.hpp"

namespace nnmem::test {

constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB;

/// What a spec needs after its header: one input and one layer.
inline const std::string kTail = "inputs: {x: [8]}\nlayers:\n  - {type: ReLU}\n";

/// The located error that loading (not building) the spec raises, "" if none.
std::string load_error(const std::string& yaml, const LoadOptions& options = {});

/// An absolute path for a file of the source tree: "examples/resnet18.yaml".
std::string source_path(const std::string& relative);

/// The networks a validation list names (validation/peak_not_modelled.json,
/// eval_not_modelled.json: NETWORK, NETWORK@VERSION or NETWORK+AMP -> why), its "_about" aside.
std::set<std::string> listed_networks(const std::string& relative);

/// The optimizer the tests step an example ("examples/NAME.yaml") with: Adam, the CLI's default,
/// or plain SGD for one whose Embedding has a sparse gradient (`sparse: true`: PyTorch steps it
/// only with plain SGD, nnmem refuses the others; examples/bow_sparse.yaml).
OptimizerKind example_optimizer(const std::string& relative);

/// The spec of a validation network (validation/networks.py's name): examples/NAME.yaml, or the
/// spec and --set values validation/specs.json gives it (seed_conv_256, the Hugging Face models,
/// the small U-Nets and YOLOv8n).
ModelSpec validation_network(const std::string& name);
/// One run of a validation fixture (validation/fixtures/torch-VERSION/NETWORK.json's `runs`) as
/// estimate options: the version's profile, batch, optimizer and its implementation, zero_grad
/// mode, autocast, checkpointing, gradient accumulation, the loop and data parallelism.
EstimateOptions fixture_run_options(const std::string& version, const nlohmann::json& run);
/// CHECKs a run's measured figures other than the peak: parameters, buffers, gradients,
/// optimizer state, input, target and saved-for-backward bytes.
void check_measured_figures(const Totals& t, const nlohmann::json& run);

Graph graph_from(const std::string& yaml, const GraphOptions& options = {});
Estimate estimate_from(const std::string& yaml, const EstimateOptions& options = {});
Estimate estimate_file(const std::string& relative, const EstimateOptions& options = {});

/// The formatted error ("test.yaml:3:5: error: …") that loading and estimating the spec raises,
/// or "" if it succeeds. The file name in locations is "test.yaml".
std::string error_from(const std::string& yaml, const EstimateOptions& options = {});

/// A model whose single input has the given per-sample shape and whose only layer is
/// `layer_yaml` (a flow mapping such as "{type: Conv2d, out_channels: 8, kernel_size: 3}").
std::string one_layer_spec(const std::string& layer_yaml, const Shape& per_sample, const std::string& dtype = "float32");

/// The estimate of that one-layer model (training by default, on the CPU convention).
Estimate one_layer(const std::string& layer_yaml, const Shape& per_sample, std::int64_t batch = 1,
                   Mode mode = Mode::Train, Device device = Device::Cpu);

/// The located error of that one-layer model ("" if none).
std::string one_layer_error(const std::string& layer_yaml, const Shape& per_sample);

/// Runs a layer's rule directly on tensors (batch included) — for what the graph hides: which
/// inputs need gradients, the device convention. Rule errors escape as LayerError; attribute
/// errors as Error.
LayerResult run_rule(const std::string& layer_yaml, const std::vector<InputTensor>& inputs,
                     Context ctx = {Mode::Train, Device::Cpu, DType::Float32, std::nullopt, &default_torch_profile()}, bool trainable = true);

/// A float32 input tensor for run_rule.
InputTensor tensor(const Shape& shape, bool requires_grad = true, DType dtype = DType::Float32);

/// The message of the LayerError (or Error) that run_rule raises, "" if none.
std::string rule_error(const std::string& layer_yaml, const std::vector<InputTensor>& inputs);

}  // namespace nnmem::test
