#include "helpers.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "nnmem/parallel.hpp"
#include "nnmem/ultralytics.hpp"

namespace nnmem::test {

std::string source_path(const std::string& relative) { return std::string(NNMEM_SOURCE_DIR) + "/" + relative; }

OptimizerKind example_optimizer(const std::string& relative) {
  std::ifstream in(source_path(relative));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return text.find("sparse: true") == std::string::npos ? OptimizerKind::Adam : OptimizerKind::Sgd;
}

std::set<std::string> listed_networks(const std::string& relative) {
  std::set<std::string> names;
  const nlohmann::json listed = nlohmann::json::parse(std::ifstream(source_path(relative)));
  for (const auto& [name, why] : listed.items())
    if (name.front() != '_') names.insert(name);
  return names;
}

ModelSpec validation_network(const std::string& name) {
  // validation/specs.json: the networks whose spec is another file, or takes --set values
  static const nlohmann::json specs = nlohmann::json::parse(std::ifstream(source_path("validation/specs.json")));
  LoadOptions load;
  if (!specs.contains(name)) return load_spec_file(source_path("examples/" + name + ".yaml"), load);
  for (const auto& [variable, value] : specs[name]["set"].items()) load.overrides.emplace_back(variable, value.get<std::string>());
  const std::string file = specs[name]["spec"].get<std::string>();
  if (is_ultralytics_model(source_path(file)))  // Ultralytics' own model file (yolo11n), as the CLI reads it
    return parse_spec(import_ultralytics(source_path(file)).text, file, load);
  return load_spec_file(source_path(file), load);
}

// The run as estimate options: the fixture's torch version, batch, optimizer and its
// implementation, zero_grad mode, autocast, a 16-bit model, checkpointing, gradient accumulation and the loop.
// Every run is one nnmem can estimate.
EstimateOptions fixture_run_options(const std::string& version, const nlohmann::json& run) {
  EstimateOptions o;
  o.graph.torch = find_torch_profile(version);
  REQUIRE(o.graph.torch != nullptr);
  if (run.contains("amp") && !run["amp"].is_null()) o.graph.amp = parse_dtype(run["amp"].get<std::string>());
  if (run.contains("dtype")) o.graph.float_dtype = parse_dtype(run["dtype"].get<std::string>());  // a 16-bit model
  o.step.foreach = run.value("foreach", false);
  o.step.fused = run.value("fused", false);
  o.graph.batch = run["batch"];
  o.graph.device = Device::Cpu;
  o.step.optimizer = *parse_optimizer(run["optimizer"].get<std::string>());
  o.step.keep_grads = !run["set_to_none"].get<bool>();
  if (run.contains("checkpoint")) {
    REQUIRE(parse_checkpoint_segments(run["checkpoint"].get<std::string>(), o.step.checkpoint));
    o.step.checkpoint.impl = *parse_checkpoint_impl(run["checkpoint_impl"].get<std::string>());
  }
  o.step.grad_accum = run.value("grad_accum", 1);
  if (run.contains("loop")) o.step.loop = *parse_loop(run["loop"].get<std::string>());
  if (run.value("parallel", "") == "ddp") {  // one rank of measure_dist.py's processes on this machine
    ParallelOptions p;
    p.gpus = run["world_size"];
    if (run.contains("bucket_cap_mb")) p.bucket_cap_mb = run["bucket_cap_mb"].get<double>();
    o.step.plan_parallel = ddp_planner(p);
  } else if (run.contains("parallel")) {  // FSDP2's fully_shard on each unit, one rank's (rank 0's) step
    ParallelOptions p;
    p.gpus = run["world_size"];
    p.fsdp = run["parallel"] == "fsdp2-grad-op" ? FsdpStrategy::ShardGradOp : FsdpStrategy::Full;
    REQUIRE((run["parallel"] == "fsdp2" || run["parallel"] == "fsdp2-grad-op"));
    o.step.parallel = sharded_step(p);
    o.step.plan_parallel = parallel_planner(p);
  }
  return o;
}

void check_measured_figures(const Totals& t, const nlohmann::json& run) {
  CHECK(t.param_bytes == run["param_bytes"].get<std::int64_t>());
  CHECK(t.buffer_bytes == run["buffer_bytes"].get<std::int64_t>());
  CHECK(t.grad_bytes == run["grad_bytes"].get<std::int64_t>());
  CHECK(t.optimizer_state_bytes == run["optimizer_state_bytes"].get<std::int64_t>());
  CHECK(t.input_bytes == run["input_bytes"].get<std::int64_t>());
  CHECK(t.target_bytes == run["target_bytes"].get<std::int64_t>());
  CHECK(t.saved_bytes == run["saved_bytes"].get<std::int64_t>());
}

Graph graph_from(const std::string& yaml, const GraphOptions& options) {
  return build_graph(parse_spec(yaml, "test.yaml"), options);
}

Estimate estimate_from(const std::string& yaml, const EstimateOptions& options) {
  return estimate(parse_spec(yaml, "test.yaml"), options);
}

Estimate estimate_file(const std::string& relative, const EstimateOptions& options) {
  return estimate(load_spec_file(source_path(relative)), options);
}

std::string load_error(const std::string& yaml, const LoadOptions& options) {
  try {
    parse_spec(yaml, "test.yaml", options);
  } catch (const Error& e) {
    return e.format();
  }
  return {};
}

std::string error_from(const std::string& yaml, const EstimateOptions& options) {
  try {
    estimate_from(yaml, options);
  } catch (const Error& e) {
    return e.format();
  }
  return {};
}

std::string one_layer_spec(const std::string& layer_yaml, const Shape& per_sample, const std::string& dtype) {
  std::string shape = "[";
  for (std::size_t i = 0; i < per_sample.size(); ++i) shape += (i ? ", " : "") + std::to_string(per_sample[i]);
  shape += "]";
  return "inputs:\n  x: {shape: " + shape + ", dtype: " + dtype + "}\nlayers:\n  - " + layer_yaml + "\n";
}

Estimate one_layer(const std::string& layer_yaml, const Shape& per_sample, std::int64_t batch, Mode mode, Device device) {
  EstimateOptions options;
  options.graph.batch = batch;
  options.graph.mode = mode;
  options.graph.device = device;
  return estimate_from(one_layer_spec(layer_yaml, per_sample), options);
}

std::string one_layer_error(const std::string& layer_yaml, const Shape& per_sample) {
  return error_from(one_layer_spec(layer_yaml, per_sample));
}

LayerResult run_rule(const std::string& layer_yaml, const std::vector<InputTensor>& inputs, Context ctx, bool trainable) {
  const ModelSpec spec = parse_spec(one_layer_spec(layer_yaml, {1}), "test.yaml");
  const LayerSpec& layer = spec.layers.at(0);
  const LayerDef* def = find_layer(layer.type);
  REQUIRE_MESSAGE(def != nullptr, "unknown layer type " << layer.type);
  const Attrs attrs(def->attrs, layer);
  const LayerCall call{layer.name, attrs, inputs, ctx, trainable};
  return def->infer(call);
}

InputTensor tensor(const Shape& shape, bool requires_grad, DType dtype) { return {{shape, dtype}, requires_grad}; }

std::string rule_error(const std::string& layer_yaml, const std::vector<InputTensor>& inputs) {
  try {
    run_rule(layer_yaml, inputs);
  } catch (const LayerError& e) {
    return e.what();
  } catch (const Error& e) {
    return e.format();
  }
  return {};
}

}  // namespace nnmem::test
