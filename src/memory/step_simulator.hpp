// The step simulator's state, shared by simulate.cpp (forward and backward, tensor by tensor)
// and simulate_loop.cpp (what lives across steps and micro-steps, and the loss). Private to the
// memory stage; simulate_step() (step.hpp) is its interface.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "recompute.hpp"
#include "sharding.hpp"
#include "step.hpp"

namespace nnmem::detail {

class StepSimulator {
 public:
  StepSimulator(const Graph& graph, const StepOptions& options, const std::vector<LossTerm>& losses,
                const CheckpointPlan& checkpoints, const ShardPlan& shards, Record record);

  StepResult run();

 private:
  const TensorValue& value(int v) const { return graph_.values[static_cast<std::size_t>(v)]; }
  int& block_of(int v) { return block_[static_cast<std::size_t>(value(v).storage)]; }
  bool is_output(int v) const { return returned_[static_cast<std::size_t>(v)]; }
  // A node is part of the autograd graph when it has something to differentiate.
  bool in_autograd(const Node& node) const {
    return std::any_of(node.outputs.begin(), node.outputs.end(), [&](int v) { return value(v).requires_grad; });
  }

  // --- the loop around the step (simulate_loop.cpp): what lives across steps and micro-steps
  int persist(MemoryKind kind, std::int64_t bytes, What what, Carry carry);
  std::vector<const Parameter*> trainable_params() const;
  void persistent(bool training);
  void next_micro_step(std::int64_t m);
  void mark_carried_out();

  // --- the loss (simulate_loss.cpp): its terms, their weights and sum, and their backward
  // One term of the loss as the step runs it.
  struct LossRun {
    LossTerm term;
    LossTensors tensors;
    std::vector<int> kept;  // blocks its backward keeps
    int weight = -1;        // the weight as a wrapped number, kept by MulBackward0
  };
  std::vector<LossRun> make_losses(const std::vector<LossTerm>& terms) const;
  DType term_dtype(const LossRun& run) const;
  DType total_dtype() const;
  std::int64_t total_bytes() const;
  void loss_forward();
  int loss_backward();

  // --- forward and backward (simulate.cpp)
  // How a node's forward runs: as usual; inside a checkpointed segment, keeping nothing (what
  // the op would keep is dropped, or never exists outside its call); or recomputed in backward,
  // where `stop` marks the node whose last save ends 2.x's early-stopping recomputation.
  enum class Pass { Forward, Checkpointed, Recompute };

  void forward_node(std::size_t i, Pass pass, bool stop = false);
  void hold_reads(int block, int reads);
  void drop_read(int block);
  void forward(bool training);
  void release_autocast_cache();

  // A layer's scratch tensors (layer.hpp): all allocated at once; those `now` says are
  // released again at once, the others returned for the caller to release later.
  template <typename Now>
  std::vector<int> scratch(const std::vector<Scratch>& tensors, const std::string& layer, Now now) {
    std::vector<int> blocks, later;
    for (const Scratch& s : tensors) blocks.push_back(memory_.alloc(MemoryKind::Transients, s.type.bytes(), {s.what, " of ", layer}));
    for (std::size_t k = 0; k < tensors.size(); ++k)
      now(tensors[k]) ? memory_.release(blocks[k]) : later.push_back(blocks[k]);
    return later;
  }

  int cast_back(int grad, std::int64_t bytes, What what);
  void accumulate(int v, int contribution, bool view = false);
  void add_into(int& existing, int contribution, std::int64_t whole, bool view = false);
  int param_gradient(int param, int contribution, bool view);
  void backward();
  void release_kept(std::size_t node);
  // What a backward program's events do to the node's gradients (backward()'s own steps).
  struct ProgramSteps {
    std::function<void(int)> input_grads;          // an input's gradient made
    std::function<void()> input_grads_out;         // those made so far go to their inputs
    std::function<void(std::size_t)> param_grad;   // a parameter's gradient made
    std::function<void()> hand_over;               // the parameters' gradients go to .grad
  };
  void run_program(std::size_t node, const ProgramSteps& steps, bool trainable);

  const Graph& graph_;
  const StepOptions& options_;
  std::vector<LossRun> losses_;
  std::vector<int> cached_copies_;          // autocast's cache of parameter copies
  MemoryTracker memory_;
  std::vector<int> block_;                  // graph storage -> live block
  std::vector<bool> returned_;              // value -> whether the model returns it
  /// (node, value): the values forward()'s code lets go of after that node, by node (then value)
  std::vector<std::pair<int, int>> unreferenced_after_;
  // By node (inline: most keep one or two): the blocks its backward keeps (-1: freed), and the
  // saved entry of each.
  std::vector<NodeIndices> kept_;
  std::vector<NodeIndices> kept_saved_;
  std::vector<int> previous_outputs_;
  int previous_loss_ = -1;
  int loss_block_ = -1;
  int divisor_ = -1;                        // gradient accumulation: K, kept by DivBackward0
  std::int64_t micro_ = 1;                  // which micro-step is simulated
  std::map<int, int> grad_;                 // value -> block holding its gradient
  std::set<int> view_grads_;                // values whose buffered gradient is a view of another tensor (LayerResult::input_grad_view)
  struct PendingGrad {
    int grad = -1;              // the sum so far
    int contributions = 0;
    bool view = false;          // it is the first contribution, a view of another tensor
  };
  std::map<int, PendingGrad> param_grads_;  // shared parameter -> its gradient, while uses are missing
  const CheckpointPlan& checkpoints_;
  CheckpointRun checkpoint_;
  ShardRun shard_;
};

}  // namespace nnmem::detail
