// Optimizer state and step temporaries, as torch.optim implements them (1.13 and 2.13; where
// they differ, the TorchProfile says which).
#include <algorithm>

#include "step.hpp"

namespace nnmem::detail {

namespace {
// bitsandbytes' Optimizer2State (blockwise): one float32 absmax per 256-element block for each
// state (older releases used 2,048-element blocks).
constexpr std::int64_t kBitsAndBytesBlock = 256;
constexpr std::int64_t kBitsAndBytesMinSize = 4096; // smaller tensors keep float32 state

std::int64_t total_bytes(const std::vector<StepTensor>& params) {
  std::int64_t sum = 0;
  for (const auto& p : params) sum = checked_add(sum, p.bytes());
  return sum;
}
}  // namespace

std::vector<StepTensor> trainable_tensors(const Graph& graph) {
  std::vector<StepTensor> out;
  out.reserve(graph.parameters.size());
  for (const Parameter& p : graph.parameters)
    if (p.trainable) out.push_back({p.numel, p.dtype});
  return out;
}

std::vector<OptimizerSlot> optimizer_slots(const StepOptions& options, Device device,
                                           const std::vector<StepTensor>& params) {
  const std::int64_t like_params = total_bytes(params);
  const auto count = static_cast<std::int64_t>(params.size());
  // Adam's and Adagrad's per-parameter `step` is a 0-dim float32 tensor on the CPU (not
  // capturable), so it costs no device memory on CUDA.
  const std::int64_t step_scalars = device == Device::Cpu ? checked_mul(count, 4) : 0;
  switch (options.optimizer) {
    case OptimizerKind::None:
    case OptimizerKind::Sgd:
      return {};
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov:
      return {{"momentum_buffer", like_params}};
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      return {{"exp_avg", like_params}, {"exp_avg_sq", like_params}, {"step", step_scalars}};
    case OptimizerKind::AMSGrad:
      return {{"exp_avg", like_params}, {"exp_avg_sq", like_params}, {"max_exp_avg_sq", like_params}, {"step", step_scalars}};
    case OptimizerKind::RMSprop: {
      std::vector<OptimizerSlot> slots = {{"square_avg", like_params}};  // its step is a Python int
      if (options.rmsprop_momentum) slots.push_back({"momentum_buffer", like_params});
      if (options.rmsprop_centered) slots.push_back({"grad_avg", like_params});
      return slots;
    }
    case OptimizerKind::Adagrad:
      return {{"sum", like_params}, {"step", step_scalars}};
    case OptimizerKind::Adam8bit: {
      // bitsandbytes Adam8bit: two uint8 states plus one float32 absmax per block and state;
      // tensors under 4096 elements keep float32 states; plus the two shared 256-entry qmaps.
      std::int64_t quantized = 0, absmax = 0;
      for (const auto& p : params) {
        const std::int64_t n = p.numel();
        if (n < kBitsAndBytesMinSize) {
          quantized = checked_add(quantized, checked_mul(n, 4));
        } else {
          quantized = checked_add(quantized, n);
          absmax = checked_add(absmax, checked_mul((n + kBitsAndBytesBlock - 1) / kBitsAndBytesBlock, 4));
        }
      }
      return {{"state1", quantized}, {"state2", quantized}, {"absmax", checked_mul(absmax, 2)}, {"qmap", 2 * 256 * 4}};
    }
  }
  return {};
}

void for_each_optimizer_state_tensor(const StepOptions& options, Device device, const std::vector<StepTensor>& params,
                                     const std::function<void(const OptimizerTensor&)>& f) {
  const auto add = [&](int param, const char* slot, std::int64_t bytes) { f({param, slot, bytes}); };
  const std::int64_t step_scalar = device == Device::Cpu ? 4 : 0;  // a CPU tensor on CUDA
  const OptimizerKind kind = options.optimizer;
  if (kind == OptimizerKind::Adam8bit) add(-1, "qmap", 256 * 4), add(-1, "qmap", 256 * 4);  // the two shared maps
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int p = static_cast<int>(i);
    const std::int64_t like = params[i].bytes();
    switch (kind) {
      case OptimizerKind::None:
      case OptimizerKind::Sgd:
        break;
      case OptimizerKind::Momentum:
      case OptimizerKind::Nesterov:
        add(p, "momentum_buffer", like);
        break;
      case OptimizerKind::Adam:
      case OptimizerKind::AdamW:
      case OptimizerKind::AMSGrad:  // torch.optim's _init_group: step, exp_avg, exp_avg_sq, ...
        add(p, "step", step_scalar), add(p, "exp_avg", like), add(p, "exp_avg_sq", like);
        if (kind == OptimizerKind::AMSGrad) add(p, "max_exp_avg_sq", like);
        break;
      case OptimizerKind::RMSprop:
        add(p, "square_avg", like);
        if (options.rmsprop_momentum) add(p, "momentum_buffer", like);
        if (options.rmsprop_centered) add(p, "grad_avg", like);
        break;
      case OptimizerKind::Adagrad:
        add(p, "step", step_scalar), add(p, "sum", like);
        break;
      case OptimizerKind::Adam8bit: {
        const std::int64_t n = params[i].numel();
        if (n < kBitsAndBytesMinSize) {
          add(p, "state1", checked_mul(n, 4)), add(p, "state2", checked_mul(n, 4));
        } else {
          const std::int64_t absmax = checked_mul((n + kBitsAndBytesBlock - 1) / kBitsAndBytesBlock, 4);
          add(p, "state1", n), add(p, "state2", n), add(p, "absmax", absmax), add(p, "absmax", absmax);
        }
        break;
      }
    }
  }
}

void simulate_optimizer_step(MemoryTracker& memory, const StepOptions& options, Device device,
                             const TorchProfile& torch, const std::vector<StepTensor>& params) {
  const OptimizerKind kind = options.optimizer;
  // Where in the step: "adam.step()", as the user's training loop calls it.
  memory.at(Phase::Optimizer, std::string(name_of(kind)) + ".step()");
  if (params.empty() || options.fused) return;  // one kernel per group updates everything in place
  const bool adam_like = kind == OptimizerKind::Adam || kind == OptimizerKind::AdamW || kind == OptimizerKind::AMSGrad;
  const bool rms_or_adagrad = kind == OptimizerKind::RMSprop || kind == OptimizerKind::Adagrad;
  if (!adam_like && !rms_or_adagrad && kind != OptimizerKind::Nesterov) return;  // in place only

  if (options.foreach && adam_like && torch.foreach_adam_one_list) {
    // torch._foreach_add_(state_steps, torch.tensor(1.0)) — a CPU tensor — then
    // exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs), divided and offset in place.
    if (device == Device::Cpu) memory.release(memory.alloc(MemoryKind::Transients, 4, "step increment"));
    std::vector<int> sqrt;
    for (const auto& p : params) sqrt.push_back(memory.alloc(MemoryKind::Transients, p.bytes(), "exp_avg_sq.sqrt()"));
    for (auto b = sqrt.rbegin(); b != sqrt.rend(); ++b) memory.release(*b);
    return;
  }
  if (options.foreach) {
    // Whole-model temporaries: Adam's sqrt(exp_avg_sq) and denom; RMSprop's avg; Adagrad's
    // sqrt(sum) and std; Nesterov's grad + momentum * buf.
    std::vector<int> first, second;
    for (const auto& p : params) first.push_back(memory.alloc(MemoryKind::Transients, p.bytes(), adam_like ? "exp_avg_sq.sqrt()" : "temporary"));
    if (adam_like || kind == OptimizerKind::Adagrad)
      for (const auto& p : params) second.push_back(memory.alloc(MemoryKind::Transients, p.bytes(), adam_like ? "denom" : "std"));
    for (int b : first) memory.release(b);
    for (int b : second) memory.release(b);
    return;
  }
  // One parameter at a time. Adam: denom = (exp_avg_sq.sqrt() / c).add_(eps) holds the sqrt and
  // the quotient at once, and the previous parameter's denom lives until `denom` is rebound.
  // RMSprop and Adagrad: one temporary, the previous one alive until rebound. Nesterov: one.
  int previous = -1;
  // On the CPU, `sqrt / bias_correction2_sqrt` also wraps the Python float in an 8-byte tensor.
  const std::int64_t wrapped_scalar = device == Device::Cpu ? 8 : 0;
  for (const auto& p : params) {
    const int sqrt = adam_like ? memory.alloc(MemoryKind::Transients, p.bytes(), "exp_avg_sq.sqrt()") : -1;
    const int scalar = adam_like ? memory.alloc(MemoryKind::Transients, wrapped_scalar, "wrapped scalar") : -1;
    const int temp = memory.alloc(MemoryKind::Transients, p.bytes(), adam_like ? "denom" : "temporary");
    if (sqrt >= 0) memory.release(scalar), memory.release(sqrt);
    if (previous >= 0) memory.release(previous);
    previous = temp;
    if (kind == OptimizerKind::Nesterov) {
      memory.release(temp);
      previous = -1;
    }
  }
  if (previous >= 0) memory.release(previous);
}

}  // namespace nnmem::detail
