// A sorted set of small keys kept as a list of sorted chunks of at most kChunk keys each, with
// each chunk's last key beside it in one vector to find the chunk by: what std::set does for the CUDA
// allocator model's free blocks (lower_bound, insert, erase, walking in order), on contiguous
// memory. A replay makes millions of these operations on sets of 10^4 to 10^5 blocks; through
// a red-black tree's scattered nodes they were a third of its time.
//
// A chunk is a fixed array with its count, not a std::vector: a pool's set mostly holds a few
// blocks, and a vector's insert and erase (memmove through libc, capacity checks) cost more
// than moving those few keys by hand. A set of one chunk (all but the largest) skips the
// search for its chunk. (The small pool's size classes are heaps: free_blocks.hpp.)
//
// Iterators are (chunk, position) and, unlike std::set's, are invalidated by an insert and by
// erasing anything at or before them (erasing a later key leaves them valid: a chunk is only
// ever merged with the chunk after it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
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
    const Key& operator*() const { return set_->chunks_[chunk_].chunk->keys()[pos_]; }
    const Key* operator->() const { return &**this; }
    iterator& operator++() {
      if (++pos_ == set_->chunks_[chunk_].chunk->n) ++chunk_, pos_ = 0;
      return *this;
    }
    iterator& operator--() {
      if (pos_ == 0) pos_ = set_->chunks_[--chunk_].chunk->n;
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
  /// The first key (the set must not be empty).
  const Key& front() const { return chunks_[0].chunk->keys()[0]; }

  /// The first key not below `key`.
  iterator lower_bound(const Key& key) const {
    const std::size_t c = chunk_for(key);
    if (c == chunks_.size()) return end();
    const Chunk& chunk = *chunks_[c].chunk;
    const Key* const keys = chunk.keys();
    return {this, c, static_cast<std::size_t>(std::lower_bound(keys, keys + chunk.n, key) - keys)};
  }
  iterator find(const Key& key) const {
    const iterator it = lower_bound(key);
    return it == end() || key < *it ? end() : it;
  }

  /// False if the key was there already.
  bool insert(const Key& key) {
    if (chunks_.empty()) {
      chunks_.push_back({key, spare()});
      chunks_.back().chunk->keys()[0] = key;
      chunks_.back().chunk->n = 1;
      ++size_;
      return true;
    }
    const std::size_t c = chunks_.size() == 1 ? 0 : std::min(chunk_for(key), chunks_.size() - 1);
    Chunk& chunk = *chunks_[c].chunk;
    Key* const keys = chunk.keys();
    Key* const at = std::lower_bound(keys, keys + chunk.n, key);
    if (at != keys + chunk.n && !(key < *at)) return false;
    std::move_backward(at, keys + chunk.n, keys + chunk.n + 1);
    *at = key;
    ++chunk.n;
    chunks_[c].last = keys[chunk.n - 1];
    ++size_;
    if (chunk.n > kChunk) {  // the upper half becomes a chunk of its own
      std::unique_ptr<Chunk> upper = spare();
      upper->n = chunk.n - kChunk / 2;
      Key* const upper_keys = upper->keys();
      std::copy(keys + kChunk / 2, keys + chunk.n, upper_keys);
      chunk.n = kChunk / 2;
      chunks_[c].last = keys[chunk.n - 1];
      const Key upper_last = upper_keys[upper->n - 1];
      chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1, Entry{upper_last, std::move(upper)});
    }
    return true;
  }

  /// How many keys were erased (0 or 1).
  std::size_t erase(const Key& key) {
    // The first key, without a search.
    if (!chunks_.empty() && !(front() < key) && !(key < front())) return erase(begin()), 1;
    const iterator it = find(key);
    if (it == end()) return 0;
    erase(it);
    return 1;
  }
  void erase(iterator it) {
    const std::size_t c = it.chunk_;
    Chunk& chunk = *chunks_[c].chunk;
    Key* const keys = chunk.keys();
    std::move(keys + it.pos_ + 1, keys + chunk.n, keys + it.pos_);
    --chunk.n;
    --size_;
    if (chunk.n == 0) {
      spare_ = std::move(chunks_[c].chunk);
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c));
      return;
    }
    chunks_[c].last = keys[chunk.n - 1];
    // A chunk a quarter full takes in the next one if both fit in one: chunks stay dense.
    if (chunk.n < kChunk / 4 && c + 1 < chunks_.size() && chunk.n + chunks_[c + 1].chunk->n <= kChunk) {
      const Chunk& next = *chunks_[c + 1].chunk;
      std::copy(next.keys(), next.keys() + next.n, keys + chunk.n);
      chunk.n += next.n;
      chunks_[c].last = keys[chunk.n - 1];
      spare_ = std::move(chunks_[c + 1].chunk);
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c) + 1);
    }
  }

 private:
  // Its keys live in bytes, left as they are until written: a new chunk is not cleared key by
  // key, which was a tenth of a set's first insert. Keys are small plain values of an
  // implicit-lifetime type (an aggregate, or a class with a trivial constructor and destructor): the byte
  // array's lifetime beginning creates them (C++20 [intro.object]), so writing one is writing
  // to an object, which a union member not yet active was not.
  static_assert(std::is_trivially_destructible_v<Key>);
  struct Chunk {
    Chunk() {}  // (not `= default`: make_unique would then zero the bytes)
    std::size_t n = 0;
    alignas(Key) std::byte bytes[sizeof(Key) * (kChunk + 1)];  // one over: an insert into a full chunk, before it is split
    Key* keys() { return std::launder(reinterpret_cast<Key*>(bytes)); }
    const Key* keys() const { return std::launder(reinterpret_cast<const Key*>(bytes)); }
  };

  // The first chunk whose last key is not below `key` (chunks_.size() if none).
  std::size_t chunk_for(const Key& key) const {
    const auto below = [](const Entry& e, const Key& k) { return e.last < k; };
    return static_cast<std::size_t>(std::lower_bound(chunks_.begin(), chunks_.end(), key, below) - chunks_.begin());
  }

  // An emptied chunk, for the next chunk made: a set that empties and fills again (a pool's free
  // blocks between requests) then allocates nothing.
  std::unique_ptr<Chunk> spare() {
    if (!spare_) return std::make_unique<Chunk>();
    spare_->n = 0;
    return std::move(spare_);
  }

  // Each chunk with its last key, to find it by (one vector: one allocation for a new set).
  struct Entry {
    Key last;
    std::unique_ptr<Chunk> chunk;
  };
  std::vector<Entry> chunks_;  // sorted, none empty; each chunk's keys below the next's
  std::size_t size_ = 0;
  std::unique_ptr<Chunk> spare_;                // an emptied chunk, or none
};

}  // namespace nnmem::detail
