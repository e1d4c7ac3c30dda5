// reduce-tune: the element type and the scalar helpers every op description uses. The host
// prepends a header that defines T (the element type), RT_DTYPE_* and RT_HALF (bf16 and f16,
// stored as unsigned short); then comes this file, then the op's description (kernels/ops.cpp:
// the accumulator A, the result type R, rt_identity, rt_map, rt_combine, rt_post and the traits
// the generic code reads), then common.cuh and the variant's template. No CUDA header is
// included: the conversions are PTX (and integer rounding for bf16 before sm_80), so any NVRTC
// compiles them.

typedef unsigned long long rt_size;

// ---- element <-> float ---------------------------------------------------------------------

// rt_widen: an element as the type it is combined in (float for bf16 and f16: exact);
// rt_narrow: back to the element type (rounded once).

#if defined(RT_HALF)
typedef float rt_wide;
#else
typedef T rt_wide;
#endif

#if defined(RT_DTYPE_BF16)
// bf16 is the upper half of a float: widening is a shift.
__device__ __forceinline__ rt_wide rt_widen(T x) { return __uint_as_float(unsigned(x) << 16); }
__device__ __forceinline__ T rt_narrow(rt_wide v) {
#if __CUDA_ARCH__ >= 800
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
#else
  // Round to nearest even on the bit pattern; a NaN stays a (quiet) NaN.
  const unsigned u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}
#elif defined(RT_DTYPE_F16)
__device__ __forceinline__ rt_wide rt_widen(T x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
}
__device__ __forceinline__ T rt_narrow(rt_wide v) {
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
}
#else
__device__ __forceinline__ rt_wide rt_widen(T x) { return x; }
__device__ __forceinline__ T rt_narrow(rt_wide v) { return v; }
#endif
// ---- IEEE minimum and maximum ----------------------------------------------------------------

// Floating-point min and max are IEEE 754-2019 minimum and maximum: a NaN operand gives a NaN (the
// first operand's when both are, so a CAS loop that finds a NaN in memory leaves it; on sm_80+ the
// canonical NaN for float accumulators), and -0.0 is
// below +0.0 (equal operands: their bits OR-ed for min, AND-ed for max). Every order of combining
// then gives the same value, whichever kernel, tail or atomic finish (kernels/values.h agrees).
__device__ __forceinline__ float rt_zero_tie(float a, float b, bool min) {
  const unsigned x = __float_as_uint(a), y = __float_as_uint(b);
  return __uint_as_float(min ? x | y : x & y);
}
__device__ __forceinline__ double rt_zero_tie(double a, double b, bool min) {
  const long long x = __double_as_longlong(a), y = __double_as_longlong(b);
  return __longlong_as_double(min ? x | y : x & y);
}
// Selects, not branches: a branch between loads keeps the compiler from issuing them together
// (float64 max over rows of 4 elements with evict-first loads took 1.6x the plain loads' time on
// an H100 when this returned early).
template <bool Min, typename F> __device__ __forceinline__ F rt_float_min_max(F a, F b) {
  F r = (b < a) == Min ? b : a;
  r = a == b ? rt_zero_tie(a, b, Min) : r; // equal bits, or +0.0 and -0.0
  r = b != b ? b : r;
  return a != a ? a : r;
}
#if __CUDA_ARCH__ >= 800
// sm_80+: one instruction, with the same meaning (PTX min/max.NaN: a NaN operand gives the
// canonical NaN, and +0.0 is above -0.0), where the code above takes about ten per element.
template <> __device__ __forceinline__ float rt_float_min_max<true, float>(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <> __device__ __forceinline__ float rt_float_min_max<false, float>(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif
