// reduce-tune: host byte buffers that resize without writing, for inputs and results of up to
// 1 GiB: std::vector<unsigned char> zeroes new bytes on the resizing thread (and faults in every
// page there) before the code that fills them writes them again, on its own threads.
#pragma once

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace reduce_tune {

/// An allocator whose containers leave new elements default-initialised: resize(n) of bytes writes
/// nothing (resize(n, v) and assign still fill). A host buffer of up to 1 GiB is then written only
/// by what fills it, on that code's threads, not first zeroed (and its pages faulted in) on one.
template <typename T> struct DefaultInitAllocator : std::allocator<T> {
  template <typename U> struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U> DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U, typename... A> void construct(U* p, A&&... a) {
    if constexpr (sizeof...(A) == 0) ::new (static_cast<void*>(p)) U;
    else ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
/// Host bytes that resize(n) leaves unwritten: whoever resizes must write every byte it keeps.
using HostBytes = std::vector<unsigned char, DefaultInitAllocator<unsigned char>>;

} // namespace reduce_tune
