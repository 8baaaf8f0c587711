// The training loop around the simulated step, replayed through PyTorch's CUDA caching
// allocator (cuda_allocator.hpp). The step simulation gives the steady step's events; each
// block carries a mark saying what it is to the loop (memory_tracker.hpp's Carry). From them:
//
//   build      parameters and buffers (Model), then the input and target (Batch); Adagrad's
//              state too, which the optimizer's constructor makes;
//   iteration 1  the step's events, except that nothing of a previous step exists (its output,
//              loss and gradients are skipped, with their releases), the optimizer's state is
//              created at the start of step() (as _init_group does, before any temporary),
//              and with --keep-grads a new gradient becomes .grad instead of being added into
//              it and freed (AccumulateGrad steals it when .grad is None); a step that only ever
//              adds into kept gradient shards (--keep-grads under ZeRO or FSDP) has them made
//              where its backward ends, for the iterations after it to find;
//   iteration n  the step's events as they are, the previous step's output, loss and gradients
//              being the blocks iteration n-1 left (its Output, Loss and Grad blocks, matched by
//              size). Inference is one forward pass after another, each output dropped once
//              it is made (as peak_bytes assumes).
//
// Iterations repeat until the allocator's state after one equals its state after an earlier
// one: from then on the iterations in between repeat for ever. That is usually a cycle of two,
// not one: `out`, `loss` and the gradients are allocated while the previous step's are still
// live, so they alternate between two places. max_memory_allocated() and
// max_memory_reserved() are over the whole run, as PyTorch reports them. Cycles can be long
// (hundreds of iterations on a small network); the replay gives up (converged: false) after
// 4,000 iterations (GPT-2 at batch 2 under --zero 2 repeats from iteration 487 in a cycle of
// 714), or 20 million events replayed in all.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <stdexcept>
#include <string>
#include <utility>

#include "allocator_state.hpp"
#include "cuda_allocator.hpp"
#include "step.hpp"

namespace nnmem::detail {

namespace {

constexpr int kMaxIterations = 4000;  // the first, then steady ones ...
constexpr std::size_t kMaxEvents = 20'000'000;  // ... and no more events than this in all

class Replay {
 public:
  Replay(const ReplayScript& script, const Texts& layers, const AllocationTrace& trace,
         const BlockSizes& block_bytes, const StepOptions& options, std::int64_t give_up_above)
      : script_(script), layers_(layers), trace_(trace), bytes_(block_bytes), allocator_(options.allocator),
        give_up_above_(give_up_above), handle_(block_bytes.size(), -1) {
    if (block_bytes.size() > Held::kMaxBlocks)
      throw std::length_error("the step's " + std::to_string(block_bytes.size()) + " tensors are more than the CUDA allocator replay's " +
                              std::to_string(Held::kMaxBlocks));
    // Handles in use at once: no more than the step's blocks (800,000 of 2,000,000 for 100,000
    // Linear layers under Adam), and the allocator's free blocks lie between them.
    allocator_.reserve(block_bytes.size());
    held_.reserve(block_bytes.size());
  }

  CudaAllocatorFigures run() {
    CudaAllocatorFigures f;
    f.converged = false;
    bool ok = build() && !given_up_;
    // The state after each iteration: once one repeats, the iterations since cycle for ever.
    std::map<StateHash, int> after;  // state -> the iteration that left it
    std::vector<std::int64_t> retries_after, reserved_after;  // after each iteration
    const std::size_t per_iteration = std::max<std::size_t>(script_.steps.size(), 1);
    while (ok && !f.converged && f.iterations < kMaxIterations &&
           (f.iterations + 1) * per_iteration <= std::max(kMaxEvents, 2 * per_iteration)) {
      ++f.iterations;
      ok = iteration(f.iterations == 1);
      if (!ok || given_up_) break;
      const auto [seen, fresh] = after.emplace(state_hash(), f.iterations);
      if (!fresh) {
        f.converged = true;
        f.steady_from = seen->second + 1;  // the iteration after the one that left this state
        f.period = f.iterations - seen->second;
        f.steady_alloc_retries = allocator_.alloc_retries() - retries_after[static_cast<std::size_t>(seen->second - 1)];
      }
      retries_after.push_back(allocator_.alloc_retries());
      reserved_after.push_back(allocator_.reserved());
    }
    // Unsettled, and still taking more segments in the second half of the run?
    f.growing = ok && !f.converged && reserved_after.size() >= 2 &&
                reserved_after.back() > reserved_after[reserved_after.size() / 2 - 1];
    f.reserved_bytes = allocator_.reserved();
    f.max_reserved_bytes = allocator_.max_reserved();
    f.max_allocated_bytes = allocator_.max_allocated();
    f.small_pool_reserved_bytes = allocator_.reserved_small_pool();
    if (!given_up_) f.segments = allocator_.segments();  // (a replay that gave up reports its bytes only)
    f.alloc_retries = allocator_.alloc_retries();
    if (!ok && !given_up_) {
      f.out_of_memory = true;
      f.oom_request_bytes = oom_bytes_;
      f.oom_iteration = f.iterations;  // 0: while the model was built
      f.oom_phase = oom_phase_;
      f.oom_layer = oom_layer_;
    }
    return f;
  }

 private:
  // The allocator's state (allocator_state.hpp).
  using StateHash = AllocatorStateHash::Hash;
  // Tensors of one kind left by the previous iteration, each taken once: of equal sizes, the
  // lowest handle first. Added in the order of their handles, so each size's list is in that
  // order without a sort (sorting 100,000 gradients every iteration was a twentieth of a replay).
  class Left {
   public:
    void add(std::int64_t bytes, int handle) {
      const int entry = static_cast<int>(handles_.size());
      handles_.push_back(handle);
      next_.push_back(-1);
      const auto [it, fresh] = sizes_.try_emplace(bytes, entry, entry);
      if (!fresh) next_[static_cast<std::size_t>(std::exchange(it->second.second, entry))] = entry;
    }
    int take(std::int64_t bytes) {
      const auto it = sizes_.find(bytes);
      if (it == sizes_.end() || it->second.first < 0) return -1;
      const auto entry = static_cast<std::size_t>(it->second.first);
      it->second.first = next_[entry];
      return handles_[entry];
    }

   private:
    std::vector<int> handles_, next_;  // per entry: its handle, the next entry of its size (-1: none)
    std::unordered_map<std::int64_t, std::pair<int, int>> sizes_;  // bytes -> (first entry not taken, last entry)
  };

  Carry carry(int block) const { return trace_.block_carry[static_cast<std::size_t>(block)]; }
  std::int64_t bytes(int block) const { return bytes_[static_cast<std::size_t>(block)]; }

  // Allocates the block's tensor; false (the failing event noted) when out of memory.
  bool alloc(int block, std::size_t event) { return alloc(block, carry(block), event); }
  // (Inlined in the loop, whatever else calls it: out of line it cost the replay 4 % more instructions.)
  [[gnu::always_inline]] bool alloc(int block, Carry what, std::size_t event) {
    const int h = allocator_.malloc(bytes(block));
    if (h < 0) {
      oom_bytes_ = bytes(block);
      oom_phase_ = script_.steps.phase(event);
      oom_layer_ = layers_[script_.steps.layer(event)];
      return false;
    }
    handle_[static_cast<std::size_t>(block)] = h;
    if (allocator_.max_reserved() > give_up_above_) given_up_ = true;
    if (static_cast<std::size_t>(h) >= held_.size()) held_.resize(static_cast<std::size_t>(h) + 1);
    held_[static_cast<std::size_t>(h)] = Held(block, what);
    if (what == Carry::Output || what == Carry::Loss || what == Carry::Grad) {
      const auto word = static_cast<std::size_t>(h) / 64;
      if (word >= left_marks_.size()) left_marks_.resize(std::max(word + 1, 2 * left_marks_.size()));
      left_marks_[word] |= std::uint64_t{1} << (h % 64);
    }
    return true;
  }

  void free(int block) {
    int& h = handle_[static_cast<std::size_t>(block)];
    if (h < 0) throw std::logic_error("the CUDA allocator replay frees a tensor it did not allocate");
    release(h);
    h = -1;
  }

  void release(int h) {
    allocator_.free(h);
    held_[static_cast<std::size_t>(h)] = {};
    if (const auto word = static_cast<std::size_t>(h) / 64; word < left_marks_.size())
      left_marks_[word] &= ~(std::uint64_t{1} << (h % 64));
  }

  // f(handle) for each handle holding an Output, Loss or Grad, in the order of the handles
  // (f may release it).
  template <class F>
  void for_each_left(F&& f) const {
    for (std::size_t word = 0; word < left_marks_.size(); ++word)
      for (std::uint64_t bits = left_marks_[word]; bits != 0; bits &= bits - 1)
        f(static_cast<int>(64 * word + static_cast<std::size_t>(__builtin_ctzll(bits))));
  }

  // The step's allocations of one kind of block, in order, made at `event` (PyTorch allocates
  // nothing for an empty tensor, so events of 0 bytes are no events here).
  bool alloc_all(const std::vector<int>& blocks, std::size_t event) {
    for (const int block : blocks)
      if (!alloc(block, event)) return false;
    return true;
  }

  // What the first iteration makes as its step() begins (at `event`): the optimizer's state,
  // created lazily at the start of the first step(), and kept gradient shards no step makes
  // anew (backward is over).
  bool make_at_first_step(std::size_t event) {
    for (const int block : script_.kept_grads)
      if (!alloc(block, Carry::Grad, event)) return false;
    return script_.eager_state || alloc_all(script_.state, event);
  }

  // Before the loop, attributed to the step's first event (the persistent state's).
  bool build() {
    return alloc_all(script_.model, 0) && alloc_all(script_.batch, 0) && (!script_.eager_state || alloc_all(script_.state, 0));
  }

  bool iteration(bool first) {
    Left outputs, losses, grads;
    for_each_left([&](int h) {
      const Held& what = held_[static_cast<std::size_t>(h)];
      (what.carry() == Carry::Output ? outputs : what.carry() == Carry::Loss ? losses : grads).add(bytes(what.block()), h);
    });
    bool made_at_step = !first || (script_.eager_state && script_.kept_grads.empty());
    const ReplaySteps& steps = script_.steps;
    // Inlined into for_each's loop: called, the replay ran a third more instructions (62.7 M where
    // it runs 46.0 M at 10,000 layers).
    const bool ran = steps.for_each([&](std::size_t e, int block, bool allocation) __attribute__((always_inline)) {
      if (!made_at_step && e == script_.first_optimizer_step) {
        made_at_step = true;
        if (!make_at_first_step(e)) return false;
      }
      const Carry what = carry(block);
      switch (what) {
        case Carry::Model:
        case Carry::Batch:
        case Carry::State:
          break;  // made before (the state: in the first step())
        case Carry::LastOutput:
        case Carry::LastLoss:
        case Carry::LastGrad:
          if (first) break;  // no previous step
          if (allocation) take_left(block, what == Carry::LastOutput ? outputs : what == Carry::LastLoss ? losses : grads);
          else if (handle_[static_cast<std::size_t>(block)] >= 0) free(block);
          break;
        case Carry::Grad:
          if (first && !allocation) break;  // .grad was None: AccumulateGrad keeps this one as .grad
          [[fallthrough]];
        case Carry::None:
        case Carry::Output:
        case Carry::Loss:
          if (!allocation) free(block);
          else if (!alloc(block, what, e) || given_up_) return false;
          break;
      }
      return true;
    });
    if (!ran) return false;
    if (!made_at_step && !make_at_first_step(steps.empty() ? 0 : steps.size() - 1)) return false;
    if (!script_.rebinds_output) {
      // Inference: one forward pass, whose output is dropped once it is made.
      for_each_left([&](int h) {
        if (held_[static_cast<std::size_t>(h)].carry() == Carry::Output) release(h);
      });
    }
    return true;
  }

  // The block is what the previous iteration left of its kind, with the same size. There may
  // be none: an output that is a persistent tensor written in place (the batch), a parameter
  // no gradient reached (its .grad stays None). The step simulation counts such a tensor as
  // its own; PyTorch, and so the replay, has nothing more.
  void take_left(int block, Left& left) { handle_[static_cast<std::size_t>(block)] = left.take(bytes(block)); }

  StateHash state_hash() {
    return state_.update(allocator_, [&](int handle) {
      const auto h = static_cast<std::size_t>(handle);
      return h < held_.size() ? held_[h].carry() : Carry::None;
    });
  }

  // What a handle holds, in 4 bytes (a deep model's replay holds a million): the step's block it
  // was allocated for (its bytes: bytes_) and what it is to the loop (the block's Carry, but for
  // a kept gradient the first iteration makes: Grad).
  class Held {
   public:
    static constexpr std::size_t kMaxBlocks = std::size_t{1} << 28;
    Held() = default;
    Held(int block, Carry carry) : bits_(static_cast<std::uint32_t>(block) << 4 | static_cast<std::uint32_t>(carry)) {}
    int block() const { return static_cast<int>(bits_ >> 4); }
    Carry carry() const { return static_cast<Carry>(bits_ & 15u); }

   private:
    std::uint32_t bits_ = 0;  // block << 4 | carry (Carry::None: nothing)
  };
  static_assert(static_cast<int>(Carry::Grad) < 16);

  const ReplayScript& script_;                // the steady step's events, read
  const Texts& layers_;                       // their layers, for the layer a failure is in
  const AllocationTrace& trace_;              // what each block is (its bytes: bytes_)
  const BlockSizes& bytes_;
  CudaCachingAllocator allocator_;
  AllocatorStateHash state_;  // the allocator's state hashed, updated as it changes
  std::int64_t give_up_above_;
  bool given_up_ = false;     // max_reserved() passed give_up_above_: the run stopped there
  std::vector<int> handle_;   // block of the step -> allocator handle
  std::vector<Held> held_;    // allocator handle -> what it holds (Carry::None: nothing)
  // A bit per allocator handle: it holds an Output, Loss or Grad, what the next iteration takes
  // as the previous step's (found from the bits: a cache that grows holds many handles, few of them these).
  std::vector<std::uint64_t> left_marks_;
  std::int64_t oom_bytes_ = 0;
  Phase oom_phase_ = Phase::Forward;
  std::string oom_layer_;
};

}  // namespace

namespace {

ReplaySteps steps_of(const Timeline& events) {
  ReplaySteps steps;
  for (const TimelineEvent& ev : events) steps.push_back(ev.block, ev.delta, ev.phase, ev.layer);
  return steps;
}

}  // namespace

ReplayScript::ReplayScript(const Timeline& events, const AllocationTrace& trace, const StepOptions& options)
    : ReplayScript(steps_of(events), trace, options) {}

ReplayScript::ReplayScript(ReplaySteps recorded, const AllocationTrace& trace, const StepOptions& options)
    : steps(std::move(recorded)), first_optimizer_step(steps.first_of(Phase::Optimizer)),
      eager_state(options.optimizer == OptimizerKind::Adagrad), rebinds_output(trace.block_carry.contains(Carry::LastOutput)) {
  std::vector<int> last_grads;
  steps.for_each([&](std::size_t, int block, bool allocates) {
    if (!allocates) return true;
    const Carry carry = trace.block_carry[static_cast<std::size_t>(block)];
    if (carry == Carry::Model) model.push_back(block);
    if (carry == Carry::Batch) batch.push_back(block);
    if (carry == Carry::State) state.push_back(block);
    if (carry == Carry::LastGrad) last_grads.push_back(block);
    return true;
  });
  // The previous step's gradients are what this one leaves marked Grad; when it leaves none
  // (every gradient added into a kept shard), the first iteration has to make them.
  if (options.keep_grads && !trace.block_carry.contains(Carry::Grad))
    kept_grads = std::move(last_grads);
}

CudaAllocatorFigures replay_cuda_allocator(const ReplayScript& script, const Texts& layers,
                                           const AllocationTrace& trace, const BlockSizes& block_bytes,
                                           const StepOptions& options, std::int64_t give_up_above) {
  return Replay(script, layers, trace, block_bytes, options, give_up_above).run();
}

}  // namespace nnmem::detail
