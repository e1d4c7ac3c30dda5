// reduce-tune bench: the input data, the CPU reference every contestant is checked against, and
// the median the timings are reduced to.
#pragma once

#include "kernels/half.h"
#include "reduce_tune/config.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rt_bench {

/// Calls f(T{}) with the C++ type of `d`: int, unsigned, long long, float, double, and the
/// library's host bf16_t and f16_t (kernels/half.h: the bits of __nv_bfloat16 and __half; the
/// bench's device code maps them to CUDA's types). int64 is long long (not std::int64_t, which is
/// long on LP64) because CUDA's 64-bit atomics take long long.
template <typename F> decltype(auto) visit(reduce_tune::DType d, F&& f) {
  using reduce_tune::DType;
  using i64 = long long;
  static_assert(sizeof(int) == 4 && sizeof(i64) == 8);
  switch (d) {
  case DType::i32: return f(int{});
  case DType::u32: return f(unsigned{});
  case DType::i64: return f(i64{});
  case DType::f32: return f(float{});
  case DType::f64: return f(double{});
  case DType::bf16: return f(reduce_tune::bf16_t{});
  case DType::f16: return f(reduce_tune::f16_t{});
  }
  return f(float{});
}

/// n elements of `dtype` from `seed`: int32, uint32 and int64 uniform over all bit patterns (so
/// sums wrap), float32 uniform in [-1, 1) on a 2^-23 grid, float64 uniform in [-1, 1) on a 2^-52
/// grid, bf16 and f16 the float32 values rounded to them; never zero (an integer 0 becomes 1, a float 0 becomes 2^-24 or 2^-53). The same on any
/// machine and for any thread count; a prefix of a longer array is the shorter array, so one fill
/// serves every size. The n * size_of(dtype) bytes are left uninitialised by the allocation and
/// first touched by the filling threads.
std::unique_ptr<std::byte[]> make_data(reduce_tune::DType dtype, std::uint64_t n,
                                       std::uint64_t seed);
/// The same n elements written to `out` (n * size_of(dtype) bytes, aligned for the dtype).
void fill_data(reduce_tune::DType dtype, std::uint64_t n, std::uint64_t seed, void* out);

/// Results travel as bit patterns: the value's bytes in the low bytes of a uint64 (upper bytes 0
/// for 4-byte types), as an es-byte copy from the device into a zeroed uint64 gives them.
struct Reference {
  reduce_tune::DType dtype = reduce_tune::DType::f32;
  reduce_tune::Op op = reduce_tune::Op::sum;
  std::uint64_t bits = 0; ///< integers (two's-complement wrap) and min/max: the exact result
  double exact = 0;       ///< the value as a double (float sums: the compensated sum, accurate
                          ///< to about one rounding of the true sum)
  double abs_sum = 0;     ///< float sums: sum |x|
};
/// The answer for the first n elements at `data` (make_data's layout).
Reference reference(const void* data, std::uint64_t n, reduce_tune::DType dtype,
                    reduce_tune::Op op);

/// A contestant's result against the reference. Integers and min/max must be exact (bits equal);
/// float sums must satisfy |got - ref| <= eps * sum|x| + eps_r * |ref| with eps =
/// sum_tolerance(), eps_r = result_tolerance().
struct Verdict {
  bool ok = false;
  double rel_err = 0;     ///< float sums: |got - ref| / sum|x|; else 0 or 1 (wrong)
  std::string got, want;  ///< for the FAILED line
};
Verdict check(const Reference& ref, std::uint64_t got_bits);
/// The reference of a bf16 or f16 reduction for a float32 result (the accumulator, unrounded):
/// dtype float32, the exact value as float, checked with float32's tolerances.
Reference widened(const Reference& ref);

/// eps of the float-sum check: 1e-6 for float32 and for bf16/f16 (which accumulate in float32),
/// 1e-13 for float64 (data.cpp says why).
double sum_tolerance(reduce_tune::DType dtype);
/// eps_r of the float-sum check: the one rounding of the result, sum_tolerance() except for bf16
/// (2^-8) and f16 (2^-11), whose result is the float32 sum rounded to them.
double result_tolerance(reduce_tune::DType dtype);

/// Calls f(first, last) for fixed chunks of [0, n) on all cores.
void parallel_for(std::uint64_t n, const std::function<void(std::uint64_t, std::uint64_t)>& f);

/// The median of `v` (the mean of the middle two for an even count); v must not be empty.
double median(std::vector<double> v);

} // namespace rt_bench
