// Layers a version's CPU kernels cannot run with a 16-bit input: measured by
// validation/probe_autocast_113.py (validation/ops_saved_autocast.md), listed in the profile.
#include "cpu_kernels.hpp"

#include "nnmem/dtype.hpp"
#include "nnmem/profile.hpp"

namespace nnmem::detail {

std::optional<std::string> cpu_kernel_gap(std::string_view type, const LayerCall& call, const LayerResult& result) {
  const Context& ctx = call.ctx;
  if (ctx.device != Device::Cpu || call.inputs.empty()) return std::nullopt;
  const DType dtype = call.input().dtype;
  if (dtype != DType::BFloat16 && dtype != DType::Float16) return std::nullopt;
  // Where the layer computes in another dtype (a Softmax with `dtype: float32`), it runs.
  if (!result.outputs.empty() && result.outputs[0].dtype != dtype) return std::nullopt;
  const CpuKernelGap* gap = ctx.torch->cpu_kernel_gap(type, dtype);
  if (!gap) return std::nullopt;
  using When = CpuKernelGap::When;
  // The weights are float_dtype's (autocast keeps a layer it does not cast in its parameters' dtype).
  if (gap->when == When::BesideFloat32 && (result.params.empty() || ctx.float_dtype != DType::Float32)) return std::nullopt;
  if (gap->when == When::InBackward && !(call.training() && call.input_requires_grad())) return std::nullopt;

  const std::string name(dtype_name(dtype));
  const std::string op = "PyTorch " + std::string(ctx.torch->version) + "'s CPU " + std::string(gap->op);
  const std::string what = op + " " + gap->failure();
  // Where the 16-bit input comes from: autocast, the model's dtype (--dtype or the spec's), or a
  // cast in the spec.
  const std::string source = ctx.amp == dtype ? " --amp " + name : ctx.float_dtype == dtype ? " and a " + name + " model"
                                                                                             : " and a " + name + " input";
  const std::string instead = ctx.amp == dtype ? "no --amp" : ctx.float_dtype == dtype ? "a float32 model" : "a float32 input";
  std::string expected;
  for (const TorchProfile& other : torch_profiles())  // the versions whose kernel takes it
    if (!other.cpu_kernel_gap(type, dtype)) expected += "--torch " + std::string(other.version) + ", ";
  expected += "--device cuda";
  if (gap->when == When::InBackward) expected += ", --mode eval";
  return what + " (" + std::string(gap->error) + "); expected " + expected + " or " + instead + ", found --torch " +
         std::string(ctx.torch->version) + " --device cpu" + source;
}

}  // namespace nnmem::detail
