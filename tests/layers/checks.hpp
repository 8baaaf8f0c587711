// Small formatting helpers shared by the per-layer tests: they turn a LayerResult into short
// strings ("[2, 8, 30, 30]", "weight[8, 3, 3, 3] bias[8]", "input0 extra[1, 8, 3, 3]:int64") so a
// failing CHECK prints both sides readably.
#pragma once

#include <string>

#include "../helpers.hpp"

namespace nnmem::test {

/// Contexts for run_rule: training on the CPU (run_rule's default), on CUDA, and evaluation.
inline const Context kCpu{Mode::Train, Device::Cpu, DType::Float32, std::nullopt};
inline const Context kCuda{Mode::Train, Device::Cuda, DType::Float32, std::nullopt};
inline const Context kEval{Mode::Eval, Device::Cpu, DType::Float32, std::nullopt};
/// Training on the CPU with PyTorch 1.13's behaviour (--torch 1.13).
inline const Context kCpu113{Mode::Train, Device::Cpu, DType::Float32, std::nullopt, find_torch_profile("1.13")};

/// A step under CPU bfloat16 autocast (a float32 model) as PyTorch `version` runs it
/// (--torch VERSION --device cpu --amp bfloat16).
inline EstimateOptions cpu_bf16_autocast(const char* version, Mode mode = Mode::Train) {
  EstimateOptions o;
  o.graph = {.mode = mode, .device = Device::Cpu, .amp = DType::BFloat16, .torch = find_torch_profile(version)};
  return o;
}

/// What backward allocates beside the gradients: "extra[4, 16]:float32 extra[4, 16]:float32*"
/// (a trailing * marks scratch freed before the parameters' gradients exist).
inline std::string scratch_of(const std::vector<Scratch>& list) {
  std::string s;
  for (const auto& k : list) {  // piece by piece: GCC 12 warns a bogus -Wrestrict on `"" + string`
    if (!s.empty()) s += ' ';
    s += to_string(k.type.shape);
    s += ':';
    s += dtype_name(k.type.dtype);
    if (k.freed_before_param_grads) s += '*';
  }
  return s;
}

/// One layer's rule on one float32 CPU input in training: whether the input needs a gradient,
/// whether the layer trains.
inline LayerResult run_one(const std::string& yaml, const Shape& in, bool input_grad = true, bool trainable = true) {
  return run_rule(yaml, {tensor(in, input_grad)}, kCpu, trainable);
}

/// The message of the LayerError (or Error) run_rule raises in `ctx`, "" if none.
inline std::string rule_error_in(const Context& ctx, const std::string& layer_yaml, const std::vector<InputTensor>& inputs) {
  try {
    run_rule(layer_yaml, inputs, ctx);
  } catch (const LayerError& e) {
    return e.what();
  } catch (const Error& e) {
    return e.format();
  }
  return {};
}

/// The shape of output `i`: "[2, 8, 30, 30]".
inline std::string out_shape(const LayerResult& r, std::size_t i = 0) { return to_string(r.outputs.at(i).shape); }

/// "weight[8, 3, 3, 3] bias[8]"; "" without parameters.
inline std::string params_of(const LayerResult& r) {
  std::string s;
  for (const auto& p : r.params) s += (s.empty() ? "" : " ") + p.name + to_string(p.shape);
  return s;
}

inline std::int64_t param_count(const LayerResult& r) {
  std::int64_t n = 0;
  for (const auto& p : r.params) n += numel(p.shape);
  return n;
}

/// "running_mean[16]:float32 running_var[16]:float32 num_batches_tracked[]:int64".
inline std::string buffers_of(const LayerResult& r) {
  std::string s;
  for (const auto& b : r.buffers)
    s += (s.empty() ? "" : " ") + b.name + to_string(b.shape) + ":" + std::string(dtype_name(b.dtype));
  return s;
}

/// What backward keeps: "input0 output0 extra[1, 8, 3, 3]:int64"; "" when nothing.
// The activations a rule keeps; parameters it keeps are listed by kept_params (they cost
// nothing extra in full precision, only their autocast copies do).
inline std::string saved_of(const LayerResult& r) {
  std::string s;
  for (const auto& k : r.saved) {
    if (k.of == Saved::Of::Param) continue;
    s += s.empty() ? "" : " ";
    switch (k.of) {
      case Saved::Of::Input: s += "input" + std::to_string(k.index); break;
      case Saved::Of::Output: s += "output" + std::to_string(k.index); break;
      case Saved::Of::Extra: s += "extra" + to_string(k.type.shape) + ":" + std::string(dtype_name(k.type.dtype)); break;
      case Saved::Of::Param: break;
    }
  }
  return s;
}

inline std::string kept_params(const LayerResult& r) {
  std::string s;
  for (const auto& k : r.saved)
    if (k.of == Saved::Of::Param) s += (s.empty() ? "param" : " param") + std::to_string(k.index);
  return s;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace nnmem::test

/// CHECK that `text` contains `part`, printing the whole text when it does not.
#define CHECK_HAS(text, part) \
  CHECK_MESSAGE(::nnmem::test::contains((text), (part)), "\"" << (text) << "\" lacks \"" << (part) << "\"")
