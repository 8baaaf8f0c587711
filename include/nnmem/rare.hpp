// Rare<T>: an optional value kept on the heap, for what most instances of a struct leave out.
#pragma once

#include <memory>
#include <utility>

namespace nnmem {

/// An optional value kept on the heap: a pointer's 8 bytes while absent, where a std::optional
/// takes the value's size whether it is there or not. For the keys most spec entries leave out
/// and the sharing, ties and checkpointing most layers have none of: a model of 100,000 layers
/// holds 100,000 of each at once. Copies copy the value.
template <class T>
class Rare {
 public:
  Rare() = default;
  Rare(T value) : p_(std::make_unique<T>(std::move(value))) {}
  Rare(const Rare& other) : p_(other.p_ ? std::make_unique<T>(*other.p_) : nullptr) {}
  Rare(Rare&&) noexcept = default;
  Rare& operator=(const Rare& other) { return *this = Rare(other); }
  Rare& operator=(Rare&&) noexcept = default;
  explicit operator bool() const { return p_ != nullptr; }
  const T& operator*() const { return *p_; }
  const T* operator->() const { return p_.get(); }
  /// The value, to change: a default one is made first when there is none.
  T& edit() {
    if (!p_) p_ = std::make_unique<T>();
    return *p_;
  }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace nnmem
