// reduce-tune: the sum references of every rows or offsets shape over one input from its prefix
// sums: one pass over the input, then two reads a result, where segmented_reference reads every
// element of every shape. A sweep measures up to 25 shapes on one input.
#pragma once

#include "kernels/host_bytes.h"
#include "tuner/reference.h"

#include <cstdint>
#include <vector>

namespace reduce_tune {

/// Prefix sums of one input for Op::sum. A segment's sum is the difference of two of them, which
/// equals the element-by-element reference bit for bit only where no sum rounds: integers always
/// (sums wrap, and differences of wrapped sums are the wrapped segment sums); floats when every
/// value is finite and is a multiple of 2^e for an e with sum |x| < 2^(53 + e) (every partial sum
/// in any order is then an integer multiple of 2^e below 2^53 of them, held exactly in double; the
/// sweep's test data, uniform on a 2^-23 grid below 1024, is). exact() says which; where it is
/// false the caller uses segmented_reference.
class SumPrefix {
public:
  SumPrefix() = default;
  /// Builds the prefix sums of `a` (in parallel chunks).
  explicit SumPrefix(const HostArray& a);
  /// Whether the segment sums are exact (see the class).
  bool exact() const { return exact_; }
  /// Whether reference() answers `s` and `op`: exact, Op::sum, rows or offsets segments, and every
  /// segment within the input.
  bool serves(const Segmentation& s, Op op) const;
  /// One Reference per result of `s`, as segmented_reference(a, s, Op::sum, out) gives them (the
  /// same bits); throws std::invalid_argument unless serves(s, Op::sum).
  void reference(const Segmentation& s, std::vector<Reference>& out) const;
  /// The References of results [first, last) of `s` into out[0, last - first), the same bits as
  /// reference() gives them, on the calling thread: for a consumer that wants a few thousand at a
  /// time (in cache) rather than every result's 40 bytes in memory. False where `s` is not
  /// served: not exact, not a rows or offsets shape, or a segment of the range outside the input
  /// (the other segments' bounds are not read: serves(s, Op::sum) says whether all are within).
  bool references(const Segmentation& s, std::uint64_t first, std::uint64_t last, Reference* out) const;

private:
  DType dtype_ = DType::f32;
  std::uint64_t n_ = 0;
  bool exact_ = false;
  // Resized without zeroing (16 bytes an element, 256 MiB at 2^24): the build's threads write each.
  template <typename T> using Sums = std::vector<T, DefaultInitAllocator<T>>;
  Sums<std::uint64_t> wrap_; // integers: x[0] + ... + x[i-1] mod 2^64, n + 1 of them
  Sums<double> sum_, abs_;   // floats: the same of x and of |x|, exact (or empty)
};

} // namespace reduce_tune
