// A vector that keeps its first N elements inline: an op's kernels and collectives per phase are
// almost always one or two, so building and freeing an op graph need no allocation for them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace trainsim {

template <class T, size_t N>
class SmallVector {
 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> init) { append(init.begin(), init.end()); }
  SmallVector(const SmallVector& o) { append(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { steal(o); }
  ~SmallVector() { reset(); }

  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      append(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      reset();
      steal(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> init) {
    clear();
    append(init.begin(), init.end());
    return *this;
  }

  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }

  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  template <class... A>
  T& emplace_back(A&&... args) {
    if (size_ == capacity_) {
      T tmp(std::forward<A>(args)...);  // the arguments may refer to an element
      grow(2 * size_t{capacity_});  // in 64 bits: doubling 2^31 must not wrap to 0
      return *::new (data_ + size_++) T(std::move(tmp));
    }
    return *::new (data_ + size_++) T(std::forward<A>(args)...);
  }
  void pop_back() { data_[--size_].~T(); }
  iterator erase(iterator pos) {
    std::move(pos + 1, end(), pos);
    pop_back();
    return pos;
  }
  void assign(size_t n, const T& v) {
    T copy(v);
    clear();
    if (n > capacity_) grow(n);
    for (size_t i = 0; i < n; ++i) ::new (data_ + size_++) T(copy);
  }
  void clear() {
    std::destroy(begin(), end());
    size_ = 0;
  }

 private:
  [[nodiscard]] T* local() { return reinterpret_cast<T*>(inline_); }
  [[nodiscard]] bool on_heap() const { return data_ != reinterpret_cast<const T*>(inline_); }

  void append(const T* first, const T* last) {
    const auto n = static_cast<size_t>(last - first);
    if (size_ + n > capacity_) grow(size_ + n);
    for (; first != last; ++first) ::new (data_ + size_++) T(*first);
  }
  void grow(size_t cap) {
    // The 32-bit size and capacity would wrap past this.
    if (cap > std::numeric_limits<uint32_t>::max()) throw std::length_error("SmallVector: more than 2^32 - 1 elements");
    T* fresh = static_cast<T*>(::operator new(cap * sizeof(T)));
    std::uninitialized_move(begin(), end(), fresh);
    std::destroy(begin(), end());
    if (on_heap()) ::operator delete(data_);
    data_ = fresh;
    capacity_ = static_cast<uint32_t>(cap);
  }
  // Destroys the elements and frees the heap block, back to the empty inline state.
  void reset() {
    clear();
    if (on_heap()) ::operator delete(data_);
    data_ = local();
    capacity_ = N;
  }
  // Takes `o`'s elements (its heap block, or moves its inline ones); `this` must be reset.
  void steal(SmallVector& o) noexcept {
    if (o.on_heap()) {
      data_ = o.data_;
      capacity_ = o.capacity_;
      size_ = o.size_;
      o.data_ = o.local();
      o.capacity_ = N;
      o.size_ = 0;
      return;
    }
    if constexpr (std::is_trivially_copyable_v<T>) {
      // One fixed-size copy of the inline block (kernels are moved with every leaf).
      std::memcpy(inline_, o.inline_, sizeof inline_);
      size_ = o.size_;
      o.size_ = 0;
      return;
    }
    std::uninitialized_move(o.begin(), o.end(), data_);
    size_ = o.size_;
    o.clear();
  }

  alignas(T) std::byte inline_[N * sizeof(T)];
  T* data_ = local();
  uint32_t size_ = 0;  // 32-bit sizes: a small vector holds far fewer elements, and is 8 bytes smaller
  uint32_t capacity_ = N;
};

}  // namespace trainsim
