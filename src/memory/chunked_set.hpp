// A sorted set of small keys kept as a list of sorted chunks of at most kChunk keys each, with
// each chunk's last key in one vector to find the chunk by: what std::set does for the CUDA
// allocator model's free blocks (lower_bound, insert, erase, walking in order), on contiguous
// memory. A replay makes millions of these operations on sets of 10^4 to 10^5 blocks; through
// a red-black tree's scattered nodes they were a third of its time.
//
// Iterators are (chunk, position) and, unlike std::set's, are invalidated by an insert and by
// erasing anything at or before them (erasing a later key leaves them valid: a chunk is only
// ever merged with the chunk after it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace nnmem::detail {

template <class Key>
class ChunkedSet {
 public:
  static constexpr std::size_t kChunk = 64;

  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Key;
    using difference_type = std::ptrdiff_t;
    using pointer = const Key*;
    using reference = const Key&;
    iterator() = default;
    const Key& operator*() const { return set_->chunks_[chunk_][pos_]; }
    const Key* operator->() const { return &**this; }
    iterator& operator++() {
      if (++pos_ == set_->chunks_[chunk_].size()) ++chunk_, pos_ = 0;
      return *this;
    }
    iterator& operator--() {
      if (pos_ == 0) pos_ = set_->chunks_[--chunk_].size();
      --pos_;
      return *this;
    }
    iterator operator++(int) { iterator old = *this; ++*this; return old; }
    iterator operator--(int) { iterator old = *this; --*this; return old; }
    bool operator==(const iterator&) const = default;

   private:
    friend class ChunkedSet;
    iterator(const ChunkedSet* set, std::size_t chunk, std::size_t pos) : set_(set), chunk_(chunk), pos_(pos) {}
    const ChunkedSet* set_ = nullptr;
    std::size_t chunk_ = 0, pos_ = 0;
  };
  using const_iterator = iterator;

  iterator begin() const { return {this, 0, 0}; }
  iterator end() const { return {this, chunks_.size(), 0}; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  /// The first key not below `key`.
  iterator lower_bound(const Key& key) const {
    const std::size_t c = chunk_for(key);
    if (c == chunks_.size()) return end();
    const auto& chunk = chunks_[c];
    return {this, c, static_cast<std::size_t>(std::lower_bound(chunk.begin(), chunk.end(), key) - chunk.begin())};
  }
  iterator find(const Key& key) const {
    const iterator it = lower_bound(key);
    return it == end() || key < *it ? end() : it;
  }

  /// False if the key was there already.
  bool insert(const Key& key) {
    if (chunks_.empty()) {
      chunks_.push_back(spare());
      chunks_.back().push_back(key);
      lasts_.push_back(key);
      ++size_;
      return true;
    }
    const std::size_t c = std::min(chunk_for(key), chunks_.size() - 1);
    auto& chunk = chunks_[c];
    const auto at = std::lower_bound(chunk.begin(), chunk.end(), key);
    if (at != chunk.end() && !(key < *at)) return false;
    chunk.insert(at, key);
    lasts_[c] = chunk.back();
    ++size_;
    if (chunk.size() > kChunk) {  // the upper half becomes a chunk of its own
      std::vector<Key> upper = spare();
      upper.assign(chunk.begin() + static_cast<std::ptrdiff_t>(kChunk / 2), chunk.end());
      chunk.resize(kChunk / 2);
      lasts_[c] = chunk.back();
      lasts_.insert(lasts_.begin() + static_cast<std::ptrdiff_t>(c) + 1, upper.back());
      chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1, std::move(upper));
    }
    return true;
  }

  /// How many keys were erased (0 or 1).
  std::size_t erase(const Key& key) {
    // The first key, without a search: what the allocator model's size classes mostly erase
    // (a merge takes the lowest-addressed block of its class about three times in four).
    if (!chunks_.empty() && !(chunks_[0][0] < key) && !(key < chunks_[0][0])) return erase(begin()), 1;
    const iterator it = find(key);
    if (it == end()) return 0;
    erase(it);
    return 1;
  }
  void erase(iterator it) {
    const std::size_t c = it.chunk_;
    auto& chunk = chunks_[c];
    chunk.erase(chunk.begin() + static_cast<std::ptrdiff_t>(it.pos_));
    --size_;
    if (chunk.empty()) {
      spare_ = std::move(chunk);
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c));
      lasts_.erase(lasts_.begin() + static_cast<std::ptrdiff_t>(c));
      return;
    }
    lasts_[c] = chunk.back();
    // A chunk a quarter full takes in the next one if both fit in one: chunks stay dense.
    if (chunk.size() < kChunk / 4 && c + 1 < chunks_.size() && chunk.size() + chunks_[c + 1].size() <= kChunk) {
      chunk.insert(chunk.end(), chunks_[c + 1].begin(), chunks_[c + 1].end());
      lasts_[c] = chunk.back();
      spare_ = std::move(chunks_[c + 1]);
      spare_.clear();
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1);
      lasts_.erase(lasts_.begin() + static_cast<std::ptrdiff_t>(c) + 1);
    }
  }

 private:
  // The first chunk whose last key is not below `key` (chunks_.size() if none).
  std::size_t chunk_for(const Key& key) const {
    return static_cast<std::size_t>(std::lower_bound(lasts_.begin(), lasts_.end(), key) - lasts_.begin());
  }

  // An emptied chunk's storage, for the next chunk made: a set that empties and fills again
  // (a size class of the allocator's free blocks) then allocates nothing.
  std::vector<Key> spare() {
    std::vector<Key> v = std::move(spare_);
    spare_ = {};
    v.reserve(kChunk + 1);
    return v;
  }

  std::vector<std::vector<Key>> chunks_;  // sorted, none empty; each chunk's keys below the next's
  std::vector<Key> lasts_;                // each chunk's last key
  std::size_t size_ = 0;
  std::vector<Key> spare_;                // empty; maybe with capacity
};

}  // namespace nnmem::detail
