// reduce-tune: host values of any dtype and how they combine: what the launch path needs (the
// atomic finish's starting identity, the host finish, a call's result), apart from the CPU
// reference (tuner/reference.h), which the library never runs.
#pragma once

#include "kernels/half.h"
#include "kernels/host_bytes.h"
#include "kernels/ops.h"
#include "reduce_tune/config.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace reduce_tune {

/// One value of any supported dtype, held as its bit pattern.
struct Scalar {
  DType dtype = DType::f32;
  std::uint64_t bits = 0;

  template <typename T> static Scalar of(T v);
  template <typename T> T as() const;
  double to_double() const;
  std::string to_string() const;
  bool operator==(const Scalar&) const = default;
};

/// Calls f(T{}) with the C++ type of element dtype `d` (bf16_t and f16_t for the 2-byte floats:
/// kernels/half.h).
template <typename F> decltype(auto) visit(DType d, F&& f) {
  switch (d) {
  case DType::i32: return f(std::int32_t{});
  case DType::u32: return f(std::uint32_t{});
  case DType::i64: return f(std::int64_t{});
  case DType::f32: return f(float{});
  case DType::f64: return f(double{});
  case DType::bf16: return f(bf16_t{});
  case DType::f16: return f(f16_t{});
  case DType::u8: break; // a result type only: visit_value
  }
  return f(float{});
}
/// visit over every dtype a value may have: the element types and uint8 (any, all).
template <typename F> decltype(auto) visit_value(DType d, F&& f) {
  if (d == DType::u8) return f(std::uint8_t{});
  return visit(d, std::forward<F>(f));
}

/// How `op` combines two accumulators: add (sum, mean, sumsq, norm1, norm2, count_nonzero),
/// min (min; all, whose accumulators are 0 or 1) or max (max; any).
inline OpAtomic combine_kind(Op op) {
  if (op == Op::min || op == Op::all) return OpAtomic::min;
  if (op == Op::max || op == Op::any) return OpAtomic::max;
  return OpAtomic::add;
}

/// The identity of `op`'s combine on T, as the kernels' rt_identity(): 0 for the sums and any, 1
/// for all; for min the type's max (+infinity for floats), for max its lowest (-infinity).
template <typename T> T identity(Op op) {
  using L = std::numeric_limits<T>;
  if (op == Op::all) return T(1);
  if (op != Op::min && op != Op::max) return T(0);
  if constexpr (L::has_infinity) return op == Op::min ? L::infinity() : -L::infinity();
  else return op == Op::min ? L::max() : L::lowest();
}
/// The same for `dtype` (the accumulator's, or the result's where an atomic finish starts from
/// it), as a Scalar.
Scalar identity(DType dtype, Op op);
/// The result of reducing no elements (`result`: result_dtype of the op): the identity, except
/// NaN for mean, var and std (0 / 0, as torch), -infinity for logsumexp and -1 for argmax and
/// argmin (what an empty offsets segment gets; the calls refuse an empty reduction for those).
Scalar empty_result(Op op, DType result);

// In their own namespace, which argument-dependent lookup on an Op never reaches: a combine or a
// float_min_max of a file's own (the bench has both) stays unambiguous.
namespace host_ops {

/// IEEE 754-2019 minimum and maximum, as templates/common.cuh's rt_float_min_max: a NaN operand
/// gives a NaN (the first operand's when both are), -0.0 is below +0.0.
template <typename T> T float_min_max(T a, T b, bool min) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) { // equal bits, or +0.0 and -0.0: OR the bits for min (-0.0), AND them for max
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    const U x = std::bit_cast<U>(a), y = std::bit_cast<U>(b);
    return std::bit_cast<T>(min ? U(x | y) : U(x & y));
  }
  return (b < a) == min ? b : a;
}

/// a op b as the kernels combine two accumulators of T (an integer or a C++ float): integer sums
/// wrap.
template <typename T> T combine(T a, T b, Op op) {
  const OpAtomic kind = combine_kind(op);
  if constexpr (std::is_floating_point_v<T>) {
    if (kind != OpAtomic::add) return float_min_max(a, b, kind == OpAtomic::min);
    return a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    if (kind == OpAtomic::min) return std::min(a, b);
    if (kind == OpAtomic::max) return std::max(a, b);
    return T(U(a) + U(b)); // two's-complement wrap
  }
}

} // namespace host_ops

/// A host array of n elements of one dtype. `bytes` is HostBytes: resize it, then write all of it.
struct HostArray {
  DType dtype = DType::f32;
  std::uint64_t n = 0;
  HostBytes bytes;
  template <typename T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <typename T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
};

/// Combines partials (the op's accumulators: accumulator_dtype) on the host as a `host` finish
/// does, for the ops whose post-map is the plain conversion (OpTraits::host_combine): float sums
/// accumulate in double and round once to `result` (result_dtype); integers wrap.
Scalar combine_on_host(const HostArray& partials, std::uint64_t count, Op op, DType result);
inline Scalar combine_on_host(const HostArray& partials, std::uint64_t count, Op op) {
  return combine_on_host(partials, count, op, partials.dtype);
}

} // namespace reduce_tune
