#include "memory_tracker.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace nnmem::detail {

What::What(std::initializer_list<std::string_view> parts) : size_(parts.size()) {
  if (size_ > parts_.size()) throw std::logic_error("a block's description in more than six pieces");
  std::copy(parts.begin(), parts.end(), parts_.begin());
}

MemoryTracker::MemoryTracker(Record record, std::size_t nodes) : record_(record) {
  if (record != Record::Figures) {
    timeline_.layers.reserve(nodes + 16);
    node_layer_ids_.assign(nodes, kNoLayer);
  }
  timeline_.layers.push_back("");  // events are attributed to no layer until at() names one
  layer_ids_.emplace("", 0);
}

void MemoryTracker::at(Phase phase, std::string_view layer) {
  phase_ = phase;
  if (record_ == Record::Figures) {  // no event names it: only the peak's layer is kept
    if (peak_is_current_) peak_name_ = current_, peak_is_current_ = false;
    current_.assign(layer);
    return;
  }
  if (timeline_.layers[layer_] == layer) return;
  auto it = layer_ids_.find(layer);
  if (it == layer_ids_.end()) {
    it = layer_ids_.emplace(std::string(layer), static_cast<std::uint32_t>(timeline_.layers.size())).first;
    timeline_.layers.push_back(it->first);
  }
  layer_ = it->second;
}

void MemoryTracker::at(Phase phase, std::size_t node, std::string_view layer) {
  if (record_ == Record::Figures) return at(phase, layer);
  phase_ = phase;
  if (node >= node_layer_ids_.size()) node_layer_ids_.resize(node + 1, kNoLayer);
  std::uint32_t& id = node_layer_ids_[node];
  if (id == kNoLayer) {
    id = static_cast<std::uint32_t>(timeline_.layers.size());
    timeline_.layers.push_back(layer);
  }
  layer_ = id;
}

void MemoryTracker::micro_step(std::int64_t m) {
  timeline_.micro_steps.push_back(m);
  micro_ = static_cast<std::uint16_t>(timeline_.micro_steps.size() - 1);
}

int MemoryTracker::alloc(MemoryKind kind, std::int64_t bytes, What what, int refs) {
  if (refs < 0 || refs > kMaxRefs) misuse("allocates a block held by a count of references it cannot keep", static_cast<int>(blocks_.size()));
  blocks_.push_back({static_cast<std::uint32_t>(refs), 1, static_cast<std::uint32_t>(kind)});
  bytes_.push_back(bytes);
  carry_.push_back(Carry::None);
  if (record_ == Record::Timeline) what.add_to(timeline_.tensors);
  live_ = checked_add(live_, bytes);
  const int id = static_cast<int>(blocks_.size()) - 1;
  record(id, bytes);
  if (refs == 0) release(id), ++blocks_[static_cast<std::size_t>(id)].refs;  // never held: freed at once
  return id;
}

void MemoryTracker::hold(int block, int refs) {
  Block& b = blocks_.at(static_cast<std::size_t>(block));
  if (!b.live) misuse("holds a freed block", block);
  if (refs < 0 || refs > kMaxRefs - static_cast<int>(b.refs)) misuse("holds a block more times than it can count", block);
  b.refs += static_cast<std::uint32_t>(refs);
}

void MemoryTracker::release(int block) {
  Block& b = blocks_.at(static_cast<std::size_t>(block));
  if (!b.live || b.refs == 0) misuse("releases a block twice", block);
  if (--b.refs > 0) return;
  b.live = 0;
  const std::int64_t bytes = bytes_[static_cast<std::size_t>(block)];
  live_ -= bytes;
  record(block, -bytes);
}

void MemoryTracker::misuse(const char* what, int block) const {
  const auto k = static_cast<std::size_t>(block);
  throw std::logic_error(std::string("simulation ") + what + ": block " + std::to_string(block) +
                         (k < timeline_.tensors.size() ? " (" + std::string(timeline_.tensors[k]) + ")" : std::string()));
}

void MemoryTracker::check_nothing_outlives() const {
  for (std::size_t k = 0; k < blocks_.size(); ++k)
    if (blocks_[k].live && carry_[k] == Carry::None) misuse("leaves a tensor of the step live after it", static_cast<int>(k));
}

Timeline MemoryTracker::take_timeline() {
  return std::move(timeline_);
}

AllocationTrace MemoryTracker::take_trace() {
  if (record_ == Record::Figures) return {};  // no event to replay it with
  return {std::move(bytes_), std::move(carry_)};
}

void MemoryTracker::record(int block, std::int64_t delta) {
  const Block& b = blocks_[static_cast<std::size_t>(block)];
  const auto kind = static_cast<MemoryKind>(b.kind);
  if (record_ == Record::Replay)
    replay_.push_back(block, delta, phase_, layer_);
  else if (record_ != Record::Figures)
    timeline_.events.push_back({delta, live_, block, layer_, phase_, kind, micro_});
  auto& of_kind = by_kind_[static_cast<std::size_t>(kind)];
  of_kind += delta;
  if (phase_ == Phase::Backward && kind == MemoryKind::Transients) backward_transients_ = std::max(backward_transients_, of_kind);
  if (live_ > peak_) {
    peak_ = live_;
    peak_phase_ = phase_;
    peak_layer_ = layer_;
    peak_is_current_ = true;
    peak_micro_step_ = timeline_.micro_steps[micro_];
    breakdown_at_peak_ = by_kind_;
  }
}

}  // namespace nnmem::detail
