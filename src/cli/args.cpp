#include "args.hpp"

#include <iostream>
#include <iterator>

#include "cli_support.hpp"
#include "nnmem/hf_config.hpp"
#include "nnmem/ultralytics.hpp"
#include "nnmem/plan.hpp"

namespace nnmem::cli {

std::pair<std::string, std::string> assignment(const std::string& option, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw CLI::ValidationError(option, "expected NAME=VALUE, found '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char ch : text) {
    depth += ch == '[' ? 1 : ch == ']' ? -1 : 0;
    if (ch == ',' && depth == 0) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

ModelSpec load_spec(const std::string& path, const LoadOptions& options, const ImportChoice& choice) {
  static bool noted = false;  // once: a sweep loads the spec at every point
  const auto imported = [&](const std::string& text, const std::vector<std::string>& notes) {
    for (const auto& note : notes)
      if (!noted) std::cerr << "nnmem: note: " << path << ": " << note << '\n';
    noted = true;
    return parse_spec(text, path + " (imported)", options);
  };
  if (is_hf_config(path)) {
    if (!choice.scale.empty()) throw UsageError("--scale is for an Ultralytics model file, not a config.json");
    const ImportedSpec spec = import_hf_config(path, choice.architecture);
    return imported(spec.text, spec.notes);
  }
  if (!choice.architecture.empty()) throw UsageError("--architecture is for a Hugging Face config.json, not a spec");
  if (path != "-" && is_ultralytics_model(path)) {
    const ImportedUltralytics spec = import_ultralytics(path, choice.scale);
    return imported(spec.text, spec.notes);
  }
  if (!choice.scale.empty()) throw UsageError("--scale is for an Ultralytics model file (backbone and head), not a spec");
  if (path != "-") return load_spec_file(path, options);
  // Read once (a sweep loads the spec at every point), at most one byte past the limit: the
  // loader then refuses the text as too large.
  static const std::string text = [&] {
    std::string s;
    const auto limit = static_cast<std::size_t>(options.max_file_bytes) + 1;
    for (std::istreambuf_iterator<char> it(std::cin), end; it != end && s.size() < limit; ++it) s += *it;
    return s;
  }();
  return parse_spec(text, "<stdin>", options);
}

void LoadArgs::add_to(CLI::App& app) {
  app.add_option("--set", sets, "override a spec variable: NAME=VALUE (repeatable)");
  app.add_option("--input", inputs, "override an input's per-sample shape: NAME=[d1,d2,...] (repeatable)");
  app.add_option("--max-layers", max_layers, "refuse specs that expand to more layers than this")
      ->check(positive_integer())
      ->capture_default_str();
  app.add_option("--scale", import.scale, "an Ultralytics model file's scale (n, s, m, l, x), in place of its file name's");
  app.add_option("--architecture", import.architecture, "a Hugging Face config.json's model class, in place of its architectures[0] "
                                                 "(BertModel for a checkpoint saved as BertForMaskedLM)");
}

LoadOptions LoadArgs::options() const {
  LoadOptions o;
  o.max_layers = max_layers;
  for (const auto& s : sets) o.overrides.push_back(assignment("--set", s));
  for (const auto& s : inputs) o.input_shapes.push_back(assignment("--input", s));
  return o;
}

void SpecArgs::add_to(CLI::App& app) {
  app.add_option("SPEC", path, "the model spec (YAML), a Hugging Face config.json, or - for standard input")->required();
  load.add_to(app);
}

void StepArgs::add_to(CLI::App& app, bool with_batch) {
  if (with_batch)
    app.add_option("-b,--batch,--micro-batch", batch, "batch size: per forward pass (per micro-step, per GPU)")
        ->check(integer_between(1, kMaxBatch))
        ->capture_default_str();
  app.add_option("--mode", mode, "a training step, or inference (no gradients)")->check(one_of({"train", "eval"}))->capture_default_str();
  app.add_option("--device", device, "whose kernels' and allocator's conventions to follow")
      ->check(one_of({"cuda", "cpu"}))
      ->capture_default_str();
  app.add_option("--dtype", dtype, "parameters and activations dtype")
      ->check(one_of({"float32", "float16", "bfloat16", "float64"}))
      ->default_str("the spec's, else float32");
  app.add_option("--amp", amp, "mixed precision as torch.autocast runs it: float32 weights, these low-precision copies")
      ->check(one_of({"float16", "bfloat16"}))
      ->default_str("off");
  app.add_option("--optimizer", optimizer, "optimizer whose state and temporaries are counted")
      ->check(one_of({"none", "sgd", "momentum", "nesterov", "adam", "adamw", "amsgrad", "rmsprop", "adagrad", "adam8bit"}))
      ->capture_default_str();
  app.add_option("--loss", loss, "loss")
      ->check(one_of({"cross_entropy", "mse", "mean", "bce_with_logits", "nll", "l1", "smooth_l1", "huber"}))
      ->default_str("the spec's, else mean");
  app.add_option("--overhead", overhead, "framework overhead added on CUDA, e.g. 500MiB (the CUDA context)")->capture_default_str();
  app.add_flag("--keep-grads", keep_grads, "zero_grad(set_to_none=False): gradients persist between steps");
  app.add_flag("--foreach", foreach, "the optimizer's multi-tensor (foreach) implementation");
  app.add_flag("--fused", fused, "the optimizer's fused kernel (SGD, Adam, AdamW; on the CPU from torch 2.x)");
  app.add_option("--loop", loop, "plain: `for ...: out = model(x); loss = ...` (the previous step's out and loss live "
                                  "until rebound); function: a train_step() that returns loss.item()")
      ->check(one_of({"plain", "function"}))
      ->capture_default_str();
  app.add_flag("--rmsprop-momentum", rmsprop_momentum, "RMSprop with momentum > 0");
  app.add_flag("--rmsprop-centered", rmsprop_centered, "RMSprop with centered=True");
  torch.add_to(app);
  // The CUDA caching allocator's settings (PYTORCH_CUDA_ALLOC_CONF), for its simulation.
  app.add_option("--max-split-size", max_split_size_mib, "CUDA allocator: max_split_size_mb, in MiB (at least 20)")
      ->check(integer_between(20, std::numeric_limits<std::int64_t>::max() >> 20))
      ->default_str("no limit");
  app.add_option("--roundup-power2-divisions", roundup_power2_divisions,
                 "CUDA allocator: roundup_power2_divisions, for every size (a power of two; 0 or 1: off)")
      ->check(power_of_two_or_zero())
      ->capture_default_str();
  app.add_flag("--expandable-segments", expandable_segments, "CUDA allocator: expandable_segments:True");
  app.add_option("--device-memory", device_memory,
                 "CUDA: the device's memory, e.g. 24GiB; the allocator may reserve it less --overhead, and runs out "
                 "of memory (after releasing its cache) beyond that")
      ->default_str("no limit");
  scale.add_to(app);
  app.footer("CPU figures follow the chosen PyTorch version's memory behaviour, validated against it on the CPU "
             "(docs/accuracy.md); CUDA figures (the caching allocator) are modelled, not measured.\n");
}

void TorchArg::add_to(CLI::App& app, const std::string& help) {
  std::vector<std::string> versions;
  for (const TorchProfile& p : torch_profiles()) versions.emplace_back(p.version);
  app.add_option("--torch", version, help + ": " + torch_versions())->check(one_of(versions))->capture_default_str();
}

EstimateOptions StepArgs::options() const {
  EstimateOptions o;
  o.graph.batch = batch;
  o.graph.mode = mode == "eval" ? Mode::Eval : Mode::Train;
  o.graph.device = device == "cpu" ? Device::Cpu : Device::Cuda;
  if (!dtype.empty()) o.graph.float_dtype = parse_dtype(dtype);
  if (!amp.empty()) o.graph.amp = parse_dtype(amp);
  o.step.optimizer = *parse_optimizer(optimizer);
  o.step.rmsprop_momentum = rmsprop_momentum;
  o.step.rmsprop_centered = rmsprop_centered;
  if (!loss.empty()) o.step.loss = parse_loss(loss);
  o.step.keep_grads = keep_grads;
  o.step.foreach = foreach;
  o.step.fused = fused;
  o.step.loop = *parse_loop(loop);
  o.step.timeline = false;  // a command that reads it (estimate's JSON, --plot, --trace) asks for it
  o.graph.torch = &torch.profile();
  o.step.overhead_bytes = parse_size_option("--overhead", overhead);
  if (max_split_size_mib > 0) o.step.allocator.max_split_size = max_split_size_mib << 20;
  o.step.allocator.roundup_power2_divisions.fill(roundup_power2_divisions);
  o.step.allocator.expandable_segments = expandable_segments;
  if (!device_memory.empty()) {
    const std::int64_t total = parse_size_option("--device-memory", device_memory);
    if (total <= o.step.overhead_bytes)
      throw CLI::ValidationError("--device-memory", "expected more than --overhead (" + with_commas(o.step.overhead_bytes) +
                                                        " bytes), found '" + device_memory + "'");
    o.step.allocator.capacity_bytes = total - o.step.overhead_bytes;
  }
  scale.apply(o.step);
  if (o.graph.mode == Mode::Eval && (scale.zero || !scale.fsdp.empty()))
    throw CLI::ValidationError(scale.zero ? "--zero" : "--fsdp", "shards a training step; --mode eval estimates one device's inference: drop one of them");
  if (o.graph.mode == Mode::Eval && o.step.plan_parallel)
    throw CLI::ValidationError("--gpus", "data parallelism (--gpus " + std::to_string(scale.gpus) + ", --nodes " +
                                             std::to_string(scale.nodes) +
                                             ") trains; --mode eval estimates one device's inference: drop one of them");
  return o;
}

std::optional<std::int64_t> budget_option(const std::string& option, const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::int64_t bytes = parse_size_option(option, text);
  if (bytes < 1) throw CLI::ValidationError(option, "expected a size above zero, found '" + text + "'");
  return bytes;
}

}  // namespace nnmem::cli
