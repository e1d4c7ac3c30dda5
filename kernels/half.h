// reduce-tune: the 2-byte floats on the host (bf16 and f16 as bit patterns): exact widening and
// correctly rounded narrowing, for the CPU reference, the host finish and the tests. The kernels
// convert with their own code (templates/common.cuh); nothing here needs the CUDA headers.
#pragma once

#include "reduce_tune/config.h"
#include "reduce_tune/element.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <ostream>
#include <type_traits>

namespace reduce_tune {

/// The value of a bf16 or f16 bit pattern (exact: every such value is a float; an f16 NaN
/// becomes float's quiet NaN of its sign). Inline: the CPU reference widens every element.
inline float widen_half(std::uint16_t bits, DType dtype) {
  if (dtype == DType::bf16) return std::bit_cast<float>(std::uint32_t(bits) << 16);
  const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16, exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | (mant ? 0x7fc00000u : 0x7f800000u));
  if (exp == 0) { // subnormal: mant * 2^-24, exact in float
    const float v = float(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13)); // rebiased from 15 to 127
}
/// `v` rounded to bf16 or f16, to nearest with ties to even, in one step (no double rounding
/// through float); beyond the largest finite value the result is an infinity, NaN stays NaN
/// (quiet, sign kept).
std::uint16_t narrow_half(double v, DType dtype);
/// Unit roundoff of bf16 (2^-8) and f16 (2^-11): |narrow(v) - v| <= u |v| for v in the normal range.
double half_unit_roundoff(DType dtype);
/// Half the spacing of the subnormals, the largest rounding error below the normal range: 2^-134
/// for bf16, 2^-25 for f16.
double half_subnormal_error(DType dtype);

/// A bf16 or f16 value held as its bit pattern; explicit conversions to and from double.
template <DType D> struct HalfFloat {
  static_assert(D == DType::bf16 || D == DType::f16);
  static constexpr DType dtype = D;
  std::uint16_t bits; // trivial, so that arrays of it are plain bytes (HalfFloat{} is 0)
  HalfFloat() = default;
  explicit HalfFloat(double v) : bits(narrow_half(v, D)) {}
  static HalfFloat from_bits(std::uint16_t b) {
    HalfFloat h;
    h.bits = b;
    return h;
  }
  explicit operator float() const { return widen_half(bits, D); }
  explicit operator double() const { return widen_half(bits, D); }
  HalfFloat operator-() const { return from_bits(std::uint16_t(bits ^ 0x8000u)); }
  /// IEEE comparison of the values (-0 == +0, NaN unequal to everything).
  friend bool operator==(HalfFloat a, HalfFloat b) { return float(a) == float(b); }
  friend bool operator!=(HalfFloat a, HalfFloat b) { return !(a == b); }
};
using bf16_t = HalfFloat<DType::bf16>;
using f16_t = HalfFloat<DType::f16>;

/// The library's own 2-byte floats in the typed helpers too (the same bits as __nv_bfloat16 and
/// __half).
template <DType D> struct element_dtype<HalfFloat<D>> {
  static constexpr bool defined = true;
  static constexpr DType value = D;
};

template <DType D> std::ostream& operator<<(std::ostream& o, HalfFloat<D> h) {
  return o << float(h);
}

template <typename T> struct is_half_float : std::false_type {};
template <DType D> struct is_half_float<HalfFloat<D>> : std::true_type {};
template <typename T> inline constexpr bool is_half_float_v = is_half_float<T>::value;

/// Floating point, the host's own or a 2-byte one.
template <typename T>
inline constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_half_float_v<T>;
/// What the kernels combine T in: float for the 2-byte floats, T itself otherwise.
template <typename T> using acc_t = std::conditional_t<is_half_float_v<T>, float, T>;
/// x as acc_t<T> (exact).
template <typename T> acc_t<T> widen(T x) { return static_cast<acc_t<T>>(x); }

} // namespace reduce_tune

/// numeric_limits for the 2-byte floats, so identity<T>() and printing work as for float.
template <reduce_tune::DType D> class std::numeric_limits<reduce_tune::HalfFloat<D>> {
  using H = reduce_tune::HalfFloat<D>;
  static constexpr bool bf = D == reduce_tune::DType::bf16;

public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = bf ? 8 : 11;
  static constexpr int max_digits10 = bf ? 4 : 5;
  static H infinity() { return H::from_bits(bf ? 0x7f80 : 0x7c00); }
  static H quiet_NaN() { return H::from_bits(bf ? 0x7fc0 : 0x7e00); }
  static H max() { return H::from_bits(bf ? 0x7f7f : 0x7bff); }
  static H lowest() { return H::from_bits(bf ? 0xff7f : 0xfbff); }
  static H min() { return H::from_bits(bf ? 0x0080 : 0x0400); }
  static H epsilon() { return H::from_bits(bf ? 0x3c00 : 0x1400); }
};
