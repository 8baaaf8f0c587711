// The estimate as JSON. The layout is documented in docs/json.md; fields are only ever added
// (schema_version changes when one changes meaning or disappears).
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "json_out.hpp"
#include "nnmem/plan.hpp"
#include "nnmem/report.hpp"

namespace nnmem {

namespace {

using nlohmann::ordered_json;

ordered_json tensor(const TensorType& t) {
  return {{"shape", t.shape}, {"dtype", dtype_name(t.dtype)}, {"bytes", t.bytes()}};
}

ordered_json allocator_settings(const CudaAllocatorConfig& c) {
  return {
      {"max_split_size_bytes", c.max_split_size ? ordered_json(*c.max_split_size) : ordered_json(nullptr)},
      {"roundup_power2_divisions", c.roundup_power2_divisions},
      {"expandable_segments", c.expandable_segments},
      {"capacity_bytes", c.capacity_bytes},
  };
}

ordered_json parallel_settings(const DataParallelStep& p) {
  ordered_json buffers = ordered_json::array();
  for (const auto& b : p.buffers) buffers.push_back({{"what", b.what}, {"bytes", b.bytes}});
  ordered_json j = {{"strategy", p.strategy.empty() ? "single" : p.strategy},
                    {"world_size", p.world_size},
                    {"nodes", p.nodes},
                    {"bucket_cap_bytes", p.bucket_cap_bytes},
                    {"buffers", buffers}};
  if (!p.strategy.empty() && p.strategy != "ddp") {  // ZeRO, FSDP: what is sharded, over how many ranks (modelled)
    const Sharding& s = p.sharding;
    j["sharding"] = {{"optimizer_state", s.optimizer}, {"gradients", s.gradients}, {"parameters", s.parameters},
                     {"group", s.group}, {"reshard_after_forward", s.parameters && s.reshard_after_forward},
                     {"unit", s.per_layer ? "layer" : "top-level entry"},
                     {"offload_optimizer", s.offload_optimizer}, {"offload_params", s.offload_params},
                     {"modelled", true}};
  }
  return j;
}

ordered_json checkpoint_settings(const RecomputeOptions& c) {
  return {{"segments", checkpoint_segments_name(c)}, {"impl", name_of(c.impl)}};
}

ordered_json allocator_figures(const CudaAllocatorFigures& f) {
  ordered_json j = {
      {"reserved_bytes", f.reserved_bytes},
      {"max_reserved_bytes", f.max_reserved_bytes},
      {"max_allocated_bytes", f.max_allocated_bytes},
      {"small_pool_reserved_bytes", f.small_pool_reserved_bytes},
      {"segments", f.segments},
      {"alloc_retries", f.alloc_retries},
      {"steady_alloc_retries", f.steady_alloc_retries},
      {"iterations", f.iterations},
      {"converged", f.converged},
      {"steady_from_iteration", f.steady_from},
      {"period", f.period},
      {"growing", f.growing},
      {"out_of_memory", nullptr},
  };
  if (f.out_of_memory)
    j["out_of_memory"] = {{"request_bytes", f.oom_request_bytes},
                          {"iteration", f.oom_iteration},
                          {"phase", name_of(f.oom_phase)},
                          {"layer", f.oom_layer}};
  return j;
}

ordered_json value_json(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Bool: return v.boolean;
    case Value::Kind::Int: return v.integer;
    case Value::Kind::Float: return v.real;
    case Value::Kind::String: return v.text;
    case Value::Kind::List: {
      ordered_json items = ordered_json::array();
      for (const auto& item : v.items) items.push_back(value_json(item));
      return items;
    }
    case Value::Kind::Null:
    case Value::Kind::Map: break;
  }
  return nullptr;
}

ordered_json pairs(const std::vector<std::pair<std::string, std::string>>& list) {
  ordered_json j = ordered_json::object();
  for (const auto& [k, v] : list) j[k] = v;
  return j;
}

// Everything but the two arrays that grow with the model, which write_json streams in their
// places (their keys hold null here).
ordered_json head_json(const Estimate& e, const ReportOptions& options) {
  const auto& o = e.options;
  const Totals& t = e.totals;
  ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["model"] = {{"name", e.model}, {"file", e.file}};
  ordered_json variables = ordered_json::object();
  for (const auto& [name, value] : e.variables) variables[name] = value_json(value);
  j["load"] = {{"set", pairs(e.set)}, {"input", pairs(e.input_shapes)}, {"variables", variables}};
  j["options"] = {
      {"batch", o.graph.batch},
      {"mode", e.mode == Mode::Train ? "train" : "eval"},
      {"device", o.graph.device == Device::Cuda ? "cuda" : "cpu"},
      {"dtype", dtype_name(e.float_dtype)},
      {"amp", o.graph.amp ? nlohmann::ordered_json(dtype_name(*o.graph.amp)) : nlohmann::ordered_json(nullptr)},
      {"optimizer", name_of(o.step.optimizer)},
      {"loss", name_of(e.loss)},
      {"keep_grads", o.step.keep_grads},
      {"foreach", o.step.foreach},
      {"fused", o.step.fused},
      {"loop", name_of(o.step.loop)},
      {"grad_accum", o.step.grad_accum},
      {"checkpoint", checkpoint_settings(o.step.checkpoint)},
      {"parallel", parallel_settings(o.step.parallel)},
      {"overhead_bytes", o.step.overhead_bytes},
      {"torch", o.graph.torch->version},
      {"cuda_allocator", allocator_settings(o.step.allocator)},
  };
  j["inputs"] = ordered_json::array();
  for (const auto& in : e.inputs) {
    ordered_json x = tensor(in.type);
    x["name"] = in.name;
    j["inputs"].push_back(x);
  }
  j["layers"] = nullptr;  // streamed in its place (write_json)
  j["checkpointed"] = e.checkpointed;
  j["optimizer_state"] = ordered_json::array();
  for (const auto& s : e.optimizer_slots) j["optimizer_state"].push_back({{"slot", s.name}, {"bytes", s.bytes}});
  j["totals"] = {
      {"params", t.params},
      {"trainable_params", t.trainable_params},
      {"non_trainable_params", t.non_trainable_params},
      {"param_bytes", t.param_bytes},
      {"trainable_param_bytes", t.trainable_param_bytes},
      {"buffer_bytes", t.buffer_bytes},
      {"grad_bytes", t.grad_bytes},
      {"optimizer_state_bytes", t.optimizer_state_bytes},
      {"input_bytes", t.input_bytes},
      {"target_bytes", t.target_bytes},
      {"activation_bytes", t.activation_bytes},
      {"saved_bytes", t.saved_bytes},
      {"macs", t.macs},
      {"persistent_bytes", t.persistent_bytes},
      {"peak_bytes", t.peak_bytes},
      {"peak_phase", name_of(t.peak_phase)},
      {"peak_layer", t.peak_layer},
      {"peak_micro_step", t.peak_micro_step},
      {"backward_transient_bytes", t.backward_transient_bytes},
      {"reserved_bytes", t.reserved_bytes},
      {"max_allocated_bytes", t.max_allocated_bytes},
      {"overhead_bytes", t.overhead_bytes},
      {"device_bytes", t.device_bytes},
      {"cpu_offload_bytes_per_node", t.cpu_offload_bytes},
  };
  // What the memory live at the peak is made of (the values add up to peak_bytes).
  ordered_json breakdown = ordered_json::object();
  for (std::size_t k = 0; k < kMemoryKinds; ++k) breakdown[std::string(name_of(static_cast<MemoryKind>(k)))] = t.peak_breakdown[k];
  j["totals"]["peak_breakdown"] = breakdown;
  j["cuda_allocator"] = e.cuda_allocator ? allocator_figures(*e.cuda_allocator) : ordered_json(nullptr);
  const TorchSummaryFigures& ts = e.torchsummary;
  j["conventions"]["torchsummary"] = {
      {"input_bytes", ts.input_bytes},
      {"forward_backward_bytes", ts.forward_backward_bytes},
      {"params_bytes", ts.params_bytes},
      {"total_bytes", ts.total_bytes},
  };
  if (options.budget_bytes) {
    const std::int64_t need = needed_bytes(e);
    j["verdict"] = {{"budget_bytes", *options.budget_bytes}, {"needed_bytes", need}, {"fits", fits(e, *options.budget_bytes)}};
  }
  if (options.timeline) j["timeline"] = nullptr;  // streamed in its place
  return j;
}


void append_tensor(JsonOut& j, const TensorType& t) {  // as tensor() makes it
  j.begin('{');
  j.key("shape").begin('[');
  for (const std::int64_t d : t.shape) j.item(), j.value(d);
  j.end(']');
  j.key("dtype").value(dtype_name(t.dtype));
  j.key("bytes").value(t.bytes());
  j.end('}');
}

// The layers, one a layer of the model: each key made once (Members); the scalars between the
// name and the outputs, and after the outputs, copied in through one Pointer each.
class LayerWriter {
 public:
  LayerWriter(int indent, int depth)
      : indent_(indent), depth_(depth),
        keys_({"name", "type", "functional", "trainable", "outputs", "params", "trainable_params", "param_bytes",
               "buffer_bytes", "macs", "output_bytes", "saved_bytes"},
              indent, depth) {}

  void operator()(JsonOut& j, const LayerEstimate& l) const {
    std::string& out = j.text();
    out += keys_.key(0);
    append_string(out, l.name);
    out += keys_.key(1);
    append_string(out, l.type);
    Pointer(out, keys_.size() + 10) << keys_.key(2) << l.functional << keys_.key(3) << l.trainable << keys_.key(4);
    JsonOut outputs(out, indent_, depth_);
    outputs.begin('[');
    for (const auto& t : l.outputs) outputs.item(), append_tensor(outputs, t);
    outputs.end(']');
    Pointer(out, keys_.size() + 7 * Pointer::kIntBytes)
        << keys_.key(5) << l.params << keys_.key(6) << l.trainable_params << keys_.key(7) << l.param_bytes
        << keys_.key(8) << l.buffer_bytes << keys_.key(9) << l.macs << keys_.key(10) << l.output_bytes
        << keys_.key(11) << l.saved_bytes << keys_.close();
  }

 private:
  int indent_, depth_;
  Members keys_;
};

// The timeline's events, about twenty a layer: each key made once (Members), each layer name
// escaped once, each block's description looked at for escapes once (not at each of its two
// events), the phase's and kind's words escaped once, and the event copied in through one
// Pointer. With gradient accumulation, which micro-step.
class EventWriter {
 public:
  EventWriter(const Timeline& timeline, bool micro_step, int indent, int depth)
      : timeline_(timeline), micro_step_(micro_step),
        keys_({"phase", "layer", "tensor", "delta", "live", "kind", "block", "micro_step"}, indent, depth) {
    for (auto p = static_cast<int>(Phase::Forward); p <= static_cast<int>(Phase::Optimizer); ++p)
      phases_.push_back(json_quoted(name_of(static_cast<Phase>(p))));
    for (std::size_t k = 0; k < kMemoryKinds; ++k) kinds_.push_back(json_quoted(name_of(static_cast<MemoryKind>(k))));
    layers_.reserve(timeline.layers.size());
    for (const auto& name : timeline.layers) layers_.push_back(json_quoted(name));
    plain_.reserve(timeline.tensors.size());
    for (const auto& what : timeline.tensors) plain_.push_back(plain_string(what));
  }

  void operator()(JsonOut& j, const TimelineEvent& ev) {
    const std::string_view tensor = timeline_.tensor(ev);
    const bool plain = plain_[static_cast<std::size_t>(ev.block)];
    if (!plain) escaped_.clear(), append_string(escaped_, tensor);
    const std::string& phase = phases_[static_cast<std::size_t>(ev.phase)];
    const std::string& layer = layers_[ev.layer];
    const std::string& kind = kinds_[static_cast<std::size_t>(ev.kind)];
    Pointer p(j.text(), keys_.size() + phase.size() + layer.size() + (plain ? tensor.size() + 2 : escaped_.size()) +
                            kind.size() + 4 * Pointer::kIntBytes);
    p << keys_.key(0) << phase << keys_.key(1) << layer << keys_.key(2);
    if (plain) p << '"' << tensor << '"';
    else p << std::string_view(escaped_);
    p << keys_.key(3) << ev.delta << keys_.key(4) << ev.live << keys_.key(5) << kind << keys_.key(6)
      << std::int64_t{ev.block};
    if (micro_step_) p << keys_.key(7) << timeline_.micro_step(ev);
    p << keys_.close();
  }

 private:
  const Timeline& timeline_;
  const bool micro_step_;
  const Members keys_;
  std::vector<std::string> phases_, kinds_, layers_;  // escaped, quoted
  std::vector<bool> plain_;                           // by block: its description needs no escape
  std::string escaped_;                               // a description that does, escaped
};

// The estimate at `depth`: the head's members in order, the streamed arrays in their places.
void write_estimate(std::ostream& os, const Estimate& e, const ReportOptions& options, int indent, int depth) {
  const ordered_json head = head_json(e, options);
  const bool pretty = indent >= 0;
  const std::string pad = pretty ? std::string(static_cast<std::size_t>(indent * (depth + 1)), ' ') : "";
  os << '{';
  bool first = true;
  for (const auto& [key, value] : head.items()) {
    os << (first ? "" : ",") << (pretty ? "\n" : "") << pad << ordered_json(key).dump() << (pretty ? ": " : ":");
    // The arrays at depth + 1, their elements at depth + 2, the elements' members at depth + 3.
    if (key == "layers") {
      stream_array(os, e.layers, LayerWriter(indent, depth + 3), indent, depth + 1);
    } else if (key == "timeline") {
      const bool micro = e.options.step.grad_accum > 1;
      stream_array(os, e.timeline, EventWriter(e.timeline, micro, indent, depth + 3), indent, depth + 1);
    }
    else write_nested(os, value, indent, depth + 1);
    first = false;
  }
  if (pretty) os << '\n' << std::string(static_cast<std::size_t>(indent * depth), ' ');
  os << '}';
}
}  // namespace

void write_json(std::ostream& os, const Estimate& e, const ReportOptions& options, int indent) {
  write_estimate(os, e, options, indent, 0);
}

std::string render_json(const Estimate& e, const ReportOptions& options, int indent) {
  std::ostringstream os;
  write_json(os, e, options, indent);
  return os.str();
}

std::string render_json(const BatchFit& fit, const ReportOptions& options, int indent) {
  ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  const FitOptions& o = fit.options;
  j["fit"] = {
      {"budget_bytes", o.budget_bytes},
      {"headroom_bytes", o.headroom_bytes},
      {"usable_bytes", fit.usable_bytes()},
      {"multiple_of", o.multiple_of},
      {"compared", fit.estimate_options.graph.device == Device::Cuda ? "device_bytes" : "peak_bytes"},
      {"batch", fit.batch},
      {"needed_bytes", fit.needed_bytes},
      {"next_needed_bytes", fit.next_needed_bytes},
      {"next_out_of_memory", fit.next_out_of_memory},
      {"first_valid_batch", fit.first_valid_batch},
      {"smaller_batches_error", fit.smaller_batches_error.empty() ? ordered_json(nullptr) : ordered_json(fit.smaller_batches_error)},
      {"estimates_made", fit.estimates_made},
      {"search", {{"method", fit.closed_form ? "curve" : "estimates"},
                  {"probe_batch", fit.probe_batch},
                  {"curve_from", fit.curve_from},
                  {"bound_batch", fit.bound_batch},
                  {"batches_checked", fit.batches_checked},
                  {"checked_down_to", fit.checked_down_to},
                  {"exhaustive", fit.exhaustive()},
                  {"graphs_built", fit.graphs_built}}},
  };
  // The estimate is streamed in place of the null written here.
  j["estimate"] = nullptr;
  std::string text = j.dump(indent);
  if (!fit.estimate) return text;
  const std::size_t at = text.rfind("null");
  std::ostringstream os;
  os << text.substr(0, at);
  write_estimate(os, *fit.estimate, options, indent, 1);
  os << text.substr(at + 4);
  return os.str();
}

}  // namespace nnmem
