// reduce-tune: min and max without a branch an element (tuner/min_max_fold.h). Compiled with the
// vectoriser on (CMakeLists.txt): the default -O2 of GCC 12 vectorises none of these loops.
#include "tuner/min_max_fold.h"

#include "kernels/values.h"

namespace reduce_tune {
namespace {

// The elements' bits (a HostArray's bytes, so read as integers of their size).
template <typename T> const typename MinMaxKey<T>::U* bits_of(const T* x) {
  return reinterpret_cast<const typename MinMaxKey<T>::U*>(x);
}

// k folded into m, as min or max.
template <bool Min, typename K> K fold(K m, K k) {
  if constexpr (Min) return k < m ? k : m;
  else return k > m ? k : m;
}

// A NaN is found by the largest magnitude's bits, past infinity's: a second reduction of the
// same width as the keys', which vectorises where a flag would not.
template <bool Min, typename T> MinMaxFold<T> fold_range(const T* x, std::uint64_t len) {
  using M = MinMaxKey<T>;
  MinMaxFold<T> f{M::identity(Min)};
  if constexpr (!is_float_like_v<T>) {
    for (std::uint64_t i = 0; i < len; ++i) f.key = fold<Min>(f.key, x[i]);
  } else {
    using U = typename M::U;
    const U* b = bits_of(x);
    U top = 0;
    for (std::uint64_t i = 0; i < len; ++i) {
      f.key = fold<Min>(f.key, M::flip(b[i]));
      top = fold<false>(top, U(b[i] & M::kMagnitude));
    }
    f.nan = top > M::kInfinity;
  }
  return f;
}

template <bool Min, typename T>
bool fold_columns(const T* x, std::uint64_t stride, std::uint64_t rows, std::uint64_t cols,
                  typename MinMaxKey<T>::Key* keys) {
  using M = MinMaxKey<T>;
  if constexpr (!is_float_like_v<T>) {
    for (std::uint64_t r = 0; r < rows; ++r) {
      const T* row = x + r * stride;
      for (std::uint64_t c = 0; c < cols; ++c) keys[c] = fold<Min>(keys[c], row[c]);
    }
    return false;
  } else {
    using U = typename M::U;
    U top = 0;
    for (std::uint64_t r = 0; r < rows; ++r) {
      const U* row = bits_of(x + r * stride);
      for (std::uint64_t c = 0; c < cols; ++c) {
        keys[c] = fold<Min>(keys[c], M::flip(row[c]));
        top = fold<false>(top, U(row[c] & M::kMagnitude));
      }
    }
    return top > M::kInfinity;
  }
}

} // namespace

template <typename T> MinMaxFold<T> fold_min_max(const T* x, std::uint64_t len, bool min) {
  return min ? fold_range<true>(x, len) : fold_range<false>(x, len);
}

template <typename T>
bool fold_min_max_columns(const T* x, std::uint64_t stride, std::uint64_t rows, std::uint64_t cols, bool min,
                          typename MinMaxKey<T>::Key* keys) {
  return min ? fold_columns<true>(x, stride, rows, cols, keys) : fold_columns<false>(x, stride, rows, cols, keys);
}

#define RT_MIN_MAX_FOLD(T)                                                                                   \
  template MinMaxFold<T> fold_min_max<T>(const T*, std::uint64_t, bool);                                     \
  template bool fold_min_max_columns<T>(const T*, std::uint64_t, std::uint64_t, std::uint64_t, bool,          \
                                        MinMaxKey<T>::Key*);
RT_MIN_MAX_FOLD(std::int32_t)
RT_MIN_MAX_FOLD(std::uint32_t)
RT_MIN_MAX_FOLD(std::int64_t)
RT_MIN_MAX_FOLD(float)
RT_MIN_MAX_FOLD(double)
RT_MIN_MAX_FOLD(bf16_t)
RT_MIN_MAX_FOLD(f16_t)
#undef RT_MIN_MAX_FOLD

} // namespace reduce_tune
