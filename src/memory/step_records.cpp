#include "step_records.hpp"

#include <limits>

namespace nnmem::detail {

void BlockSizes::push_back(std::int64_t bytes) {
  ++size_;
  if (wide_) return push_wide(bytes);
  if (slots_.empty()) slots_.assign(64, 0);
  const std::size_t mask = slots_.size() - 1;
  std::size_t slot = slot_of(bytes, mask);
  for (; slots_[slot] != 0; slot = (slot + 1) & mask)
    if (distinct_[slots_[slot] - 1] == bytes) return narrow_.push_back(static_cast<std::uint16_t>(slots_[slot] - 1));
  if (distinct_.size() == kMaxDistinct) {
    --size_;
    widen();
    return push_back(bytes);
  }
  distinct_.push_back(bytes);
  slots_[slot] = static_cast<std::uint32_t>(distinct_.size());
  narrow_.push_back(static_cast<std::uint16_t>(distinct_.size() - 1));
  if (2 * distinct_.size() > slots_.size()) {  // at most half full: rehashed into twice the slots
    std::vector<std::uint32_t> old(2 * slots_.size(), 0);
    old.swap(slots_);
    const std::size_t wider = slots_.size() - 1;
    for (const std::uint32_t id : old) {
      if (id == 0) continue;
      std::size_t s = slot_of(distinct_[id - 1], wider);
      while (slots_[s] != 0) s = (s + 1) & wider;
      slots_[s] = id;
    }
  }
}

void BlockSizes::push_wide(std::int64_t bytes) {
  if (bytes >= 0 && bytes < kWhole) return wide_ids_.push_back(static_cast<std::uint32_t>(bytes));
  if (whole_.size() >= kWhole) throw std::length_error("more than 2^31 blocks of 2 GiB or more");
  wide_ids_.push_back(kWhole + static_cast<std::uint32_t>(whole_.size()));
  whole_.push_back(bytes);
}

void BlockSizes::widen() {
  for (std::size_t k = 0; k < size_; ++k) push_wide(distinct_[narrow_[k]]);
  wide_ = true;
  narrow_ = {};
  std::vector<std::int64_t>().swap(distinct_);
  std::vector<std::uint32_t>().swap(slots_);
}

void ReplaySteps::push_back(int block, std::int64_t delta, Phase phase, std::uint32_t layer) {
  if (delta == 0) return;
  if (size_ >= std::numeric_limits<std::uint32_t>::max()) throw std::length_error("a step of 2^32 events or more");
  if (layer >= std::uint32_t{1} << 30) throw std::length_error("a step naming 2^30 layers or more");
  const auto layer_phase = layer << 2 | static_cast<std::uint32_t>(phase);
  if (runs_.empty() || runs_.back().layer_phase != layer_phase) runs_.push_back({static_cast<std::uint32_t>(size_), layer_phase});
  if (size_ % 64 == 0) allocates_.push_back(0);
  if (delta > 0) {
    allocates_[size_ / 64] |= std::uint64_t{1} << (size_ % 64);
    if (block != next_block_) jumps_.push_back({allocs_, block});
    next_block_ = block + 1;
    ++allocs_;
  } else {
    write_delta(block - last_freed_);
    last_freed_ = block;
  }
  ++size_;
}

void ReplaySteps::write_delta(std::int64_t delta) {
  auto z = static_cast<std::uint64_t>(delta) << 1 ^ static_cast<std::uint64_t>(delta >> 63);
  for (; z >= 0x80; z >>= 7) freed_.push_back(static_cast<std::uint8_t>(z | 0x80));
  freed_.push_back(static_cast<std::uint8_t>(z));
}

const ReplaySteps::Run& ReplaySteps::run_of(std::size_t k) const {
  static constexpr Run kNoRun{0, 0};  // no step recorded: no layer (Timeline::layers' first, ""), forward
  if (runs_.empty()) return kNoRun;
  std::size_t low = 0, high = runs_.size();  // the last run that starts at or before k
  while (high - low > 1) {
    const std::size_t mid = low + (high - low) / 2;
    (runs_[mid].first <= k ? low : high) = mid;
  }
  return runs_[low];
}

std::size_t ReplaySteps::first_of(Phase phase) const {
  for (std::size_t r = 0; r < runs_.size(); ++r)
    if (runs_[r].phase() == phase) return runs_[r].first;
  return size_;
}

}  // namespace nnmem::detail
