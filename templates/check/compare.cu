// reduce-tune: the fast pass of a segmented sweep's checked launch (tuner/fast_check.h). It
// decides on the device whether every result is right, so the host reads back two words instead
// of every result; where it finds a failure, the host reads the results back and the CPU check
// decides (and names the result), so nothing passes here that the CPU check would fail.
//
// The host prepends `typedef <unsigned integer of the result's size> B;` and, for a float result,
// one of RT_CHECK_F32, RT_CHECK_F64, RT_CHECK_BF16, RT_CHECK_F16. No CUDA header is needed.
//
// verdict[0]: the number of failing results; verdict[1]: the lowest failing index. The host sets
// them to 0 and ~0 before a launch.

typedef unsigned long long rt_u64;

// One warp's failures, counted and the lowest of them kept by its first lane: one pair of atomics
// a warp, not a result (a wrong configuration may fail every result).
__device__ __forceinline__ void rt_count(bool bad, rt_u64 base, rt_u64* verdict) {
  const unsigned m = __ballot_sync(0xffffffffu, bad);
  if (m && (threadIdx.x & 31u) == 0) {
    atomicAdd(&verdict[0], (rt_u64)__popc(m));
    atomicMin(&verdict[1], base + (rt_u64)(__ffs(m) - 1));
  }
}

// Every result i < n, a warp's 32 consecutive results at a time (so rt_count sees whole warps):
// bad_at(i) says whether result i fails.
template <typename BadAt>
__device__ __forceinline__ void rt_check_all(rt_u64 n, rt_u64* verdict, BadAt bad_at) {
  const rt_u64 stride = (rt_u64)gridDim.x * blockDim.x;
  for (rt_u64 base = (rt_u64)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n; base += stride) {
    const rt_u64 i = base + (threadIdx.x & 31u);
    rt_count(i < n && bad_at(i), base, verdict);
  }
}

#if defined(RT_CHECK_F32) || defined(RT_CHECK_F64) || defined(RT_CHECK_BF16) || defined(RT_CHECK_F16)
#define RT_CHECK_FLOAT 1

// A result as double (exact for every float dtype).
__device__ __forceinline__ double rt_to_double(B b) {
#if defined(RT_CHECK_F64)
  return __longlong_as_double((long long)b);
#elif defined(RT_CHECK_F32)
  return (double)__uint_as_float(b);
#elif defined(RT_CHECK_BF16)
  return (double)__uint_as_float((unsigned)b << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
  return (double)f;
#endif
}

// NaN by its bits: the exponent all ones and a mantissa.
__device__ __forceinline__ bool rt_nan_bits(B b) {
#if defined(RT_CHECK_F64)
  return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
#elif defined(RT_CHECK_F32)
  return (b & 0x7fffffffu) > 0x7f800000u;
#elif defined(RT_CHECK_BF16)
  return (b & 0x7fffu) > 0x7f80u;
#else
  return (b & 0x7fffu) > 0x7c00u;
#endif
}

__device__ __forceinline__ bool rt_isnan(double x) {
  return ((rt_u64)__double_as_longlong(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
__device__ __forceinline__ bool rt_isinf(double x) {
  return ((rt_u64)__double_as_longlong(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull;
}

// Whether a NaN or an infinity decides the comparison of g with e (*bad then says how): NaN matches
// NaN only, an infinity the same infinity, and a finite e no infinity.
__device__ __forceinline__ bool rt_nonfinite(double g, double e, bool* bad) {
  if (rt_isnan(e) || rt_isnan(g)) return *bad = !(rt_isnan(e) && rt_isnan(g)), true;
  if (rt_isinf(e) || rt_isinf(g)) return *bad = e != g, true;
  return false;
}
#endif

// Exact results (integers, min and max, counts, argmax's index, any and all): the same bits, or
// for floats both NaN (whatever their payloads), as the CPU check compares them.
extern "C" __global__ void rt_check_exact(const B* got, const B* want, rt_u64 n, rt_u64* verdict) {
  rt_check_all(n, verdict, [&](rt_u64 i) {
    const B g = got[i], w = want[i];
#if defined(RT_CHECK_FLOAT)
    if (g != w && rt_nan_bits(g) && rt_nan_bits(w)) return false;
#endif
    return g != w;
  });
}

#if defined(RT_CHECK_FLOAT)
// Whether a bounded result g fails |g - e| <= a scale + b |e| + c, the host's coefficients already
// a hair below the CPU check's bound. NaN matches NaN only, an infinity the same infinity (`e` is
// the infinity a finite exact value rounds to, where it does), and a finite `e` no infinity.
__device__ __forceinline__ bool rt_bound_bad(double g, double e, float scale, double a, double b, double c) {
  bool bad;
  if (rt_nonfinite(g, e, &bad)) return bad;
  return !(fabs(g - e) <= a * (double)scale + b * fabs(e) + c);
}

// std: `e` the standard deviation, v = e^2 its variance, whose bound is ev = a scale + b v; the
// bound is the spread of the square root over [v - ev, v + ev] plus the root's rounding u
// sqrt(v + ev), less 2^-50 sqrt(v + ev) for the two roots' cancellation (the CPU's and these),
// plus a bf16 or f16 result's rounding (uh, sub: 0 for the others), times 1 - 1e-9.
__device__ __forceinline__ bool rt_root_bad(double g, double e, float scale, double a, double b, double u,
                                            double uh, double sub) {
  bool bad;
  if (rt_nonfinite(g, e, &bad)) return bad;
  const double v = e * e, ev = a * (double)scale + b * v;
  const double hi = sqrt(v + ev), lo = sqrt(fmax(0.0, v - ev));
  double bound = fmax(0.0, hi - lo + u * hi - 0x1p-50 * hi);
  bound += uh * (fabs(e) + bound) + sub;
  return !(fabs(g - e) <= bound * (1.0 - 1e-9));
}

// Bounded results of one segment length (rows, columns): one (a, b, c) for all.
extern "C" __global__ void rt_check_bound(const B* got, const double* want, const float* scale, rt_u64 n,
                                          double a, double b, double c, rt_u64* verdict) {
  rt_check_all(n, verdict, [&](rt_u64 i) { return rt_bound_bad(rt_to_double(got[i]), want[i], scale[i], a, b, c); });
}

extern "C" __global__ void rt_check_root(const B* got, const double* want, const float* scale, rt_u64 n,
                                         double a, double b, double u, double uh, double sub,
                                         rt_u64* verdict) {
  rt_check_all(n, verdict,
               [&](rt_u64 i) { return rt_root_bad(rt_to_double(got[i]), want[i], scale[i], a, b, u, uh, sub); });
}

// Offsets segments, whose lengths (so depths and counts) differ: result i's coefficients are
// coef[3 k], coef[3 k + 1], coef[3 k + 2] for k = cls[i], its length's class (std: a and b; u, uh
// and sub are the dtype's).
extern "C" __global__ void rt_check_bound_classes(const B* got, const double* want, const float* scale,
                                                  const unsigned* cls, const double* coef, rt_u64 n,
                                                  rt_u64* verdict) {
  rt_check_all(n, verdict, [&](rt_u64 i) {
    const double* k = coef + 3 * (rt_u64)cls[i];
    return rt_bound_bad(rt_to_double(got[i]), want[i], scale[i], k[0], k[1], k[2]);
  });
}

extern "C" __global__ void rt_check_root_classes(const B* got, const double* want, const float* scale,
                                                 const unsigned* cls, const double* coef, rt_u64 n, double u,
                                                 double uh, double sub, rt_u64* verdict) {
  rt_check_all(n, verdict, [&](rt_u64 i) {
    const double* k = coef + 3 * (rt_u64)cls[i];
    return rt_root_bad(rt_to_double(got[i]), want[i], scale[i], k[0], k[1], u, uh, sub);
  });
}
#endif
