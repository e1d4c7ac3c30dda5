// reduce-tune: how a sweep checks a user reduction's results. The reduction's CPU evaluation
// (Reduction::check) gives the expected result of each row, column or segment; without one the
// results cannot be checked, and every measurement says so (Measurement::expected).
#pragma once

#include "kernels/user_op.h"
#include "kernels/values.h"
#include "tuner/reference.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace reduce_tune {

/// What a measurement of a reduction without a CPU evaluation records as its expected result.
inline constexpr const char* kNotChecked = "not checked (the reduction has no CPU evaluation)";

/// The expected results of a user reduction on an input: per result, the CPU evaluation of its
/// elements and of their magnitudes (the scale its rounding error is bounded by).
struct UserExpected {
  bool checked = false;          ///< false: the reduction has no CPU evaluation
  std::vector<double> value;     ///< check(elements)
  std::vector<double> magnitude; ///< check(|elements|)
};

/// The expected result of the 1-D problem over `a`.
UserExpected user_expected(const UserOp& u, const HostArray& a);
/// The expected results of a segmented problem over `a` (one per row, column or segment).
UserExpected user_expected(const UserOp& u, const HostArray& a, const Segmentation& s);

/// Checks result i, `got` (of the reduction's result dtype), whose longest chain of dependent
/// combines is `depth`: equal, or both NaN, or within gamma(depth + 2) |check(|x|)| + 2 u
/// |expected| (u: the unit roundoff of float64 where the result or the accumulator is double,
/// else of float32; plus a bfloat16 or float16 result's rounding), the bound of a summation over
/// the magnitudes, which a combine that is a sum, a sum of squares, a maximum or a mean meets.
/// Integer results: exact. Without a CPU evaluation: passes, `expected` says kNotChecked.
Check check_user(const UserOp& u, DType dtype, const UserExpected& e, std::size_t i, double got,
                 std::uint64_t depth);
/// The unit roundoff check_user's bound takes: float64's where the result or the accumulator is
/// double, else float32's.
double user_unit_roundoff(const UserOp& u, DType dtype);
/// Every result of a segmented problem (`got` holds them): the first failure ("result 17: ..."),
/// or ok.
Check check_user_segmented(const UserOp& u, DType dtype, const UserExpected& e, const HostArray& got,
                           const Segmentation& s, const std::function<std::uint64_t(std::uint64_t)>& depth);

} // namespace reduce_tune
