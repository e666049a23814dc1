// isa::SmallVector<T, N>: a vector of trivially copyable T that keeps up to N elements inline (no
// heap allocation) and spills to the heap beyond. Instruction dependency lists use it: 98% of
// the instructions of a BERT training step have at most 3 deps, and a data-parallel compile
// copies every instruction once per replica, so inline storage makes those copies allocation-free.
//
// The API is the subset of std::vector that programs need: construction from an initializer
// list, an iterator range or a std::vector; push_back, insert, assign, clear, reserve, resize,
// size/empty/data, begin/end, operator[], front/back, ==. Iterators are pointers; as with
// std::vector, growing invalidates them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

namespace tpusim::isa {

template <class T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SmallVector copies its elements with memcpy");
  static_assert(N > 0);

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() noexcept = default;
  SmallVector(std::initializer_list<T> il) { assign(il.begin(), il.end()); }
  template <std::input_iterator It>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(const std::vector<T>& v) { assign(v.begin(), v.end()); }
  SmallVector(const SmallVector& o) { copy_from(o); }
  SmallVector(SmallVector&& o) noexcept { steal(o); }
  ~SmallVector() { release(); }

  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      if (o.size_ <= cap_) {  // fits: reuse our storage
        std::memcpy(data(), o.data(), o.size_ * sizeof(T));
        size_ = o.size_;
      } else {
        release();
        copy_from(o);
      }
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> il) {
    assign(il.begin(), il.end());
    return *this;
  }

  template <std::input_iterator It>
  void assign(It first, It last) {
    size_ = 0;
    insert(end(), first, last);
  }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return cap_; }
  T* data() noexcept { return is_inline() ? inline_ : heap_; }
  const T* data() const noexcept { return is_inline() ? inline_ : heap_; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }
  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }

  void clear() noexcept { size_ = 0; }
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void resize(size_t n, const T& v = T()) {
    reserve(n);
    std::fill(data() + size_, data() + n, v);
    size_ = uint32_t(n);
  }
  void push_back(const T& v) {
    if (size_ == cap_) {
      const T copy = v;  // v may live in our storage
      grow(size_ + 1);
      data()[size_++] = copy;
      return;
    }
    data()[size_++] = v;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() noexcept { --size_; }

  iterator insert(const_iterator pos, const T& v) {
    const T copy = v;  // v may live in our storage
    return insert(pos, &copy, &copy + 1);
  }
  iterator insert(const_iterator pos, std::initializer_list<T> il) { return insert(pos, il.begin(), il.end()); }
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = size_t(pos - begin());
    if constexpr (std::forward_iterator<It>) {
      const size_t n = size_t(std::distance(first, last));
      T* old = data();
      if (size_ + n > cap_) {  // new storage: prefix, the range, suffix
        const size_t cap = std::max<size_t>(size_ + n, 2 * size_t(cap_));
        T* p = static_cast<T*>(::operator new(cap * sizeof(T)));
        std::memcpy(p, old, at * sizeof(T));
        std::copy(first, last, p + at);
        std::memcpy(p + at + n, old + at, (size_ - at) * sizeof(T));
        if (!is_inline()) ::operator delete(heap_);
        heap_ = p;
        cap_ = uint32_t(cap);
      } else {
        std::memmove(old + at + n, old + at, (size_ - at) * sizeof(T));
        std::copy(first, last, old + at);
      }
      size_ += uint32_t(n);
    } else {
      for (size_t i = at; first != last; ++first, ++i) insert(begin() + i, T(*first));
    }
    return begin() + at;
  }
  iterator erase(const_iterator first, const_iterator last) noexcept {
    T* p = begin() + (first - begin());
    const size_t n = size_t(last - first);
    std::memmove(p, p + n, size_t(end() - (p + n)) * sizeof(T));
    size_ -= uint32_t(n);
    return p;
  }
  iterator erase(const_iterator pos) noexcept { return erase(pos, pos + 1); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) noexcept {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const SmallVector& a, const std::vector<T>& b) noexcept {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  bool is_inline() const noexcept { return cap_ == N; }
  void copy_from(const SmallVector& o) {
    size_ = o.size_;
    if (o.is_inline()) {
      cap_ = N;
      std::memcpy(inline_, o.inline_, sizeof inline_);
    } else {
      cap_ = o.size_ > N ? o.size_ : N;
      if (cap_ > N) heap_ = static_cast<T*>(::operator new(cap_ * sizeof(T)));
      std::memcpy(data(), o.heap_, o.size_ * sizeof(T));
    }
  }
  void steal(SmallVector& o) noexcept {
    std::memcpy(static_cast<void*>(this), static_cast<const void*>(&o), sizeof *this);
    o.size_ = 0;
    o.cap_ = N;
  }
  void release() noexcept {
    if (!is_inline()) ::operator delete(heap_);
    size_ = 0;
    cap_ = N;
  }
  void grow(size_t need) {
    size_t cap = std::max<size_t>(need, 2 * size_t(cap_));
    T* p = static_cast<T*>(::operator new(cap * sizeof(T)));
    std::memcpy(p, data(), size_ * sizeof(T));
    if (!is_inline()) ::operator delete(heap_);
    heap_ = p;
    cap_ = uint32_t(cap);
  }

  uint32_t size_ = 0;
  uint32_t cap_ = N;  // N: the elements are inline; more: on the heap
  union {
    T inline_[N] = {};
    T* heap_;
  };
};

}  // namespace tpusim::isa
