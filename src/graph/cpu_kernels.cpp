// Layers a version's CPU kernels cannot run with a bfloat16 input: measured by
// validation/probe_autocast_113.py (validation/ops_saved_autocast.md), listed in the profile.
#include "cpu_kernels.hpp"

#include "nnmem/dtype.hpp"
#include "nnmem/profile.hpp"

namespace nnmem::detail {

std::optional<std::string> cpu_kernel_gap(std::string_view type, const LayerCall& call, const LayerResult& result) {
  const Context& ctx = call.ctx;
  if (ctx.device != Device::Cpu || call.inputs.empty() || call.input().dtype != DType::BFloat16) return std::nullopt;
  const CpuBfloat16Gap* gap = ctx.torch->cpu_bfloat16_gap(type);
  if (!gap) return std::nullopt;
  using When = CpuBfloat16Gap::When;
  // The weights are float_dtype's (autocast keeps a layer it does not cast in its parameters' dtype).
  if (gap->when == When::BesideFloat32 && (result.params.empty() || ctx.float_dtype != DType::Float32)) return std::nullopt;
  if (gap->when == When::InBackward && !(call.training() && call.input_requires_grad())) return std::nullopt;

  const std::string op = "PyTorch " + std::string(ctx.torch->version) + "'s CPU " + std::string(gap->op);
  const std::string what = gap->when == When::BesideFloat32 ? op + " refuses a bfloat16 input beside float32 weights"
                           : gap->when == When::InBackward
                               ? op + " has no bfloat16 kernel, so training through it fails in backward"
                               : op + " has no bfloat16 kernel";
  // Where the bfloat16 input comes from: autocast, the model's dtype (--dtype or the spec's), or a
  // cast in the spec.
  const std::string source = ctx.amp == DType::BFloat16          ? " --amp bfloat16"
                             : ctx.float_dtype == DType::BFloat16 ? " and a bfloat16 model"
                                                                  : " and a bfloat16 input";
  const std::string instead = ctx.amp == DType::BFloat16          ? "no --amp"
                              : ctx.float_dtype == DType::BFloat16 ? "a float32 model"
                                                                   : "a float32 input";
  std::string expected;
  for (const TorchProfile& other : torch_profiles())  // the versions whose kernel takes it
    if (!other.cpu_bfloat16_gap(type)) expected += "--torch " + std::string(other.version) + ", ";
  expected += "--device cuda";
  if (gap->when == When::InBackward) expected += ", --mode eval";
  return what + " (" + std::string(gap->error) + "); expected " + expected + " or " + instead + ", found --torch " +
         std::string(ctx.torch->version) + " --device cpu" + source;
}

}  // namespace nnmem::detail
