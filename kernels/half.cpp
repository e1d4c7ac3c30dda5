// reduce-tune: bf16 and f16 on the host.
#include "kernels/half.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace reduce_tune {
namespace {

struct Format {
  int mant;  ///< stored mantissa bits
  int bias;  ///< exponent bias; the exponent field has bias * 2 + 1 as its all-ones value
};
Format format(DType d) { return d == DType::bf16 ? Format{7, 127} : Format{10, 15}; }

} // namespace

std::uint16_t narrow_half(double v, DType dtype) {
  const Format f = format(dtype);
  const int exp_bits = dtype == DType::bf16 ? 8 : 5;
  const std::uint16_t sign = std::signbit(v) ? 0x8000u : 0;
  const std::uint16_t inf = std::uint16_t(((1u << exp_bits) - 1) << f.mant);
  if (std::isnan(v)) return std::uint16_t(sign | inf | (1u << (f.mant - 1))); // quiet NaN
  // The normal binades of the type, straight from the bits: the fraction's top `mant` bits, rounded
  // to nearest (ties to even) by the rest; a carry moves into the exponent, out of the largest
  // binade to the infinity's pattern, as rounding to nearest overflows.
  const auto bits = std::bit_cast<std::uint64_t>(v);
  const int e = int((bits >> 52) & 0x7ffu) - 1023;
  if (e >= 1 - f.bias && e <= f.bias) {
    const int drop = 52 - f.mant;
    const std::uint64_t fraction = bits & ((std::uint64_t(1) << 52) - 1);
    const std::uint64_t rest = fraction & ((std::uint64_t(1) << drop) - 1), half = std::uint64_t(1) << (drop - 1);
    std::uint64_t field = (std::uint64_t(e + f.bias) << f.mant) | (fraction >> drop);
    if (rest > half || (rest == half && (field & 1))) ++field;
    return std::uint16_t(sign | field);
  }
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | inf;
  if (a == 0) return sign;
  // The spacing of the representable values around a: 2^(E - mant) in a's binade
  // [2^E, 2^(E+1)), and that of the subnormals below the smallest normal 2^(1 - bias).
  int e2 = 0;
  std::frexp(a, &e2); // a = m 2^e2, m in [0.5, 1): E = e2 - 1
  const int emin = 1 - f.bias;
  const int quantum_exp = std::max(e2 - 1, emin) - f.mant;
  // a / quantum is exact (a power-of-two scaling); nearbyint rounds to nearest, ties to even
  // (the default rounding mode), so the value is rounded once.
  const double q = std::nearbyint(std::ldexp(a, -quantum_exp));
  const double r = std::ldexp(q, quantum_exp);
  const double max_finite = std::ldexp(double((2u << f.mant) - 1), f.bias - f.mant);
  if (r > max_finite) return sign | inf;
  if (r < std::ldexp(1.0, emin)) return std::uint16_t(sign | std::uint16_t(q)); // subnormal (or 0)
  int er = 0;
  const double m = std::frexp(r, &er); // r = m 2^er, m in [0.5, 1)
  const auto mant = std::uint32_t(std::ldexp(m, f.mant + 1)) & ((1u << f.mant) - 1);
  const auto field = std::uint32_t(er - 1 + f.bias);
  return std::uint16_t(sign | (field << f.mant) | mant);
}

double half_unit_roundoff(DType dtype) { return std::ldexp(1.0, dtype == DType::bf16 ? -8 : -11); }
double half_subnormal_error(DType dtype) { return std::ldexp(1.0, dtype == DType::bf16 ? -134 : -25); }

} // namespace reduce_tune
