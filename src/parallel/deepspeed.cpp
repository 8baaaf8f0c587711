// DeepSpeed's model-state estimators, reproduced operation by operation: Python's int × int is
// exact, int / int and int × float are IEEE double operations (a true division of two integers
// is correctly rounded, as a double division of two exactly represented ones is), int() truncates.
// Every integer that enters a double is checked to be below 2^53, where the two agree.
#include <algorithm>

#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"
#include "python_float.hpp"

namespace nnmem {
namespace {

// float(n): n as a double, exactly.
double exact(std::int64_t n) { return detail::python_float(n, "--convention deepspeed", "DeepSpeed's"); }

// int(x) of a non-negative double.
std::int64_t truncate(double x) {
  if (!(x < 9.2e18)) throw SizeError(SourceLoc{}, "--convention deepspeed: a figure beyond 64 bits");
  return static_cast<std::int64_t>(x);
}

// total_params * max(a, b) with `a` an int and `b` a float: Python's max keeps `a` unless b > a,
// and the product is then an exact int, else a float.
double times_max(std::int64_t total, std::int64_t a, double b) {
  return b > exact(a) ? exact(total) * b : exact(checked_mul(total, a));
}

}  // namespace

std::string DeepSpeedFigure::options() const {
  // f'{OffloadDeviceEnum.cpu:4}' means "cpu" (Python 3.11 and later print the enum's
  // qualified name there, OffloadDeviceEnum.cpu).
  const auto device = [](bool cpu) { return std::string(cpu ? "cpu" : "none"); };
  if (stage == 2) return "offload_optimizer=" + device(offload_optimizer);
  return "offload_param=" + device(offload_param) + ", offload_optimizer=" + device(offload_optimizer) +
         ", zero_init=" + (zero_init ? "1" : "0");
}

DeepSpeedFigure deepspeed_zero2(std::int64_t total_params, std::int64_t gpus_per_node, std::int64_t nodes, bool cpu_offload,
                                double additional_buffer_factor) {
  const std::int64_t total_gpus = checked_mul(nodes, gpus_per_node);
  DeepSpeedFigure f;
  f.stage = 2;
  f.offload_optimizer = cpu_offload;
  double cpu = 0;
  if (cpu_offload) {
    f.gpu_bytes = checked_mul(2, total_params);
    cpu = exact(checked_mul(total_params, std::max<std::int64_t>(checked_mul(4, total_gpus), 16))) * additional_buffer_factor;
  } else {
    // 2 bytes of fp16 parameters, and 18 sharded: fp16 and fp32 gradients, fp32 parameters, Adam's two states.
    f.gpu_bytes = checked_add(checked_mul(2, total_params), truncate(exact(checked_mul(18, total_params)) / exact(total_gpus)));
    cpu = exact(checked_mul(checked_mul(total_params, 4), gpus_per_node)) * additional_buffer_factor;
  }
  f.cpu_bytes = truncate(cpu);
  return f;
}

DeepSpeedFigure deepspeed_zero3(std::int64_t total_params, std::int64_t largest_layer_params, std::int64_t gpus_per_node,
                                std::int64_t nodes, bool cpu_offload, bool cpu_offload_params, bool zero_init,
                                double additional_buffer_factor) {
  const std::int64_t total_gpus = checked_mul(nodes, gpus_per_node);
  const double gpus_factor = 1.0 / exact(nodes);
  const std::int64_t largest_layer_memory = checked_mul(4, largest_layer_params);
  DeepSpeedFigure f;
  f.stage = 3;
  f.offload_optimizer = cpu_offload;
  f.offload_param = cpu_offload && cpu_offload_params;
  f.zero_init = zero_init;
  const std::int64_t four_per_node = checked_mul(4, gpus_per_node);
  double cpu = 0;
  if (cpu_offload && cpu_offload_params) {
    f.gpu_bytes = largest_layer_memory;
    cpu = zero_init ? exact(checked_mul(total_params, 18)) * gpus_factor * additional_buffer_factor
                    : times_max(total_params, four_per_node, 18 * gpus_factor) * additional_buffer_factor;
  } else if (cpu_offload) {
    f.gpu_bytes = checked_add(largest_layer_memory, truncate(exact(checked_mul(2, total_params)) / exact(total_gpus)));
    cpu = zero_init ? exact(checked_mul(total_params, 16)) * gpus_factor * additional_buffer_factor
                    : times_max(total_params, four_per_node, 16 * gpus_factor) * additional_buffer_factor;
  } else {
    f.gpu_bytes = checked_add(largest_layer_memory, truncate(exact(checked_mul(18, total_params)) / exact(total_gpus)));
    cpu = zero_init ? exact(checked_mul(checked_mul(largest_layer_params, 4), gpus_per_node)) * additional_buffer_factor
                    : exact(checked_mul(checked_mul(total_params, 4), gpus_per_node)) * additional_buffer_factor;
  }
  f.cpu_bytes = truncate(cpu);
  return f;
}

DeepSpeedConvention deepspeed_convention(const Estimate& estimate, const ParallelOptions& options) {
  DeepSpeedConvention c;
  c.total_params = estimate.totals.params;
  for (const LayerEstimate& l : estimate.layers) c.largest_layer_params = std::max(c.largest_layer_params, l.params);
  c.gpus_per_node = options.gpus;
  c.nodes = options.nodes;
  // The order of the *_all_cold tables: offload first.
  for (bool offload : {true, false}) c.figures.push_back(deepspeed_zero2(c.total_params, c.gpus_per_node, c.nodes, offload));
  for (bool offload : {true, false})
    for (bool offload_params : {true, false}) {
      if (!offload && offload_params) continue;
      for (bool zero_init : {true, false})
        c.figures.push_back(
            deepspeed_zero3(c.total_params, c.largest_layer_params, c.gpus_per_node, c.nodes, offload, offload_params, zero_init));
    }
  return c;
}

}  // namespace nnmem
