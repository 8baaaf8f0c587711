// SmallVector<T, N>: a std::vector that holds up to N elements in the object itself and moves
// them to the heap only beyond that. The graph has a handful of tiny per-node lists (a layer's
// inputs, outputs, parameters: one or two each); as std::vectors they were an allocation each,
// about a fifth of a small model's estimate's mallocs (bench/README.md, "Small vectors inline").
// nnmem::Shape is one too (four dimensions inline: "Shapes inline").
//
// The API is std::vector's, as far as nnmem uses it: element access, iterators (plain pointers),
// push_back/emplace_back/pop_back, insert/erase, resize/reserve/clear/assign, construction from a
// count, an iterator range or a braced list, ==, <=>. Differences: iterators, pointers and
// references are invalidated by a move or swap of the container too while the elements are
// inline; capacity() is never below N; shrink_to_fit and allocators are not offered; at most
// 2^32 - 1 elements. The object is small: the size and capacity in 32 bits each, and the heap
// block's pointer in the bytes the inline elements would take (a capacity above N says which),
// so SmallVector<int, 2> is 16 bytes (a std::vector<int> is 24) and a Shape 40.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace nnmem {

template <typename T, std::size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs room for at least one element inline");
  static_assert(N <= std::numeric_limits<std::uint32_t>::max());

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  static constexpr size_type inline_capacity = N;

  SmallVector() noexcept {}
  explicit SmallVector(size_type count) : SmallVector() { resize(count); }
  SmallVector(size_type count, const T& value) : SmallVector() { assign(count, value); }
  template <std::input_iterator It>
  SmallVector(It first, It last) : SmallVector() { assign(first, last); }
  SmallVector(std::initializer_list<T> list) : SmallVector() { assign(list.begin(), list.end()); }

  SmallVector(const SmallVector& other) : SmallVector() { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) : SmallVector() {
    take(std::move(other));
  }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      clear();
      release();
      take(std::move(other));
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> list) {
    assign(list.begin(), list.end());
    return *this;
  }
  ~SmallVector() {
    clear();
    release();
  }

  // Element access.
  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }
  T& at(size_type i) { return data()[checked(i)]; }
  const T& at(size_type i) const { return data()[checked(i)]; }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }
  T* data() noexcept { return is_inline() ? inline_data() : heap_; }
  const T* data() const noexcept { return is_inline() ? inline_data() : heap_; }

  // Iterators.
  iterator begin() noexcept { return data(); }
  const_iterator begin() const noexcept { return data(); }
  const_iterator cbegin() const noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cend() const noexcept { return data() + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  // Capacity.
  bool empty() const noexcept { return size_ == 0; }
  size_type size() const noexcept { return size_; }
  size_type capacity() const noexcept { return capacity_; }
  static constexpr size_type max_size() noexcept { return std::numeric_limits<std::uint32_t>::max(); }
  /// Whether the elements are held in the object itself (no heap block).
  bool is_inline() const noexcept { return capacity_ == N; }
  void reserve(size_type wanted) {
    if (wanted > capacity_) reallocate(wanted);
  }

  // Modifiers.
  void clear() noexcept {
    std::destroy(begin(), end());
    size_ = 0;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) return grow_and_emplace_back(std::forward<Args>(args)...);
    T* slot = std::construct_at(data() + size_, std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() noexcept {
    --size_;
    std::destroy_at(data() + size_);
  }

  // Insertion appends at the end and rotates the new elements into place: one code path for
  // every element type, and no aliasing trouble when the value is one of the elements.
  template <typename... Args>
  iterator emplace(const_iterator pos, Args&&... args) {
    const auto offset = pos - begin();
    emplace_back(std::forward<Args>(args)...);
    std::rotate(begin() + offset, end() - 1, end());
    return begin() + offset;
  }
  iterator insert(const_iterator pos, const T& value) { return emplace(pos, value); }
  iterator insert(const_iterator pos, T&& value) { return emplace(pos, std::move(value)); }
  iterator insert(const_iterator pos, size_type count, const T& value) {
    const auto offset = pos - begin();
    const auto old = size_;
    if (count > 0) {
      const T copy(value);  // value may be an element, moved by the reserve
      reserve(grown(size_ + count));
      for (size_type k = 0; k < count; ++k) emplace_back(copy);
    }
    std::rotate(begin() + offset, begin() + old, end());
    return begin() + offset;
  }
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const auto offset = pos - begin();
    const auto old = size_;
    if constexpr (std::forward_iterator<It>) reserve(grown(size_ + std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
    std::rotate(begin() + offset, begin() + old, end());
    return begin() + offset;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> list) { return insert(pos, list.begin(), list.end()); }

  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    T* from = begin() + (first - begin());
    if (first != last) {
      T* new_end = std::move(begin() + (last - begin()), end(), from);
      std::destroy(new_end, end());
      size_ = static_cast<std::uint32_t>(new_end - begin());
    }
    return from;
  }

  void resize(size_type count) { resize_with(count, [](T* p) { std::construct_at(p); }); }
  void resize(size_type count, const T& value) {
    if (count <= size_) return resize(count);
    const T copy(value);
    resize_with(count, [&](T* p) { std::construct_at(p, copy); });
  }

  void assign(size_type count, const T& value) {
    const T copy(value);
    clear();
    reserve(count);
    for (size_type k = 0; k < count; ++k) emplace_back(copy);
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    clear();
    if constexpr (std::forward_iterator<It>) reserve(static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }
  void assign(std::initializer_list<T> list) { assign(list.begin(), list.end()); }

  void swap(SmallVector& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    SmallVector tmp(std::move(other));
    other = std::move(*this);
    *this = std::move(tmp);
  }
  friend void swap(SmallVector& a, SmallVector& b) noexcept(noexcept(a.swap(b))) { a.swap(b); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend auto operator<=>(const SmallVector& a, const SmallVector& b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* inline_data() noexcept { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const noexcept { return std::launder(reinterpret_cast<const T*>(inline_)); }

  size_type checked(size_type i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at: index out of range");
    return i;
  }

  /// The capacity to grow to for `wanted` elements: at least double, as std::vector grows, so
  /// that appending one at a time stays amortized constant.
  size_type grown(size_type wanted) const {
    if (wanted <= capacity_) return capacity_;
    if (wanted > max_size()) throw std::length_error("SmallVector: too many elements");
    return std::max<size_type>(wanted, std::min<size_type>(2 * size_type{capacity_}, max_size()));
  }

  /// Moves the elements into a heap block of `cap` elements (cap > capacity_).
  void reallocate(size_type cap) {
    if (cap > max_size()) throw std::length_error("SmallVector: too many elements");
    T* fresh = std::allocator<T>().allocate(cap);
    std::uninitialized_move(begin(), end(), fresh);
    adopt(fresh, cap);
  }

  /// The elements' old storage destroyed and freed; `fresh` (already holding them) is the new.
  void adopt(T* fresh, size_type cap) noexcept {
    std::destroy(begin(), end());
    release();
    heap_ = fresh;
    capacity_ = static_cast<std::uint32_t>(cap);
  }

  /// The new element is built in the new block before the old ones move, as the arguments may
  /// refer to one of them.
  template <typename... Args>
  T& grow_and_emplace_back(Args&&... args) {
    const size_type cap = grown(size_type{size_} + 1);
    T* fresh = std::allocator<T>().allocate(cap);
    try {
      std::construct_at(fresh + size_, std::forward<Args>(args)...);
    } catch (...) {
      std::allocator<T>().deallocate(fresh, cap);
      throw;
    }
    std::uninitialized_move(begin(), end(), fresh);
    adopt(fresh, cap);
    ++size_;
    return heap_[size_ - 1];
  }

  template <typename Construct>
  void resize_with(size_type count, Construct construct) {
    if (count < size_) {
      std::destroy(begin() + count, end());
    } else if (count > size_) {
      reserve(count);
      for (T* elements = data(); size_ < count; ++size_) construct(elements + size_);
      return;
    }
    size_ = static_cast<std::uint32_t>(count);
  }

  /// Frees a heap block (the elements already destroyed or moved out); back to inline storage.
  // GCC 12 at -O3 warns that heap_ and capacity_ "may be used uninitialized" here when it
  // inlines the destructor of a temporary in a braced push_back ({{shape, dtype}, "text"}): the
  // constructor always sets both, the warning is about a path that cannot happen.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  void release() noexcept {
    if (!is_inline()) std::allocator<T>().deallocate(heap_, capacity_);
    capacity_ = N;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  /// Takes other's elements: its heap block as it is, or its inline elements moved one by one.
  /// `this` is empty and inline; `other` is left empty.
  void take(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (other.is_inline()) {
      std::uninitialized_move(other.begin(), other.end(), inline_data());
      size_ = other.size_;
      other.clear();
    } else {
      heap_ = other.heap_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.size_ = 0;
      other.capacity_ = N;
    }
  }

  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = N;  // N: the elements are inline; above N: in heap_'s block
  union {
    T* heap_;
    alignas(T) unsigned char inline_[N * sizeof(T)];
  };
};

}  // namespace nnmem
