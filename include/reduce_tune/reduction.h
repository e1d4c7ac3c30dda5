// reduce-tune: a reduction of the user's own, described by CUDA C++ expressions and passed to the
// same calls as a built-in Op (reduce_tune/reducer.h). The library renders it into the kernel
// templates (as the built-in ops are rendered: an accumulator type, its identity, the map of an
// element, the combine of two accumulators and the post-map to the result) and compiles it with
// NVRTC; a description that does not compile throws ReductionError with NVRTC's log.
#pragma once

#include "reduce_tune/config.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune {

/// A user reduction that cannot be used: a field out of place, or a description NVRTC does not
/// compile (log() then holds NVRTC's log, which what() also carries).
class ReductionError : public std::invalid_argument {
public:
  explicit ReductionError(const std::string& what, std::string log = {})
      : std::invalid_argument(what), log_(std::move(log)) {}
  const std::string& log() const { return log_; }
private:
  std::string log_;
};

/// A reduction described by CUDA C++ expressions. Each expression is the body of one function of
/// the kernels:
///   map       the element `x` (widened: float for bfloat16 and float16, else the element type)
///             at index `i` of its row, column or segment (int64-sized, unsigned) -> accumulator
///   combine   two accumulators `a` and `b`, `a` covering elements before `b`'s -> accumulator
///   identity  the accumulator of no elements (combine(identity, a) == a)
///   post      the accumulator `a` of `count` elements -> the result (rounded once to a bfloat16
///             or float16 result)
/// The accumulator is `accumulator` (a CUDA C++ type: "float", "double", or a struct spelled in
/// `preamble`), named `A` in the expressions; empty: the element's wide type (float for bfloat16
/// and float16, else the element type). The expressions may call CUDA's math functions (sqrt,
/// expf, fmaxf, ...), use INFINITY and NAN (float) and anything `preamble` defines. An identity or combine of a struct may be
/// written as a braced list ("{0.f, 0.f}") or as `A{...}`.
///
/// The combine must be associative. A commutative one lets every variant of the catalogue
/// reorder elements (trees, strided loads, grid-stride loops); `commutative = false` keeps only
/// those that combine the elements of each result in their order (kernels/catalogue.cpp says
/// which), so some problems may then have no variant at all (the calls throw ReductionError).
///
/// No host finish or in-place variant is used for a user reduction, and no atomic finish or
/// __reduce_*_sync unless the reduction is additive: its combine is `a + b` (or `b + a`; white
/// space and enclosing parentheses aside), its accumulator a scalar spelling or empty, its
/// identity a zero literal (`0`, `0.0`, `0.f`, `0u`, `0ll`, ...) and it is commutative. Such a
/// combine adds as the built-in sum does, so it takes the sum's atomic add: into the result on the
/// 1-D problem where `post` is `a` and the result has the accumulator's type, through a post pass
/// on the segmented problems otherwise. The library cannot know what any other combine's atomic
/// would be.
struct Reduction {
  std::string map = "x";
  std::string combine = "a + b";
  std::string identity = "0";
  std::string post = "a";
  std::string accumulator;          ///< empty: the element's wide type
  /// sizeof the accumulator where it is not a scalar spelling ("float", "double", "int",
  /// "unsigned", "unsigned int", "long long", "unsigned long long"); a multiple of 4. The
  /// compiled source static_asserts it.
  std::size_t accumulator_bytes = 0;
  std::string preamble;             ///< CUDA C++ before the functions (structs, helpers)
  /// The element dtypes it may reduce; empty: int32, uint32, int64, float32, float64, bfloat16
  /// and float16.
  std::vector<DType> inputs;
  /// The result's dtype; nullopt: the element type. A bfloat16 or float16 result only for
  /// elements of that type.
  std::optional<DType> result;
  bool commutative = true;
  /// A CPU evaluation for checks (the tuner, the tests): the elements of one row, column or
  /// segment, converted to double, and their count, to the expected result as a double. Not part
  /// of the description: it does not change the hash.
  std::function<double(const double* elements, std::size_t count)> check;

  /// The description as canonical text: every field that reaches the kernels, trimmed of
  /// surrounding white space, length-prefixed in a fixed order. Two reductions with the same
  /// canonical text compile to the same kernels.
  std::string canonical() const;
  /// A stable 64-bit hash of canonical() (FNV-1a: the same in every build and process).
  std::uint64_t hash() const;
  /// "user:" and the hash in 16 lower-case hex digits: the reduction's name (reduce-tune
  /// reduction prints it; a tuning store keys the reduction's rows by it: `reduce-tune tune
  /// --reduction FILE` tunes it, and the calls take those rows first).
  std::string name() const;
  /// The dtype of the result for elements of `dtype`. Throws ReductionError where the
  /// reduction does not take `dtype` or the result is out of place.
  DType result_dtype(DType dtype) const;
};

/// A Reduction from text of `key = value` lines (the format of `reduce-tune reduction FILE`):
/// keys map, combine, identity, post, accumulator, accumulator_bytes, preamble, inputs (dtype
/// names, comma-separated), result (a dtype name), commutative (true or false); `key <<TAG`
/// starts a value of several lines that ends at a line holding TAG alone; blank lines and lines
/// starting with `#` are skipped. Keys left out keep Reduction's defaults. Throws ReductionError
/// naming the line of an unknown key, a key given twice, a bad value or an unended value.
Reduction parse_reduction(const std::string& text);

/// `r` as text parse_reduction reads back to the same description (the same canonical()): the
/// fields that differ from Reduction's defaults, one `key = value` line each, a value of several
/// lines as a `key <<TAG` block. The CPU evaluation (check) is not text and is left out. A tuning
/// store keeps a reduction this way.
std::string to_text(const Reduction& r);

/// Compiles `r` for elements of `dtype` with NVRTC (no GPU needed) for `arch` ("sm_90",
/// "compute_80", ...; empty: the newest architecture the NVRTC targets), through one kernel of
/// each problem it has a variant for. Throws ReductionError with NVRTC's log when it does not
/// compile, std::runtime_error when NVRTC cannot be loaded. `nvrtc_path` as Options::nvrtc_path.
void compile_reduction(const Reduction& r, DType dtype, const std::string& arch = "",
                       const std::string& nvrtc_path = "");

} // namespace reduce_tune
