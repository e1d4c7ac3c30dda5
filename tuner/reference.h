// reduce-tune: test data and the CPU reference every GPU result is checked against (the tuner,
// the tests and the bench check with it; the library's launch path needs only kernels/values.h).
#pragma once

#include "kernels/values.h"
#include "reduce_tune/config.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace reduce_tune {

/// Random data from `seed`, the same for the same (dtype, n, seed) on any machine, never zeros.
/// Integers are uniform over the whole type (so sums wrap). Floats are uniform in [-1, 1) (bf16
/// and f16: rounded to the type, a value that rounds to zero becomes 0.5) plus
/// spikes of +-1024 at the first and last element and on both sides of every power-of-two
/// boundary (block and tile edges), so a dropped or double-counted edge element moves the sum far
/// past the rounding bound. Made on `threads` threads (0: one a core from 2^20 elements on); the
/// data is the same on any number.
HostArray make_input(DType dtype, std::uint64_t n, std::uint64_t seed, unsigned threads = 0);

/// The reference result and what the float bound needs.
struct Reference {
  Scalar value;        ///< of the op's result dtype. Exact for integers (two's-complement wrap),
                       ///< min/max (floats: IEEE 754-2019 minimum/maximum, NaN if any element is
                       ///< NaN, -0.0 below +0.0), count_nonzero, any and all; for the float sums
                       ///< (sum, mean, sumsq, norm1, norm2, integer mean) `exact` rounded to the
                       ///< dtype once (also for bf16 and f16)
  double exact = 0;    ///< those float results in double precision: the sum of the mapped
                       ///< values (x, x^2, |x|), over the count for mean, its root for norm2;
                       ///< logsumexp and var/std from double accumulators for elements of 4
                       ///< bytes or fewer, extended precision for float64 and integers (var:
                       ///< two passes, the sums of x - mean and their squares; logsumexp: exp
                       ///< in double) (argmax and argmin: `value` is the exact int64 index, -1
                       ///< for nothing)
  double abs_sum = 0;  ///< the sum of |mapped value| (norm2, var, std: the sum of squares;
                       ///< logsumexp: the log of the sum rescaled to the maximum)
  double count = 0;    ///< elements reduced
};
Reference reference(const HostArray& a, Op op);
/// The reference of an op of two inputs (dot: the sum of x[i] * y[i]) over x and y of one dtype
/// and length: float products in double (exact for float32, bf16 and f16; float64's rounded once),
/// summed in double; integers wrap as the kernels' unsigned products and sums. `exact` is that
/// double sum, `abs_sum` the sum of |x[i] y[i]|. The one-input reference throws for dot, this one
/// for the other ops (std::invalid_argument).
Reference reference(const HostArray& x, const HostArray& y, Op op);

/// Which elements of an input each result of a segmented problem reduces (see Shape).
struct Segmentation {
  Problem problem = Problem::rows;
  Shape shape;                          ///< segments: {segments, mean length}
  std::uint64_t stride = 0;             ///< rows and columns: elements between row starts
  std::vector<std::int64_t> offsets;    ///< segments: shape.count + 1 offsets
  /// The elements the input must hold.
  std::uint64_t input_elements() const;
  /// The length of result i's segment.
  std::uint64_t length(std::uint64_t i) const;
};
/// One Reference per result (rows, columns or segments of `a`), computed in parallel.
std::vector<Reference> segmented_reference(const HostArray& a, const Segmentation& s, Op op);
/// The same into `out` (resized to the results; its memory is reused from shape to shape).
void segmented_reference(const HostArray& a, const Segmentation& s, Op op, std::vector<Reference>& out);
/// The same for an op of two inputs: y is read where x is.
std::vector<Reference> segmented_reference(const HostArray& x, const HostArray& y,
                                           const Segmentation& s, Op op);
/// Offsets of `segments` segments that together hold `total` elements, from `seed`: Pareto
/// lengths (shape 1.2), so most are shorter than the mean (empty ones too) and a few are hundreds
/// of times longer; the last offset is `total`. Made on `threads` threads (0: one a core from 2^16
/// segments on); the offsets are the same on any number.
std::vector<std::int64_t> skewed_offsets(std::uint64_t segments, std::uint64_t total,
                                         std::uint64_t seed, unsigned threads = 0);
/// The length of the longest segment of `offsets` (0 for none; decreasing pairs count as empty).
std::uint64_t longest_segment(const std::vector<std::int64_t>& offsets);

/// The outcome of checking a GPU result.
struct Check {
  bool ok = false;
  double error = 0, bound = 0;
  std::string expected, observed;
};
/// Integers and min/max: exact. Float sums: |got - exact| <= gamma(depth) * sum|x| + u * |exact|,
/// with gamma(k) = k u / (1 - k u) (the classic bound for a summation whose longest chain of
/// dependent roundings is k) and u the unit roundoff of the dtype. bf16 and f16 sums accumulate
/// in float32 (u = 2^-24 in gamma) and round once to the element type: the float32 result s
/// differs from exact by at most e = gamma(depth) sum|x| + 2^-24 |exact|, and its rounding adds
/// at most u_h |s| <= u_h (|exact| + e) (u_h = 2^-8 for bf16, 2^-11 for f16) in the normal range,
/// or half the subnormal spacing below it, so the bound is e + u_h (|exact| + e) + that half
/// spacing. A float32 result of a bf16 or f16 reduction (`got` of dtype f32: Target::wide_result)
/// has the float32 bound e (sums) or is the exact value widened (min, max). NaN matches NaN; an
/// infinity matches the same infinity. The other float ops: sumsq and norm1 as a sum of the
/// mapped values (sumsq with depth + 1: each square rounds once); mean as a sum of |x| / count
/// with depth + 2 (an integer's conversion and the division round once), for integer means with float64's u; norm2:
/// sqrt(s + e) - sqrt(s - e) for the sum of squares s and its bound e (depth + 1), plus the
/// square root's rounding u |result| and, for bf16 and f16, the element type's. count_nonzero,
/// any, all, argmax, argmin and integer sumsq: exact. logsumexp: gamma(6 depth + 2) / (1 - gamma)
/// (the rescaled sum's relative error: an exp, a product and a sum per level) + 2 u |log S| + u
/// |result|. var: gamma(4 depth + 4) sum x^2 / max(n - correction, 1) + u |var| (Chan, Golub and
/// LeVeque: pairwise merging errs by about depth u kappa M2 <= depth u sum x^2); std: the square
/// root's spread over that interval plus u |std|. bf16 and f16 add their one rounding. dot: as
/// sumsq, a sum of the products with depth + 1 (each product rounds once, or not where fused
/// into the add; float64 with the order-free gamma(n) where larger); integer dot: exact.
Check check(const Reference& ref, Scalar got, Op op, std::uint64_t depth);
double float_bound(DType dtype, std::uint64_t depth, double abs_sum, double exact);
/// Checks every result of a segmented reduction (`got` holds s.shape.count of them) against its
/// reference; `depth(len)` is the rounding depth of a segment of len elements. Returns the first
/// failure, its index in `expected` ("result 17: ..."), or ok.
Check check_segmented(const std::vector<Reference>& refs, const HostArray& got,
                      const Segmentation& s, Op op,
                      const std::function<std::uint64_t(std::uint64_t)>& depth);

} // namespace reduce_tune
