// reduce-tune: a configuration is a value with a stable text key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reduce_tune {

/// Element type of the reduced array (u8: the result of any and all only, never an input).
/// bf16 (bfloat16: 8 exponent bits, 7 stored mantissa bits)
/// and f16 (IEEE binary16) are the 2-byte floats of CUDA's __nv_bfloat16 and __half.
/// Sums of bf16 and f16 accumulate in float32 and round once to the element type at the end
/// (accumulator_of); their min and max are exact.
enum class DType { i32, u32, i64, f32, f64, bf16, f16, u8 };

/// Reduction operator (kernels/ops.cpp describes each; docs/LIBRARY.md lists their results).
/// sum, min, max: of the element type. mean: the sum divided by the count (integers: float64,
/// floats: the element type; empty: NaN). sumsq: the sum of squares (integers wrap). norm1, norm2
/// (floats only): the sum of |x|, the square root of the sum of squares. count_nonzero: int64.
/// any, all: whether any / every element is non-zero, as a uint8 0 or 1 (torch's bool).
/// argmax, argmin: the int64 index of the first maximum / minimum within the reduced range (a
/// NaN wins, the first NaN), as torch.argmax; nothing to reduce is an error (an empty offsets
/// segment gives -1). logsumexp (floats): log(sum(exp(x))) in one pass. var, std: the variance
/// and standard deviation with torch's default correction 1 (sum of squared deviations over
/// n - 1); var_population, std_population: with correction 0 (over n). Integers give float64.
/// dot: the sum of x[i] * y[i] over two inputs of one shape and dtype (integers wrap; the
/// Reducer's dot calls, not reduce_async, which reads one input).
/// Floats of bf16 and f16 accumulate in float32. The values are stable (appended only).
enum class Op {
  sum, min, max, mean, sumsq, norm1, norm2, count_nonzero, any, all,
  argmax, argmin, logsumexp, var, std_, var_population, std_population, dot
};
/// How a block finishes its last 32 partials.
enum class Tail {
  none,      ///< barrier loop all the way down
  volatile_, ///< the material's warp-synchronous volatile shared memory (unsafe from sm_70)
  syncwarp,  ///< shared memory with __syncwarp between steps
  shfl,      ///< __shfl_down_sync
  redux,     ///< __reduce_{add,min,max}_sync (32-bit integers, sm_80+)
};
/// How block partials become one value.
enum class Finish {
  host,      ///< partials copied back and combined on the CPU (000/002/003)
  atomic,    ///< one atomic per block into the result (004)
  twopass,   ///< a second one-block kernel combines the partials (deterministic)
  lastblock, ///< the last block to finish combines the partials (deterministic, one launch)
  firstblock, ///< atomic, with the result set by the first block to start (no init before)
  direct,    ///< segmented: each result is written once by the lanes that reduced it
};

/// What is reduced. The whole-array problem gives one value; the others one value per segment.
enum class Problem {
  array,    ///< n elements -> one value
  rows,     ///< a row-major rows x cols matrix (row stride >= cols) -> one value per row
  columns,  ///< the same matrix -> one value per column (strided reads)
  segments, ///< segments + 1 int64 offsets into an array -> one value per segment
};

/// A problem's size: `count` results, each reducing `length` elements. array: {1, n}; rows:
/// {rows, cols}; columns: {cols, rows}; segments: {segments, mean segment length}.
struct Shape {
  std::uint64_t count = 1;
  std::uint64_t length = 0;
  std::uint64_t elements() const { return count * length; }
};
inline bool operator==(const Shape& a, const Shape& b) {
  return a.count == b.count && a.length == b.length;
}
inline bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

std::string_view name(DType);
std::string_view name(Op);
std::string_view name(Tail);
std::string_view name(Finish);
std::string_view name(Problem);
std::optional<DType> parse_dtype(std::string_view);
std::optional<Op> parse_op(std::string_view);
std::optional<Tail> parse_tail(std::string_view);
std::optional<Finish> parse_finish(std::string_view);
std::optional<Problem> parse_problem(std::string_view);
/// Bytes per element.
std::size_t size_of(DType);
/// Floating-point dtypes: f32, f64, bf16, f16.
bool is_float(DType);
/// The 2-byte floats, bf16 and f16.
bool is_half(DType);
/// The type the kernels combine elements in: float32 for bf16 and f16 (each element is widened
/// exactly, partial results stay float32, the final result is rounded to the element type once),
/// the element type itself otherwise.
DType accumulator_of(DType);

/// One point of the tuning space: which kernel and how it is shaped. The variant belongs to one
/// problem kind (kernels/catalogue.h); the problem's dtype, op and size are not part of it: the
/// same configuration runs for any of them.
struct Config {
  std::string variant;          ///< catalogue name, e.g. "unrolling"
  int block = 256;              ///< threads per block (power of two, 32..1024)
  int unroll = 1;               ///< data blocks folded per block / loads in flight (1, 2, 4, 8)
  int vec = 1;                  ///< elements per vector load (1, 2, 4)
  int grid = 0;                 ///< blocks per SM for grid-stride kernels; 0 = data-sized grid
  Tail tail = Tail::none;
  Finish finish = Finish::host;
  int width = 0;                ///< lanes per segment for the group mappings (1..32); 0 = n/a
};
// Spelled out rather than defaulted: the public headers are C++17.
inline bool operator==(const Config& a, const Config& b) {
  return a.variant == b.variant && a.block == b.block && a.unroll == b.unroll && a.vec == b.vec &&
         a.grid == b.grid && a.width == b.width && a.tail == b.tail && a.finish == b.finish;
}
inline bool operator!=(const Config& a, const Config& b) { return !(a == b); }

/// The stable text key, e.g. "unroll_warps.b512.u8.shfl.host": the variant, then the parameters
/// it takes in a fixed order (b<block> w<width> u<unroll> v<vec> g<grid> <tail>), then the finish.
std::string key(const Config&);
/// Parses a key (parameter tokens in any order). Returns nullopt, with the reason in *why,
/// when the text is not a key of a known variant.
std::optional<Config> parse_key(std::string_view text, std::string* why = nullptr);

} // namespace reduce_tune
