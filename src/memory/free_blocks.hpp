// A pool's cached (free) blocks for the CUDA allocator model, ordered as PyTorch's
// BlockComparatorSize orders them: by size, then address. Two layouts, chosen per pool:
//
//   sorted    one ChunkedSet of (size, address, id) keys: any sizes (the large pool, expandable
//             segments' blocks, which can span many pages);
//   by class  the small pool of ordinary 2 MiB segments, where every block is a multiple of
//             512 bytes up to 2 MiB: 4,097 size classes, each a binary min-heap of its blocks
//             by address (a block's place in its heap kept by its id, to erase it), and a
//             bitmap of the classes that hold any. A best-fit search is then a scan of a few
//             bitmap words and the top of one heap, where the sorted layout needs two binary
//             searches and the insert of a split's remainder a third; a replay of a
//             100,000-layer step makes millions of them, on classes of up to 10^4 blocks.
//             (Each class was a sorted ChunkedSet: its inserts and erases moved the keys after
//             them; a heap's move only the keys sifted, and the replay ran 7 % fewer
//             instructions: ResNet-50's 8.76 -> 8.17 M, a 10,000-layer MLP's 304 -> 281 M.)
//
// Both give the same order, so the same answers: within a class the addresses of a pool's
// cached blocks differ (their blocks do not overlap), so (address, id) orders them as
// (size, address, id) does.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "chunked_set.hpp"

namespace nnmem::detail {

struct FreeKey {  // trivially copyable, which a ChunkedSet moves with memmove
  std::int64_t size = 0, address = 0;
  int id = -1;
  auto operator<=>(const FreeKey&) const = default;
};

class FreeBlocks {
 public:
  static constexpr std::int64_t kUnit = 512;              // every size is a multiple of this ...
  static constexpr std::int64_t kLargest = 2 << 20;       // ... up to this, in the class layout
  static constexpr std::size_t kClasses = kLargest / kUnit + 1;

  explicit FreeBlocks(bool by_class = false) : by_class_(by_class) {
    if (by_class_) classes_.resize(kClasses);
  }
  bool by_class() const { return by_class_; }

  // (The sorted layout and the errors out of line: inlined, they made the class layout's
  // paths, which a replay takes millions of times, save and restore registers for them.)
  void insert(const FreeKey& k) {
    if (!by_class_) return insert_sorted(k);
    const auto size = static_cast<std::uint64_t>(k.size);
    if (size % kUnit != 0 || size > kLargest) unheld();
    const std::size_t c = class_of(k.size);
    std::vector<AddressKey>& heap = classes_[c];
    if (heap.empty()) mark(c, true);
    if (static_cast<std::size_t>(k.id) >= place_.size()) grow_place(k.id);
    heap.push_back({k.address, k.id});
    up(heap, heap.size() - 1);
  }
  void erase(const FreeKey& k) {
    if (!by_class_) return erase_sorted(k);
    const auto size = static_cast<std::uint64_t>(k.size);
    // (A size no class holds is looked for in class 0, which never holds a block, and refused.)
    const std::size_t c = size % kUnit == 0 && size <= kLargest ? class_of(k.size) : 0;
    const std::size_t i = static_cast<std::size_t>(k.id) < place_.size() ? static_cast<std::size_t>(place_[static_cast<std::size_t>(k.id)]) : kNotCached;
    if (i >= classes_[c].size() || classes_[c][i].id != k.id) not_cached();
    take(c, i);
  }

  /// The class layout's first block of `size` bytes or more (the smallest, the lowest address
  /// among equals); nullopt when there is none.
  std::optional<FreeKey> first_fit(std::int64_t size) const {
    const std::size_t from = static_cast<std::size_t>((size + kUnit - 1) / kUnit);
    if (from >= kClasses) return std::nullopt;
    std::size_t w = from / 64;
    std::uint64_t word = bits_[w] & ~std::uint64_t{0} << (from % 64);
    if (word == 0) {  // the next word with a class in it, through the summary
      w = first_set(summary_, w + 1);
      if (w == kNone) return std::nullopt;
      word = bits_[w];
    }
    const std::size_t c = w * 64 + static_cast<std::size_t>(std::countr_zero(word));
    const AddressKey& first = classes_[c].front();
    return FreeKey{static_cast<std::int64_t>(c) * kUnit, first.address, first.id};
  }

  /// Erases first_fit's answer (which must still be cached), without searching for it.
  void erase_first(const FreeKey& k) { take(class_of(k.size), 0); }

  /// The sorted layout itself (for the searches that walk it).
  ChunkedSet<FreeKey>& sorted() { return sorted_; }
  const ChunkedSet<FreeKey>& sorted() const { return sorted_; }

  /// f(key) for every block, in order.
  template <class F>
  void for_each(F&& f) const {
    if (!by_class_) {
      for (const FreeKey& k : sorted_) f(k);
      return;
    }
    for (std::size_t c = 0; c < kClasses; ++c) {
      std::vector<AddressKey> by_address = classes_[c];  // (a heap is in no order: sorted, on this rare path)
      std::sort(by_address.begin(), by_address.end());
      for (const AddressKey& k : by_address) f(FreeKey{static_cast<std::int64_t>(c) * kUnit, k.address, k.id});
    }
  }

 private:
  struct AddressKey {
    std::int64_t address = 0;
    int id = -1;
    auto operator<=>(const AddressKey&) const = default;
  };
  static std::size_t class_of(std::int64_t size) { return static_cast<std::size_t>(size) / kUnit; }  // (size >= 0)
  static constexpr std::size_t kNotCached = ~std::size_t{0};
  [[gnu::noinline]] void insert_sorted(const FreeKey& k) { sorted_.insert(k); }
  [[gnu::noinline]] void erase_sorted(const FreeKey& k) { sorted_.erase(k); }
  [[gnu::noinline]] void grow_place(int id) { place_.resize(static_cast<std::size_t>(id) + 1, -1); }
  [[noreturn, gnu::noinline, gnu::cold]] static void unheld() {
    throw std::logic_error("a block of a size the size classes do not hold");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void not_cached() {
    throw std::logic_error("erasing a block its size class does not hold");
  }
  // A class's heap orders its blocks by address alone: a pool's cached blocks do not overlap,
  // so no two have the same address (the id only breaks ties that never arise).
  static bool before(const AddressKey& a, const AddressKey& b) { return a.address < b.address; }

  // The heap's sifts, each key's place written as it moves.
  void up(std::vector<AddressKey>& heap, std::size_t i) {
    const AddressKey key = heap[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!before(key, heap[parent])) break;
      heap[i] = heap[parent];
      place_[static_cast<std::size_t>(heap[i].id)] = static_cast<int>(i);
      i = parent;
    }
    heap[i] = key;
    place_[static_cast<std::size_t>(key.id)] = static_cast<int>(i);
  }
  void down(std::vector<AddressKey>& heap, std::size_t i) {
    const AddressKey key = heap[i];
    const std::size_t n = heap.size();
    for (std::size_t child; (child = 2 * i + 1) < n; i = child) {
      if (child + 1 < n && before(heap[child + 1], heap[child])) ++child;
      if (!before(heap[child], key)) break;
      heap[i] = heap[child];
      place_[static_cast<std::size_t>(heap[i].id)] = static_cast<int>(i);
    }
    heap[i] = key;
    place_[static_cast<std::size_t>(key.id)] = static_cast<int>(i);
  }
  // Takes the key at place i out of class c's heap.
  void take(std::size_t c, std::size_t i) {
    std::vector<AddressKey>& heap = classes_[c];
    place_[static_cast<std::size_t>(heap[i].id)] = -1;
    const AddressKey last = heap.back();
    heap.pop_back();
    if (i < heap.size()) {
      heap[i] = last;
      if (i > 0 && before(last, heap[(i - 1) / 2])) up(heap, i);
      else down(heap, i);
    }
    if (heap.empty()) mark(c, false);
  }
  static constexpr std::size_t kWords = (kClasses + 63) / 64;
  static constexpr std::size_t kNone = kWords;
  // Whether class c holds blocks: bit c of bits_, and bit w of summary_ for a word w of bits_ not 0.
  void mark(std::size_t c, bool holds) {
    const std::uint64_t bit = std::uint64_t{1} << (c % 64);
    std::uint64_t& word = bits_[c / 64];
    word = holds ? word | bit : word & ~bit;
    const std::size_t w = c / 64;
    const std::uint64_t sbit = std::uint64_t{1} << (w % 64);
    summary_[w / 64] = word ? summary_[w / 64] | sbit : summary_[w / 64] & ~sbit;
  }
  // The first set bit at or after `from` in `bits` (kNone if none).
  template <std::size_t N>
  static std::size_t first_set(const std::array<std::uint64_t, N>& bits, std::size_t from) {
    for (std::size_t i = from / 64; i < N && from < kNone; ++i) {
      const std::uint64_t word = i == from / 64 ? bits[i] & ~std::uint64_t{0} << (from % 64) : bits[i];
      if (word) return i * 64 + static_cast<std::size_t>(std::countr_zero(word));
    }
    return kNone;
  }

  bool by_class_;
  ChunkedSet<FreeKey> sorted_;
  std::vector<std::vector<AddressKey>> classes_;  // by class: a min-heap of its blocks
  std::vector<int> place_;                        // by block id: its place in its class's heap (-1: none)
  std::array<std::uint64_t, kWords> bits_{};
  std::array<std::uint64_t, (kWords + 63) / 64> summary_{};
};

}  // namespace nnmem::detail
