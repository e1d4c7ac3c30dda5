// reduce-tune bench: the input data and the CPU reference every contestant is checked against.
#pragma once

#include "reduce_tune/config.h"

#include <cstdint>
#include <memory>
#include <string>

namespace rt_bench {

/// n elements of float32 (uniform in [-1, 1), zeros replaced by 2^-24) or int32 (uniform over
/// all 32-bit patterns, so sums wrap), from `seed`. The same on any machine and for any thread
/// count; a prefix of a longer array is the shorter array, so one fill serves every size.
/// The memory is left uninitialised by the allocation and first touched by the filling threads.
std::unique_ptr<std::uint32_t[]> make_data(reduce_tune::DType dtype, std::uint64_t n,
                                           std::uint64_t seed);

/// The exact answer for the first n elements (float sums: in double precision), and sum |x|.
struct Reference {
  reduce_tune::DType dtype = reduce_tune::DType::f32;
  reduce_tune::Op op = reduce_tune::Op::sum;
  std::uint32_t bits = 0; ///< int32 (two's-complement wrap) and min/max: the exact result
  double exact = 0;       ///< the value as a double (float sums: the double-precision sum)
  double abs_sum = 0;     ///< float sums: sum |x|
};
Reference reference(const std::uint32_t* data, std::uint64_t n, reduce_tune::DType dtype,
                    reduce_tune::Op op);

/// A contestant's result against the reference. int32 and min/max must be exact; float32 sums
/// must satisfy |got - ref| <= 1e-6 * sum|x| + 1e-6 * |ref| (ref the double-precision sum).
struct Verdict {
  bool ok = false;
  double rel_err = 0;     ///< float sums: |got - ref| / sum|x|; else 0 or 1 (wrong)
  std::string got, want;  ///< for the FAILED line
};
Verdict check(const Reference& ref, std::uint32_t got_bits);

/// The identity of op on dtype as a bit pattern (sum 0; min +inf / INT_MAX; max -inf / INT_MIN).
std::uint32_t identity_bits(reduce_tune::DType dtype, reduce_tune::Op op);

} // namespace rt_bench
