// host_array.hpp: gknn::HostArray<T>, the host storage of a Result (its distances and indices).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace gknn {

/// A contiguous host array of trivially copyable values with the part of std::vector<T>'s interface a result is
/// used through: data(), size(), iterators, operator[], at(), front()/back(), resize(), assign(), reserve(),
/// push_back(), clear(), swap(), comparison with another HostArray or a std::vector<T>, implicit conversion to
/// and from std::vector<T> (a copy). Like std::vector, a size given to a constructor or resize() gives
/// value-initialised (zero) elements.
///
/// The additions: for_overwrite(n) makes an array of n elements left uninitialised, for a producer that writes
/// every one of them. The searches allocate their Results so: a 10,000 x 2,048 result is 245 MB, and
/// value-initialising it first is a single-threaded pass over all of it before the search may write a row.
/// adopt() takes a block the library allocated elsewhere (the CUDA backend's page-locked memory, which its copies
/// from the device write into directly) with the function that gives it back; the array then owns it as any other
/// (moves carry it; a growth past its size moves the contents into an ordinary block and gives it back).
template <class T>
class HostArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "HostArray holds trivially copyable values");

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

  HostArray() noexcept = default;
  explicit HostArray(size_type n) { resize(n); }
  HostArray(size_type n, const T& value) { resize(n, value); }
  template <std::input_iterator It>
  HostArray(It first, It last) {
    assign(first, last);
  }
  HostArray(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  HostArray(const std::vector<T>& values) { assign(values.begin(), values.end()); }  // NOLINT: implicit by design
  HostArray(const HostArray& other) { assign(other.begin(), other.end()); }
  HostArray(HostArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)), releaser_(std::exchange(other.releaser_, nullptr)),
        held_bytes_(std::exchange(other.held_bytes_, 0)) {}
  ~HostArray() { release(); }

  HostArray& operator=(const HostArray& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  HostArray& operator=(HostArray&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
      releaser_ = std::exchange(other.releaser_, nullptr);
      held_bytes_ = std::exchange(other.held_bytes_, 0);
    }
    return *this;
  }
  HostArray& operator=(const std::vector<T>& values) {
    assign(values.begin(), values.end());
    return *this;
  }
  HostArray& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }

  /// n elements whose values are left uninitialised (whoever asks writes every one before reading any).
  static HostArray for_overwrite(size_type n) {
    HostArray a;
    a.resize_for_overwrite(n);
    return a;
  }

  /// Gives a block back: called once, with the block and the byte count adopt() was given, when the array lets it go.
  using Releaser = void (*)(void* block, std::size_t held_bytes) noexcept;
  /// An array of n elements (left as they are) in `block`, which holds at least n elements in `held_bytes`;
  /// `release` gives it back.
  static HostArray adopt(T* block, size_type n, std::size_t held_bytes, Releaser release) noexcept {
    HostArray a;
    a.data_ = block;
    a.size_ = a.capacity_ = n;
    a.releaser_ = release;
    a.held_bytes_ = held_bytes;
    return a;
  }

  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT: implicit by design

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  size_type size() const noexcept { return size_; }
  size_type capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }

  iterator begin() noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator end() const noexcept { return data_ + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  T& operator[](size_type i) noexcept { return data_[i]; }
  const T& operator[](size_type i) const noexcept { return data_[i]; }
  T& at(size_type i) { return data_[checked(i)]; }
  const T& at(size_type i) const { return data_[checked(i)]; }
  T& front() noexcept { return data_[0]; }
  const T& front() const noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }
  const T& back() const noexcept { return data_[size_ - 1]; }

  void reserve(size_type n) {
    if (n > capacity_) reallocate(n);
  }
  /// New elements are value-initialised (as std::vector's resize).
  void resize(size_type n) { resize(n, T()); }
  void resize(size_type n, const T& value) {
    const size_type old = size_;
    resize_for_overwrite(n);
    if (n > old) std::fill(data_ + old, data_ + n, value);
  }
  /// New elements are left uninitialised.
  void resize_for_overwrite(size_type n) {
    if (n > capacity_) reallocate(std::max(n, size_ + size_ / 2));
    size_ = n;
  }
  void assign(size_type n, const T& value) {
    size_ = 0;
    resize(n, value);
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    if constexpr (std::forward_iterator<It>) {
      const auto n = static_cast<size_type>(std::distance(first, last));
      if (n > capacity_) {  // nothing of the old contents is kept: no copy of it into the new block
        size_ = 0;
        reallocate(n);
      }
      std::copy(first, last, data_);
      size_ = n;
    } else {
      size_ = 0;
      for (; first != last; ++first) push_back(*first);
    }
  }
  void assign(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  void push_back(const T& value) {
    if (size_ == capacity_) reallocate(std::max<size_type>(8, 2 * capacity_));
    data_[size_++] = value;
  }
  void pop_back() noexcept { --size_; }
  void clear() noexcept { size_ = 0; }
  void swap(HostArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(releaser_, other.releaser_);
    std::swap(held_bytes_, other.held_bytes_);
  }
  friend void swap(HostArray& a, HostArray& b) noexcept { a.swap(b); }

  friend bool operator==(const HostArray& a, const HostArray& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const HostArray& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  size_type checked(size_type i) const {
    if (i >= size_) throw std::out_of_range("gknn::HostArray::at: index out of range");
    return i;
  }
  void reallocate(size_type n) {
    T* fresh = std::allocator<T>().allocate(n);
    if (size_ > 0) std::memcpy(static_cast<void*>(fresh), data_, size_ * sizeof(T));
    release();
    data_ = fresh;
    capacity_ = n;
  }
  void release() noexcept {
    if (data_ && releaser_) releaser_(data_, held_bytes_);
    else if (data_) std::allocator<T>().deallocate(data_, capacity_);
    data_ = nullptr;
    capacity_ = 0;
    releaser_ = nullptr;
    held_bytes_ = 0;
  }

  T* data_ = nullptr;
  size_type size_ = 0;
  size_type capacity_ = 0;
  Releaser releaser_ = nullptr;  ///< adopt()'s: how the block goes back (null: std::allocator's)
  std::size_t held_bytes_ = 0;   ///< adopt()'s byte count, for releaser_
};

}  // namespace gknn
