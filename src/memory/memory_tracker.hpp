// A reference-counted model of the allocator, used to simulate one training step tensor by
// tensor: every allocation and release becomes a TimelineEvent, and the peak is remembered.
// Each block also says what it is to the training loop around the step (Carry), so that the
// step's allocations can be replayed through the CUDA caching allocator (cuda_replay.cpp).
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnmem/estimate.hpp"
#include "pieces.hpp"
#include "step_records.hpp"

namespace nnmem::detail {

/// What a block of the simulated (steady-state) step is to the loop around it.
enum class Carry : std::uint8_t {
  None,        // allocated and freed within the step
  Model,       // a parameter or a buffer: allocated once, as the model is built
  Batch,       // the input, the target: allocated once, before the first step
  State,       // the optimizer's state: allocated in the first step() (Adagrad: with the optimizer)
  LastOutput,  // what the previous step left: its `out`, its `loss`, its `.grad`s ...
  LastLoss,
  LastGrad,
  Output,      // ... which are this step's: allocated in it, still live after it
  Loss,
  Grad,        // a parameter's gradient as it becomes `.grad` (or is added into it)
};

/// The step's blocks as the CUDA allocator sees them: for each block (TimelineEvent::block), its
/// bytes and what it is (the tracker's own arrays, handed over: a million blocks at 100,000
/// layers, which a copy held twice at the estimate's heap peak).
struct AllocationTrace {
  BlockSizes block_bytes;
  Pieces<Carry> block_carry;
};

/// What a block holds, as the timeline names it ("output of fc1"): up to six pieces, joined
/// only when the timeline is recorded, so a step simulated for its figures builds no string.
/// Refers to its pieces: it lives for the call it is passed to.
class What {
 public:
  What(const char* text) : parts_{text}, size_(1) {}
  What(const std::string& text) : parts_{text}, size_(1) {}
  What(std::initializer_list<std::string_view> parts);
  /// Appends the description, its parts joined, to `texts`.
  void add_to(Texts& texts) const { texts.push_back(parts_.data(), size_); }

 private:
  std::array<std::string_view, 6> parts_;
  std::size_t size_;
};

/// What the tracker keeps beside the step's figures (the peak, its layer and breakdown).
enum class Record : std::uint8_t {
  Figures,   // nothing more
  Replay,    // the events as ReplaySteps and the layers they name: the allocator's replay alone
  Events,    // the events and the layers they name (the allocator's replay, fit's batch curve)
  Timeline,  // and what each block holds: the whole Timeline
};

class MemoryTracker {
 public:
  /// `nodes`: how many graph nodes at(phase, node, layer) may name (room for their names, and
  /// for a few others: "loss", "optimizer", …, made once).
  explicit MemoryTracker(Record record = Record::Timeline, std::size_t nodes = 0);
  /// Where subsequent events are attributed.
  void at(Phase phase, std::string_view layer);
  /// The same for graph node `node`, named `layer`: its name is kept once, found by the index.
  void at(Phase phase, std::size_t node, std::string_view layer);
  /// Gradient accumulation: which micro-step subsequent events belong to.
  void micro_step(std::int64_t m);

  /// Allocates a block of `kind` held by `refs` references.
  int alloc(MemoryKind kind, std::int64_t bytes, What what, int refs = 1);
  void hold(int block, int refs = 1);
  /// Drops one reference; the block is freed when none is left.
  void release(int block);
  int refs(int block) const { return static_cast<int>(blocks_[static_cast<std::size_t>(block)].refs); }
  std::int64_t bytes(int block) const { return bytes_[static_cast<std::size_t>(block)]; }
  MemoryKind kind(int block) const { return static_cast<MemoryKind>(blocks_[static_cast<std::size_t>(block)].kind); }
  void mark(int block, Carry carry) { carry_.at(static_cast<std::size_t>(block)) = carry; }
  Carry carry(int block) const { return carry_[static_cast<std::size_t>(block)]; }
  /// Throws std::logic_error if a block still live is marked as nothing to the loop (Carry::None):
  /// a tensor of the step that outlives it, which the simulation would carry into every step
  /// after (the CUDA replay finds the same in its state; this checks it on every device).
  void check_nothing_outlives() const;

  Phase phase() const { return phase_; }
  std::int64_t live() const { return live_; }
  std::int64_t peak() const { return peak_; }
  Phase peak_phase() const { return peak_phase_; }
  std::string_view peak_layer() const {
    if (record_ != Record::Figures) return timeline_.layers[peak_layer_];
    return peak_is_current_ ? current_ : peak_name_;
  }
  std::int64_t peak_micro_step() const { return peak_micro_step_; }
  /// The live bytes of each MemoryKind at the peak.
  const std::array<std::int64_t, kMemoryKinds>& breakdown_at_peak() const { return breakdown_at_peak_; }
  /// The most Transients live at once during the backward pass.
  std::int64_t backward_transients() const { return backward_transients_; }

  /// What was recorded: with Record::Timeline, the events and each block's description (after
  /// this, only take_trace()); with Events, the events; with Replay, the layers alone (the
  /// events: take_replay_steps()); with Figures, nothing (and no trace). After take_trace(),
  /// nothing but take_replay_steps().
  Timeline take_timeline();
  AllocationTrace take_trace();
  ReplaySteps take_replay_steps() { return std::move(replay_); }

 private:
  // A block's references, whether it is live, its kind, in 4 bytes (a million of them at 100,000
  // layers; its bytes and Carry apart: they become the trace).
  static constexpr int kMaxRefs = (1 << 27) - 1;
  static_assert(kMemoryKinds <= 16);
  struct Block {
    std::uint32_t refs : 27;
    std::uint32_t live : 1;
    std::uint32_t kind : 4;
  };
  void record(int block, std::int64_t delta);
  [[noreturn]] void misuse(const char* what, int block) const;

  Record record_;
  // By block id, each grown a piece at a time (pieces.hpp).
  Pieces<Block> blocks_;
  BlockSizes bytes_;
  Pieces<Carry> carry_;
  Timeline timeline_;  // its layers unless Record::Figures (the peak's is named), the rest as record_ says
  ReplaySteps replay_;  // Record::Replay's events
  // Hashes a layer's name as a view, so that looking a name up builds no string.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> layer_ids_;  // timeline_.layers, interned
  std::vector<std::uint32_t> node_layer_ids_;  // per graph node: its name in timeline_.layers, or kNoLayer
  static constexpr std::uint32_t kNoLayer = ~std::uint32_t{0};
  Phase phase_ = Phase::Forward;
  std::uint32_t layer_ = 0;  // in timeline_.layers
  std::uint16_t micro_ = 0;  // in timeline_.micro_steps
  std::int64_t peak_micro_step_ = 1;
  std::int64_t live_ = 0;
  std::int64_t peak_ = 0;
  Phase peak_phase_ = Phase::Forward;
  std::uint32_t peak_layer_ = 0;
  // Record::Figures keeps no layer table (a map and a copy of every name: 10 MB at 100,000
  // layers) but the name at() last gave and the peak's, copied when at() moves on from it.
  std::string current_, peak_name_;
  bool peak_is_current_ = false;
  std::array<std::int64_t, kMemoryKinds> by_kind_{};
  std::array<std::int64_t, kMemoryKinds> breakdown_at_peak_{};
  std::int64_t backward_transients_ = 0;
};

}  // namespace nnmem::detail
