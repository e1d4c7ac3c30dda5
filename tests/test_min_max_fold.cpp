// The CPU reference's min and max folded without a branch an element (tuner/min_max_fold.h)
// against combine() element by element: every dtype, signed zeros, infinities, NaNs, and every
// problem's loop.
#include <catch2/catch.hpp>

#include "kernels/values.h"
#include "reduce_tune/element.h"
#include "tuner/min_max_fold.h"
#include "tuner/reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace reduce_tune;

namespace {

// Random elements of T with the values min and max get wrong first: both zeros, both infinities,
// the extremes, subnormals (floats) and a few repeats.
template <typename T> std::vector<T> awkward(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng();
    if constexpr (is_float_like_v<T>) {
      const double pick[] = {0.0, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             1e-40, -1e-40, 65000.0, -65000.0, 3e38, -3e38};
      const double d = r % 4 == 0 ? pick[(r >> 8) % 10] : double(std::int64_t(r >> 11) - (1ll << 52)) / double(1ll << 40);
      v[i] = T(d);
    } else {
      std::memcpy(&v[i], &r, sizeof(T));
    }
  }
  return v;
}

template <typename T> T nan_of() {
  if constexpr (is_half_float_v<T>) return T(std::numeric_limits<double>::quiet_NaN());
  else return std::numeric_limits<T>::quiet_NaN();
}

// combine() element by element: the reference's definition of min and max.
template <typename T> acc_t<T> by_combine(const T* x, std::uint64_t n, std::uint64_t stride, Op op) {
  acc_t<T> a = identity(dtype_of<T>(), op).template as<acc_t<T>>();
  if constexpr (is_half_float_v<T>) a = float(identity(dtype_of<T>(), op).template as<T>());
  for (std::uint64_t i = 0; i < n; ++i) a = host_ops::combine(a, widen(x[i * stride]), op);
  return a;
}

template <typename T> bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

template <typename T> HostArray array_of(const std::vector<T>& v) {
  HostArray a;
  a.dtype = dtype_of<T>();
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

} // namespace

TEMPLATE_TEST_CASE("min/max fold: the keys' order is combine's, bit for bit", "[reference][minmax]", std::int32_t,
                   std::uint32_t, std::int64_t, float, double, bf16_t, f16_t) {
  using T = TestType;
  for (std::uint64_t n : {1ull, 2ull, 15ull, 16ull, 17ull, 1000ull, 4099ull})
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const std::vector<T> v = awkward<T>(n, seed * 977 + n);
      for (bool min : {true, false}) {
        INFO("n " << n << " seed " << seed << " min " << min);
        const MinMaxFold<T> f = fold_min_max(v.data(), n, min);
        CHECK_FALSE(f.nan);
        const T want = T(by_combine(v.data(), n, 1, min ? Op::min : Op::max));
        CHECK(same_bits(MinMaxKey<T>::value(f.key), want));
      }
    }
  if constexpr (is_float_like_v<T>) {
    std::vector<T> v = awkward<T>(100, 5);
    v[37] = nan_of<T>();
    CHECK(fold_min_max(v.data(), v.size(), true).nan);
    CHECK(fold_min_max(v.data(), v.size(), false).nan);
    v[37] = T(-nan_of<T>());
    CHECK(fold_min_max(v.data(), v.size(), true).nan);
  }
}

TEMPLATE_TEST_CASE("min/max fold: the references of every problem match combine, NaNs too", "[reference][minmax]",
                   std::int32_t, std::int64_t, float, double, bf16_t) {
  using T = TestType;
  std::vector<T> v = awkward<T>(64 * 300 + 5, 11);
  if constexpr (is_float_like_v<T>) v[64 * 7 + 20] = nan_of<T>(); // in row 7 and column 20 of the 64-wide views
  const HostArray a = array_of(v);
  for (Op op : {Op::min, Op::max}) {
    INFO(name(op));
    // The whole array.
    CHECK(same_bits(reference(a, op).value.template as<T>(), T(by_combine(v.data(), v.size(), 1, op))));
    // Rows and columns of a 300 x 64 matrix (row length 64: folded; a row of 8: element by element).
    for (std::uint64_t len : {64ull, 8ull}) {
      Segmentation rows;
      rows.problem = Problem::rows;
      rows.shape = {300 * 64 / len, len};
      rows.stride = len;
      const std::vector<Reference> r = segmented_reference(a, rows, op);
      for (std::uint64_t i = 0; i < rows.shape.count; ++i)
        if (!same_bits(r[i].value.template as<T>(), T(by_combine(v.data() + i * len, len, 1, op)))) FAIL("row " << i);
    }
    for (std::uint64_t cols : {64ull, 1ull, 2000ull}) { // a block of columns, fewer than cores, more than a block
      Segmentation c;
      c.problem = Problem::columns;
      c.shape = {cols, (300 * 64) / cols};
      c.stride = cols;
      const std::vector<Reference> r = segmented_reference(a, c, op);
      for (std::uint64_t j = 0; j < cols; ++j)
        if (!same_bits(r[j].value.template as<T>(), T(by_combine(v.data() + j, c.shape.length, cols, op))))
          FAIL(cols << " columns: column " << j);
    }
    Segmentation s;
    s.problem = Problem::segments;
    s.shape = {40, 300 * 64 / 40};
    s.offsets = skewed_offsets(40, 300 * 64, 3);
    const std::vector<Reference> r = segmented_reference(a, s, op);
    for (std::uint64_t i = 0; i < 40; ++i) {
      const std::uint64_t b = std::uint64_t(s.offsets[i]), len = s.length(i);
      if (!same_bits(r[i].value.template as<T>(), T(by_combine(v.data() + b, len, 1, op)))) FAIL("segment " << i);
    }
  }
}
