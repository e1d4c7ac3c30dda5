// reduce-tune: min and max of many elements without a branch an element, for the CPU reference
// (tuner/reference_acc.h): loops that vectorise, compiled apart with the optimiser's vectoriser on
// (tuner/min_max_fold.cpp). A reference of min over 2^24 float32 elements, one core: 18 ms by
// combine() an element, 6.5 ms here.
#pragma once

#include "kernels/half.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace reduce_tune {

/// An element's key: an integer of its size ordered as IEEE 754-2019 minimum and maximum order the
/// numbers (-0.0 below +0.0; integers: the element itself). NaNs are not ordered by it: a range
/// that holds one is folded element by element instead, for combine's NaN.
template <typename T, typename = void> struct MinMaxKey {
  using Key = T;
  static T value(Key k) { return k; }
  static Key identity(bool min) { return min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest(); }
};
template <typename T> struct MinMaxKey<T, std::enable_if_t<is_float_like_v<T>>> {
  using U = std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
  using Key = std::make_signed_t<U>;
  static constexpr U kMagnitude = U(~U(0)) >> 1;
  static constexpr U kInfinity = std::is_same_v<T, bf16_t> ? U(0x7f80)
                                 : std::is_same_v<T, f16_t> ? U(0x7c00)
                                 : sizeof(T) == 4           ? U(0x7f800000u)
                                                            : U(0x7ff0000000000000ull);
  /// A negative number's magnitude bits flipped: -0.0 is -1, +0.0 0. Its own inverse.
  static Key flip(U b) { return Key(b ^ (U(Key(b) >> (8 * sizeof(U) - 1)) & kMagnitude)); }
  static T value(Key k) {
    const U b = U(flip(U(k)));
    if constexpr (is_half_float_v<T>) return T::from_bits(b);
    else return std::bit_cast<T>(b);
  }
  static Key identity(bool min) { return min ? std::numeric_limits<Key>::max() : std::numeric_limits<Key>::lowest(); }
};

/// The min or max of a range as a key, and whether the range holds a NaN (then `key` is not it).
template <typename T> struct MinMaxFold {
  typename MinMaxKey<T>::Key key;
  bool nan = false;
};

/// min (`min`) or max of x[0, len).
template <typename T> MinMaxFold<T> fold_min_max(const T* x, std::uint64_t len, bool min);

/// Columns [0, cols) of rows [0, rows) of x (rows `stride` elements apart) folded into keys[0,
/// cols) (which hold the keys so far); returns whether any of those elements is a NaN.
template <typename T>
bool fold_min_max_columns(const T* x, std::uint64_t stride, std::uint64_t rows, std::uint64_t cols, bool min,
                          typename MinMaxKey<T>::Key* keys);

} // namespace reduce_tune
