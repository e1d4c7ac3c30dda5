// reduce-tune: the CPU check's verdict in a form a GPU kernel can reach without the CPU: for each
// op and result dtype, whether a result is compared exactly (its bits) or within a bound that is
// linear in per-result scales, |got - want| <= a scale + b |want| + c, with (a, b, c) fixed for a
// measurement by the rounding depth of its configuration (one segment length: one depth). The
// coefficients are a hair below what tuner/reference.cpp and tuner/user_check.cpp compute, so a
// result within them is within the CPU check's bound too (tests/test_fast_check.cpp holds them to
// it). tuner/fast_check.h runs the comparison on the device.
#pragma once

#include "kernels/user_op.h"
#include "kernels/values.h"
#include "tuner/reference.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace reduce_tune {

/// How the fast pass decides a result: not at all (the CPU check does), by its bits, by a bound
/// of the linear form, or (std) by the spread of a square root over a linear bound of the variance.
enum class FastForm { none, exact, bound, root };

/// The bound of a measurement. Linear: |got - want| <= a scale + b |want| + c. Root (std, `want`
/// the standard deviation, v = want^2): e = a scale + b v, then sqrt(v + e) - sqrt(max(0, v - e))
/// + u sqrt(v + e), less 2^-50 sqrt(v + e) for the roots' cancellation, plus a bf16 or f16
/// result's rounding uh (|want| + that) + sub, times 1 - 1e-9.
struct FastBound {
  double a = 0, b = 0, c = 0;
  bool root = false;
  double u = 0, uh = 0, sub = 0; ///< root only
};

/// The form of `op`'s results of dtype `result` (the reference's: a float32 result of a bf16 or
/// f16 reduction is not one): exact where the CPU compares exactly; a bound for the float sums
/// (sum, mean, sumsq, norm1, norm2, dot), logsumexp and var; root for std.
FastForm fast_form(Op op, DType result);
/// The per-result scale the bound of `op` is linear in: the sum of magnitudes (sum, norm1, mean,
/// sumsq, dot, var, std), |log S| (logsumexp) or the root of the sum of squares (norm2).
double fast_scale(Op op, const Reference& r);
/// What a bounded result is compared with: the exact value, or the infinity a finite exact value
/// rounds to in the result's dtype (which the CPU check then asks for).
double fast_want(const Reference& r);
/// The coefficients of a built-in op's bound for results of dtype `result` whose longest chain of
/// roundings is `depth`, over segments of `count` elements each. nullopt where the form is not
/// a bound.
std::optional<FastBound> fast_bound(Op op, DType result, std::uint64_t depth, double count);
/// at(length) for each of `lengths`, on the host's cores where they are many (a depth costs the
/// host a catalogue lookup); nullopt where one is nullopt. `at` is called from several threads.
std::optional<std::vector<FastBound>> bounds_by_length(
    const std::vector<std::uint64_t>& lengths, const std::function<std::optional<FastBound>(std::uint64_t)>& at);
/// fast_bound at each of `lengths` (offsets segments of that many elements: the count, and the
/// rounding depth `depth(length)` of a measurement's configuration). nullopt where one is not a
/// bound (the CPU decides the measurement).
std::optional<std::vector<FastBound>> fast_bounds(Op op, DType result, const std::vector<std::uint64_t>& lengths,
                                                  const std::function<std::uint64_t(std::uint64_t)>& depth);
/// The same for a user reduction's results (tuner/user_check.h, check_user) on elements of
/// `dtype`: scale |check(|x|)|, want check(x); integer results have the bound 0 (equal). nullopt
/// where the CPU's bound has no such form (a depth past the model).
std::optional<FastBound> fast_user_bound(const UserOp& u, DType dtype, std::uint64_t depth);
/// `s` as a float no larger (a smaller scale only tightens the bound); NaN for NaN or a negative
/// `s`, which fails the results it scales.
float scale_down(double s);
/// The bound the device computes for one result (templates/check/compare.cu: rt_check_bound,
/// rt_check_root), on the host.
double fast_limit(const FastBound& b, double want, float scale);
/// The device's verdict on one bounded result, on the host: NaN matches NaN, an infinity the same
/// infinity, else |got - want| <= fast_limit.
bool fast_within(double got, double want, float scale, const FastBound& b);
/// The device's verdict on one exact result of dtype `d`: the same bits, or both NaN (floats).
bool fast_equal(Scalar got, Scalar want);

} // namespace reduce_tune
