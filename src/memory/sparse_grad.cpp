// Sparse gradients (Embedding's `sparse: true`) in the training step: the optimizers and loops
// that take them as nnmem models them, checked before the step is simulated. Measured by
// validation/probe_sparse_embedding.py (torch 2.13 and 1.13 alike, ops_saved_transformers.md).
#include <algorithm>

#include "step.hpp"

namespace nnmem::detail {

namespace {

// Why the optimizer cannot step a sparse gradient as nnmem models it ("" when it can).
std::string refusal(const StepOptions& options) {
  const std::string name(name_of(options.optimizer));
  switch (options.optimizer) {
    case OptimizerKind::None:
    case OptimizerKind::Sgd:
      return options.fused ? "fused SGD: it refuses sparse gradients (`_fused_sgd` does not support sparse gradients)" : "";
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov:
      return name + ": SGD adds the sparse gradient into its momentum buffer without coalescing it, so the buffer "
                    "grows by the ids of every step and no step is steady";
    case OptimizerKind::Adagrad:
      return name + ": Adagrad coalesces the sparse gradient in its step, which then depends on how many distinct ids "
                    "the batch holds (not modelled)";
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
    case OptimizerKind::AMSGrad:
    case OptimizerKind::RMSprop:
    case OptimizerKind::Adam8bit:
      return name + ": it refuses sparse gradients (torch.optim: \"does not support sparse gradients\"; torch.optim."
                    "SparseAdam is the Adam that takes them)";
  }
  return name;
}

}  // namespace

void check_sparse_gradients(const Graph& graph, const StepOptions& options) {
  for (const Parameter& p : graph.parameters) {
    if (p.sparse_rows == 0 || !p.trainable) continue;
    const Node& owner = graph.nodes[static_cast<std::size_t>(p.owner)];
    const LayerSpec& layer = graph.layer(owner);
    const std::string who = layer.title() + ": sparse: true (a sparse gradient of " + graph.param_name(p) + ")";
    if (const std::string why = refusal(options); !why.empty())
      throw Error(layer.loc, who + " with " + why + "; expected --optimizer sgd (no momentum, not fused) or none, found " +
                                 std::string(name_of(options.optimizer)) + (options.fused ? " (fused)" : ""));
    if (p.uses > 1)
      throw Error(layer.loc, who + ": the table is read by " + std::to_string(p.uses) + " layers, whose sparse "
                                 "gradients the engine concatenates (not modelled); expected 1 use, found " + std::to_string(p.uses));
    if (options.grad_accum > 1)
      throw Error(layer.loc, who + ": each micro-step concatenates its rows to .grad, which grows with every micro-step "
                                 "(not modelled); expected --grad-accum 1, found " + std::to_string(options.grad_accum));
    if (!options.parallel.strategy.empty())
      throw Error(layer.loc, who + ": data parallelism over sparse gradients is not modelled; expected one device, found " +
                                 options.parallel.strategy);
    const int ids = owner.inputs.front();
    if (std::find(graph.inputs.begin(), graph.inputs.end(), ids) == graph.inputs.end())
      throw Error(layer.loc, who + ": its indices view the ids, which it keeps alive; modelled for ids that are a model "
                                 "input; expected an input, found '" + graph.values[static_cast<std::size_t>(ids)].name + "'");
  }
}

}  // namespace nnmem::detail
