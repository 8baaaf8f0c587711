// Activation checkpointing: which nodes form checkpointed segments (the spec's `checkpoint: true`
// entries, or --checkpoint blocks|every:K), what each reads from outside and returns, and where
// its backward recomputes it. The step simulation (simulate.cpp) uses the plan.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "memory_tracker.hpp"
#include "nnmem/estimate.hpp"

namespace nnmem::detail {

/// torch.get_rng_state(): the CPU generator's state as a uint8 tensor (mt19937's 624 words and
/// the rest of CPUGeneratorImplState), which checkpoint() stashes and fork_rng() saves. On CUDA
/// the device's state is a CPU tensor too, so it costs the device nothing.
inline constexpr std::int64_t kCpuRngStateBytes = 5056;

struct Segment {
  std::string name;              // "layer1.0"; for a group of entries "embed..blocks.1"
  SourceLoc loc;                 // the spec's `checkpoint` key, else the segment's first layer
  std::size_t first = 0, last = 0;  // its nodes, in execution order
  std::vector<int> inputs;       // values it reads from outside: what checkpoint() keeps
  std::vector<int> outputs;      // values it makes that a later layer reads or the model returns
  /// Its nodes that keep something for backward, in execution order: the last one's backward
  /// unpacks first (non-reentrant: the recomputation starts there), and once the first one has
  /// run, nothing refers to the checkpoint's frame any more. Empty: nothing to recompute.
  std::vector<std::size_t> keepers;
};

struct CheckpointPlan {
  CheckpointImpl impl = CheckpointImpl::NonReentrant;
  std::vector<Segment> segments;
  std::vector<int> segment_of;   // per node: its segment, or -1

  const Segment* of(std::size_t node) const {
    return segment_of.empty() || segment_of[node] < 0 ? nullptr : &segments[static_cast<std::size_t>(segment_of[node])];
  }
  /// How many of the segment's nodes read value v (what a recomputation must hold it for).
  static int reads_inside(const Graph& graph, const Segment& s, int v);
};

/// The checkpointed segments of a training step (none in evaluation). Throws a located Error for
/// a segment that nothing in needs a gradient (when the spec asked for it), for a reentrant
/// segment whose parameters would get no gradient, and for one whose first layer overwrites an
/// input in place.
CheckpointPlan plan_checkpoints(const Graph& graph, const RecomputeOptions& options);

/// The checkpoints' side of a simulated step (docs/memory-model.md, "Activation checkpointing"):
/// each segment's frame — the RNG state checkpoint() stashes and the inputs it keeps — and its
/// recomputation in backward. The simulator calls it at fixed points and lends it what only the
/// simulator can do: find the block behind a value, run a node's forward again.
class CheckpointRun {
 public:
  struct Simulator {
    std::function<int&(int value)> block_of;
    std::function<void(std::size_t node, bool stop)> recompute_node;  // stop: 2.x's early stop there
    std::function<void()> autocast_exit;  // the recomputation leaves its `with torch.autocast(...)`
  };
  CheckpointRun(const Graph& graph, const CheckpointPlan& plan, MemoryTracker& memory, Simulator simulator);

  // --- the loop around the step: what the reentrant implementation's autograd nodes hold (the
  // stashed RNG states) lives as long as the step's graph, until `loss` is rebound
  void previous_step(bool plain_loop);  // the previous step's, at the start of a plain loop
  void release_previous();              // as `loss` is rebound
  void release_graph();                 // this step's, as a train_step() returns
  /// The blocks the step's reentrant nodes hold (their stashed RNG states), which live on with
  /// the graph until the next step's `loss` is assigned.
  const std::vector<int>& graph_held() const { return graph_held_; }
  /// Gradient accumulation: another forward and backward; the last one's graph, in a plain
  /// loop, lives until `loss` is rebound.
  void next_micro_step(bool plain_loop);

  // --- forward
  void begin_segment(const Segment& s);  // before its first node
  void end_frame(const Segment& s);      // nothing refers to its frame any more
  /// How many reads of value v a recomputation holds it for (within the segment, and the
  /// result the segment's function returns).
  int reads(int v) const;
  /// A recomputation counts the reads it holds (reads < 0: one done), to drop those left.
  void held(int block, int reads);

  // --- backward; `grads`: value -> the block of its gradient
  void before_node(std::size_t node, std::map<int, int>& grads);  // it is about to run: recompute?
  /// 2.x, non-reentrant: the node's recomputed tensors are freed as its apply returns.
  bool hands_over(std::size_t node) const;
  void after_node(std::size_t node);     // it has released what it kept and its output's gradient
  /// The engine moves on to this node, or (backward_done) finishes: reentrant segments it has
  /// left return from their CheckpointFunctionBackward.
  void entering(std::size_t node, std::map<int, int>& grads);
  void backward_done(std::map<int, int>& grads);

 private:
  struct Frame {
    int rng = -1;               // the stashed RNG state (non-reentrant)
    std::vector<int> inputs;    // the inputs' blocks, held
    bool recomputed = false, finished = false;
    std::vector<int> returned;  // reentrant: the recomputed outputs, held by `outputs`
    std::vector<int> args;      // reentrant: the outputs' gradients, held by `args`
  };
  Frame& frame(const Segment& s) { return frames_[static_cast<std::size_t>(&s - plan_.segments.data())]; }
  void recompute(const Segment& s, bool full);
  void finish(const Segment& s, std::map<int, int>& grads);

  const Graph& graph_;
  const CheckpointPlan& plan_;
  MemoryTracker& memory_;
  Simulator sim_;
  std::int64_t rng_bytes_;
  bool reentrant_;
  std::vector<Frame> frames_;
  std::vector<int> graph_held_, previous_;  // RNG states the reentrant nodes hold
  const Segment* active_ = nullptr;          // being recomputed ...
  bool full_ = false;                        // ... to the end (no early stop)
  std::map<int, int> pending_;               // block -> reads the recomputation holds
};

}  // namespace nnmem::detail
