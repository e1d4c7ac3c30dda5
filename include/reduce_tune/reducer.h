// reduce-tune: the runtime library. Opens a tuning store, picks the tuned configuration for
// (dtype, op, n) on this GPU and runs it. Device pointers in, a CUDA stream argument.
#pragma once

#include "reduce_tune/config.h"
#include "reduce_tune/element.h"
#include "reduce_tune/reduction.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

// CUstream without <cuda.h>: the driver's stream handle type (the runtime's cudaStream_t is the
// same type).
typedef struct CUstream_st* CUstream;

namespace reduce_tune {

/// Bad input to the library (null or host pointer, unsupported dtype or op, ...).
class InvalidArgument : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// How good the configuration lookup's answer is, best first.
enum class Match {
  exact,          ///< tuned at this n on this GPU
  nearest_size,   ///< tuned on this GPU at another n (the nearest)
  shipped,        ///< the tuning shipped with the library for this GPU model (share/reduce-tune)
  same_arch,      ///< tuned on another GPU of the same compute capability (the user's store
                  ///< first, then the shipped one)
  carried,        ///< tuned on a GPU of another compute capability: the most similar one
                  ///< (gpu_distance: SM count, memory bandwidth, L2 size, architecture), its
                  ///< grids per SM so they carry; the note says from which GPU
  related,        ///< none of those for this dtype and op: tuned for another op of the dtype,
                  ///< else another dtype (of its size first, then the nearest sizes, the vector
                  ///< width scaled to load the same bytes; the 1-D problem only its size), on
                  ///< this GPU, the model or the architecture; the note names what it was tuned for
  builtin,        ///< no usable tuning found: the built-in default
};
/// "exact", "nearest_size", "shipped", "same_arch", "carried", "related", "builtin".
std::string_view name(Match);

/// What the lookup chose and why.
struct Choice {
  Config config;
  Match match = Match::builtin;
  Problem problem = Problem::array;
  Shape tuned_shape{0, 0};     ///< the shape it was tuned at ({0, 0} for builtin)
  std::uint64_t tuned_n = 0;   ///< the size it was tuned at: tuned_shape.length for the array
                               ///< problem, tuned_shape.elements() otherwise (0 for builtin)
  double median_us = 0;        ///< measured time at tuned_n (0 for builtin)
  double gbps = 0;
  std::string device_name;     ///< the GPU the measurement came from (empty for builtin)
  std::string note;            ///< why the built-in default; for `related`, what it was tuned
                               ///< for ("tuned for float32 sum"); which faster stored
                               ///< configurations were passed over and why; empty otherwise
};

/// What a caller may ask of the choice.
struct Options {
  bool deterministic = false;  ///< same input, same bits: no floating-point atomic finishes
  bool allow_in_place = false; ///< allow variants that work in place (never on the caller's
                               ///< input: on a copy the reducer owns)
  std::string store_path;      ///< empty: $REDUCE_TUNE_DB, else the default store path
  std::string nvrtc_path;      ///< empty: $REDUCE_TUNE_NVRTC, else the NVRTC built against
  /// The shipped tuning to use when $REDUCE_TUNE_SHIPPED_DB is unset (which wins, empty meaning
  /// none); empty: the one installed with the library (share/reduce-tune/tuning.db). The Python
  /// package passes the copy inside it.
  std::string shipped_path;
  /// Note each call point (GPU, dtype, op, problem, shape bucket) served without an exact tuning,
  /// with the grade it ran with, in the store (created if need be), once a point per Reducer and
  /// without measuring anything: `reduce-tune tune --recorded` tunes them, `reduce-tune coverage`
  /// lists them. $REDUCE_TUNE_RECORD=1 turns it on too.
  bool record = false;
  /// Tune on first use: a call (not a capturing one, not config_for) at a point with no exact
  /// tuning first runs a bounded guided search of that point (checked against the CPU reference,
  /// on the GPU, in a separate process: `reduce-tune autotune-worker`, started once per process),
  /// stores the result in the store (created if need be) for later calls and processes, then runs
  /// with it. A call on a stream being captured runs with what the store has and records the point
  /// (as `record`); so does any call where the worker cannot be found or fails: tuning never makes
  /// a call fail. $REDUCE_TUNE_AUTOTUNE=1 turns it on too. Off by default: a first call at a new
  /// point then takes the search's time (autotune_ms) and the worker holds a CUDA context of its
  /// own while it lives (docs/LIBRARY.md).
  bool autotune = false;
  /// Whether $REDUCE_TUNE_AUTOTUNE=1 turns `autotune` on. False for a Reducer whose calls are
  /// tuned by their caller (the Python package tunes a user reduction with a NumPy check itself).
  bool autotune_from_env = true;
  /// The time a point's search may take, in milliseconds ($REDUCE_TUNE_AUTOTUNE_MS wins).
  double autotune_ms = 300;
};

/// Whether this machine has a CUDA driver and a GPU; never throws. `why` gets the reason if not.
bool gpu_available(std::string* why = nullptr);

/// Reductions on one GPU with tuned kernels. Thread-safe; keeps compiled kernels and temporary
/// device memory between calls, so after the first call at a size the call path touches neither
/// the store nor the compiler and allocates nothing.
///
/// Runs in the primary context of device `ordinal` (the context the CUDA runtime uses), made
/// current only for the duration of each call: the caller's current context is left as it was.
/// Input pointers must be device (or managed) memory of that device. Each call checks its
/// pointers with the driver, except where the calling thread checked their allocations before
/// (the last eight it saw): an asynchronous call that the thread made before with the same
/// arguments but its pointers and stream then only enqueues its kernels (a warm call). Memory
/// freed and its addresses taken by host memory or another GPU's before the thread passes them
/// again is not noticed.
///
/// The configuration for n is looked up once per size bucket [2^k, 2^(k+1)), at 2^k, and kept.
/// A store that does not exist is not created: lookups then use the shipped tuning (Match), else
/// the built-in default.
class Reducer {
public:
  /// Opens the store (if it exists) and NVRTC for GPU `ordinal`. Throws std::runtime_error when
  /// there is no such GPU (see gpu_available) or NVRTC cannot be loaded.
  explicit Reducer(int ordinal = 0, Options options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  /// The configuration sum/min/max use for (dtype, op, n), and how good a match it is for n;
  /// never fails for lack of tuning.
  Choice config_for(DType dtype, Op op, std::uint64_t n) const;
  /// The same for reduce_async, which needs the result on the device: no host finish.
  Choice async_config_for(DType dtype, Op op, std::uint64_t n) const;
  /// The same for reduce_async with a `result` dtype (float32 for bf16 and f16; see there).
  Choice async_config_for(DType dtype, Op op, std::uint64_t n, DType result) const;
  /// The configuration a segmented call uses for `shape` (Shape's comment says what count and
  /// length mean for each problem; for Problem::segments a length of 0 is the count-only lookup
  /// of a reduce_segments call without `elements`). Problem::array is async_config_for.
  Choice config_for(DType dtype, Op op, Problem problem, Shape shape) const;
  /// The configuration reduce_segments uses for these arguments (see there: `elements`, or the
  /// extent of a small allocation at `d_in`, or the segment count alone), `d_in` checked as the
  /// call checks it.
  Choice segments_config_for(DType dtype, Op op, const void* d_in, std::uint64_t segments,
                             std::uint64_t elements = 0) const;
  /// Synchronous: reduces n elements at device pointer `d_in` on `stream` (after its earlier
  /// work), waits for the stream and returns the result. n = 0 gives the identity without
  /// launching: 0 for sum; for min the type's max (+infinity for floats), for max its lowest
  /// (-infinity for floats). Not on a stream that is being captured into a CUDA graph (it must
  /// wait for the result): that throws InvalidArgument; use reduce_async there.
  ///
  /// Floating-point min and max are IEEE 754-2019 minimum and maximum, in every configuration
  /// and in the segmented calls too: any NaN in the range gives NaN (a quiet NaN, payload
  /// unspecified), as NumPy's max and torch.amax do; otherwise -0.0 orders below +0.0, so min of
  /// {+0.0, -0.0} is -0.0 and max is +0.0, whatever the order of the elements or the kernel.
  /// Floating-point sums follow IEEE addition: a NaN, or +infinity with -infinity, gives NaN.
  /// Integer sums wrap.
  ///
  /// The result has the element type, for every dtype and call (as torch.sum of a bf16 tensor is
  /// bf16). Sums of __nv_bfloat16 and __half (DType::bf16, DType::f16) accumulate in float32: each
  /// element is widened exactly, every partial sum is float32, and the result is rounded to the
  /// element type once, at the end. So the error is the float32 summation's plus one rounding of
  /// the element type, not a rounding at every add (which would lose every element below half
  /// an ulp of a large partial sum, e.g. 1.0 added to 256.0 in bf16); and results stay of one
  /// type, as the asynchronous and segmented calls need (their output has the input's dtype).
  /// Their min and max are exact.
  template <typename T> T sum(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::sum, d_in, n, stream);
  }
  template <typename T> T min(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::min, d_in, n, stream);
  }
  template <typename T> T max(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::max, d_in, n, stream);
  }
  /// Any op whose result has the element type (sum, min, max, sumsq, norm1, norm2, logsumexp;
  /// mean, var and std of floats) by `op`; InvalidArgument for the others (their helpers below).
  template <typename T> T reduce(Op op, const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    T out;
    reduce_sync(dtype_of<T>(), op, d_in, n, &out, dtype_of<T>(), stream);
    return out;
  }
  /// The result type of mean: float64 for integers (as torch), the element type for floats.
  template <typename T>
  using mean_t = std::conditional_t<std::is_integral_v<T>, double, T>;
  /// The sum over n (floats: accumulated as sum does, then divided; integers: in float64). n = 0
  /// gives NaN.
  template <typename T> mean_t<T> mean(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    mean_t<T> out;
    reduce_sync(dtype_of<T>(), Op::mean, d_in, n, &out, dtype_of<mean_t<T>>(), stream);
    return out;
  }
  /// The sum of squares (integers wrap; bf16 and f16 accumulate in float32 as sum does).
  template <typename T> T sumsq(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::sumsq, d_in, n, stream);
  }
  /// The sum of |x| and the Euclidean norm, of floating-point elements.
  template <typename T> T norm1(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::norm1, d_in, n, stream);
  }
  template <typename T> T norm2(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::norm2, d_in, n, stream);
  }
  /// The number of elements that are not zero (a NaN counts; -0.0 does not).
  template <typename T>
  std::int64_t count_nonzero(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    std::int64_t out;
    reduce_sync(dtype_of<T>(), Op::count_nonzero, d_in, n, &out, DType::i64, stream);
    return out;
  }
  /// Whether any element, or every element, is non-zero (n = 0: false, true). The asynchronous
  /// and segmented calls write these as one uint8 each (DType::u8: 0 or 1, torch's bool).
  template <typename T> bool any(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    std::uint8_t out;
    reduce_sync(dtype_of<T>(), Op::any, d_in, n, &out, DType::u8, stream);
    return out != 0;
  }
  template <typename T> bool all(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    std::uint8_t out;
    reduce_sync(dtype_of<T>(), Op::all, d_in, n, &out, DType::u8, stream);
    return out != 0;
  }

  /// The int64 index of the first maximum / minimum of the n elements, as torch.argmax and
  /// torch.argmin (the index alone; a NaN wins, the first NaN). The asynchronous and segmented
  /// calls write one int64 each: the index within its row, column or segment (torch's dim
  /// reductions), -1 for an empty offsets segment. n = 0 (and rows or columns of no elements)
  /// throws InvalidArgument: there is no index of nothing, as torch raises.
  template <typename T>
  std::int64_t argmax(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    std::int64_t out;
    reduce_sync(dtype_of<T>(), Op::argmax, d_in, n, &out, DType::i64, stream);
    return out;
  }
  template <typename T>
  std::int64_t argmin(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    std::int64_t out;
    reduce_sync(dtype_of<T>(), Op::argmin, d_in, n, &out, DType::i64, stream);
    return out;
  }
  /// log(sum(exp(x))) of floating-point elements in one pass (a running maximum and a sum
  /// rescaled to it; bf16 and f16 in float32, rounded once). -infinity elements add nothing; all
  /// -infinity, or n = 0, gives -infinity; a +infinity gives +infinity; a NaN gives NaN.
  template <typename T> T logsumexp(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return reduce<T>(Op::logsumexp, d_in, n, stream);
  }
  /// The variance, the sum of squared deviations from the mean over n - 1 (torch.var's default
  /// correction of 1; Op::var), and its square root (Op::std_). Integers give float64, floats
  /// their own type (bf16 and f16 accumulate in float32). n <= 1 gives NaN, as torch; an infinity
  /// or a NaN among the elements gives NaN.
  template <typename T> mean_t<T> var(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return moment(Op::var, d_in, n, stream);
  }
  template <typename T> mean_t<T> stddev(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return moment(Op::std_, d_in, n, stream);
  }
  /// The same with correction 0: over n (torch.var(x, correction=0); Op::var_population,
  /// Op::std_population). n = 0 gives NaN.
  template <typename T>
  mean_t<T> var_population(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return moment(Op::var_population, d_in, n, stream);
  }
  template <typename T>
  mean_t<T> stddev_population(const T* d_in, std::uint64_t n, CUstream stream = nullptr) {
    return moment(Op::std_population, d_in, n, stream);
  }

  /// Asynchronous: writes the result (one element of `dtype`, for bf16 and f16 too: see sum) to
  /// device memory `d_out` on
  /// `stream`, ordered after the stream's earlier work; returns once enqueued. The reducer keeps
  /// one workspace per concurrent caller; a call that reuses one is ordered on the device after
  /// the asynchronous reduction that used it last (the host never waits).
  ///
  /// CUDA graphs: reduce_async (and the segmented calls below) may be called on a stream that is
  /// being captured, in any capture mode. The captured work reads `d_in` and writes `d_out` at
  /// each replay, so a replay reduces whatever `d_in` holds then. The rules:
  /// - Each captured call gets scratch memory of its own, which the graph owns (a CUDA user
  ///   object): replays never share it with eager calls or with other graphs, so they may run
  ///   while the same Reducer serves other streams and threads. Instantiations of one graph
  ///   (cuGraphInstantiate twice, cuGraphClone, a child-graph node) share it: do not run them
  ///   at the same time (CUDA already orders the launches of one instantiation).
  /// - The graph also holds the compiled kernels and the device's primary context, so it may be
  ///   replayed and destroyed before or after the Reducer. Its memory is given back when the
  ///   graph and all its instantiations are destroyed and their launches have completed: to the
  ///   Reducer for later calls while it exists, else freed (by a thread of the library).
  /// - Every finish kind is right at every replay: counters are zeroed once at capture time and
  ///   reset by the kernels themselves, an atomic finish's result is set by a memset node, the
  ///   two-pass finish keeps its programmatic launch (CUDA 12.3+ drivers; plain before).
  /// - The first call of a size bucket may happen under capture: compiling, loading and
  ///   allocating run in relaxed capture mode (cuThreadExchangeStreamCaptureMode), as every
  ///   allocation of the Reducer's calls does, so they never invalidate a capture of this or
  ///   another thread.
  /// - On a capturing stream, `d_in` and `d_out` may be memory CUDA does not know yet: a
  ///   stream-ordered allocation made during the capture (cuMemAllocAsync, cudaMallocAsync, as
  ///   CuPy's and others' pools make) is a node of the graph until it runs. Memory the driver
  ///   knows is checked as outside a capture; outside one, unknown memory (a host pointer) is
  ///   refused.
  /// - Nothing the Reducer does depends on how a capture ends: after a capture that was ended,
  ///   aborted or invalidated, the Reducer serves every stream as before. On a stream whose capture
  ///   was invalidated, calls throw cuda errors (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) until it
  ///   is ended.
  /// - sum, min, max and reduce wait for their result and throw InvalidArgument on a capturing
  ///   stream, before enqueuing anything (the capture stays valid).
  /// Capturing needs a CUDA 11.4 or newer driver.
  void reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                    CUstream stream = nullptr);
  /// reduce_async with the result written as `result`: the element type (the call above) or, for
  /// bf16 and f16 (DType::bf16, DType::f16), DType::f32: `d_out` then receives the float32
  /// accumulator itself, not rounded to the element type (as torch.sum(x, dtype=torch.float32)
  /// or CUB with a float output). A sum is then within the float32 summation bound, without the
  /// final rounding, and, not having to round once at the end, may finish with atomic adds into
  /// the result, which is faster (docs/PERFORMANCE.md); like every float atomic finish, that is
  /// not bit-for-bit reproducible unless Options::deterministic is set. Min and max give the exact
  /// element as float32. Any other `result` throws InvalidArgument. Graph rules as above.
  void reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                    DType result, CUstream stream = nullptr);

  // ---- segmented reductions: one result per row, column or segment --------------------------
  // All asynchronous on `stream` like reduce_async (results in device memory, ordered after the
  // stream's earlier work, returning once enqueued) and thread-safe. Results are of the input's
  // dtype; sums of integers wrap, sums of bf16 and f16 accumulate in float32 and round once (see
  // sum), min/max are exact (floats: NaN and signed zeros as sum() says). An empty row, column or
  // segment gives the identity (see sum()). Zero rows, columns or segments enqueue nothing. Throws InvalidArgument
  // for a host or null pointer with a non-zero count, a row stride below cols, or a shape whose
  // element count overflows 64 bits.

  /// Reduces each row of the row-major `rows` x `cols` matrix at `d_in`, whose rows start
  /// `row_stride` elements apart (0: cols, a dense matrix; larger for a sub-matrix), into
  /// `d_out[row]`.
  void reduce_rows(DType dtype, Op op, const void* d_in, std::uint64_t rows, std::uint64_t cols,
                   void* d_out, CUstream stream = nullptr, std::uint64_t row_stride = 0);
  /// Reduces each column of the same matrix into `d_out[col]` (`cols` results).
  /// For both: a shape with one element per result (rows of a dense n x 1 matrix, columns of a
  /// single row) is a device-to-device copy, and one with a single result over contiguous elements
  /// (a single row, the column of a dense n x 1 matrix) is reduce_async's tuned 1-D reduction;
  /// config_for(..., problem, shape) still names the segmented configuration for those shapes.
  void reduce_columns(DType dtype, Op op, const void* d_in, std::uint64_t rows, std::uint64_t cols,
                      void* d_out, CUstream stream = nullptr, std::uint64_t row_stride = 0);
  /// Reduces segment s = [d_offsets[s], d_offsets[s+1]) of `d_in` into `d_out[s]`, for s <
  /// `segments`. `d_offsets` holds segments + 1 non-decreasing int64 offsets in device memory
  /// (CSR row offsets; offsets[0] need not be 0), each within d_in's allocation. Decreasing
  /// offsets are outside the contract: the results are then unspecified.
  /// `elements`, where the caller knows it: how many elements the segments span,
  /// offsets[segments] - offsets[0], or near it (the input's size will do); 0: not known. The
  /// offsets are on the device, so without it the configuration is looked up by the segment
  /// count alone (tuned at large totals), unless d_in's allocation is known to hold fewer than
  /// 2^22 elements: then the call spans no more, and that extent stands in for `elements`. With
  /// it, by the count and the mean length, as rows are. It picks the configuration only: the
  /// results never depend on it (segments_config_for says which). Throws InvalidArgument where
  /// d_in's allocation is known to hold fewer than `elements`.
  void reduce_segments(DType dtype, Op op, const void* d_in, const std::int64_t* d_offsets,
                       std::uint64_t segments, void* d_out, CUstream stream = nullptr,
                       std::uint64_t elements = 0);

  template <typename T>
  void sum_rows(const T* d_in, std::uint64_t rows, std::uint64_t cols, T* d_out,
                CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    reduce_rows(dtype_of<T>(), Op::sum, d_in, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void min_rows(const T* d_in, std::uint64_t rows, std::uint64_t cols, T* d_out,
                CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    reduce_rows(dtype_of<T>(), Op::min, d_in, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void max_rows(const T* d_in, std::uint64_t rows, std::uint64_t cols, T* d_out,
                CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    reduce_rows(dtype_of<T>(), Op::max, d_in, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void sum_columns(const T* d_in, std::uint64_t rows, std::uint64_t cols, T* d_out,
                   CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    reduce_columns(dtype_of<T>(), Op::sum, d_in, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void min_columns(const T* d_in, std::uint64_t rows, std::uint64_t cols, T* d_out,
                   CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    reduce_columns(dtype_of<T>(), Op::min, d_in, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void max_columns(const T* d_in, std::uint64_t rows, std::uint64_t cols, T* d_out,
                   CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    reduce_columns(dtype_of<T>(), Op::max, d_in, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void sum_segments(const T* d_in, const std::int64_t* d_offsets, std::uint64_t segments, T* d_out,
                    CUstream stream = nullptr, std::uint64_t elements = 0) {
    reduce_segments(dtype_of<T>(), Op::sum, d_in, d_offsets, segments, d_out, stream, elements);
  }
  template <typename T>
  void min_segments(const T* d_in, const std::int64_t* d_offsets, std::uint64_t segments, T* d_out,
                    CUstream stream = nullptr, std::uint64_t elements = 0) {
    reduce_segments(dtype_of<T>(), Op::min, d_in, d_offsets, segments, d_out, stream, elements);
  }
  template <typename T>
  void max_segments(const T* d_in, const std::int64_t* d_offsets, std::uint64_t segments, T* d_out,
                    CUstream stream = nullptr, std::uint64_t elements = 0) {
    reduce_segments(dtype_of<T>(), Op::max, d_in, d_offsets, segments, d_out, stream, elements);
  }

  // ---- user reductions (reduce_tune/reduction.h) --------------------------------------------
  // The calls above with a Reduction in place of the Op: asynchronous, results in device memory
  // (one of r.result_dtype(dtype) each), the same checks, shapes and CUDA graph rules. The first
  // call of a description compiles it (a failure throws ReductionError with NVRTC's log); its
  // configuration is looked up per size bucket from the rows of a built-in op whose accumulator
  // has the same size (Match::related, the note names the op), else the built-in default; every
  // configuration is checked against the reduction's own rules first (no atomic,
  // host, in-place or __reduce_*_sync path; a non-commutative combine keeps the elements' order,
  // and a problem without such a variant throws ReductionError). No elements (n = 0, rows of no
  // columns, an empty segment) give post(identity, 0).
  void reduce_async(const Reduction& r, DType dtype, const void* d_in, std::uint64_t n, void* d_out,
                    CUstream stream = nullptr);
  void reduce_rows(const Reduction& r, DType dtype, const void* d_in, std::uint64_t rows,
                   std::uint64_t cols, void* d_out, CUstream stream = nullptr,
                   std::uint64_t row_stride = 0);
  void reduce_columns(const Reduction& r, DType dtype, const void* d_in, std::uint64_t rows,
                      std::uint64_t cols, void* d_out, CUstream stream = nullptr,
                      std::uint64_t row_stride = 0);
  void reduce_segments(const Reduction& r, DType dtype, const void* d_in,
                       const std::int64_t* d_offsets, std::uint64_t segments, void* d_out,
                       CUstream stream = nullptr, std::uint64_t elements = 0);
  /// The configuration a user reduction's call of `shape` uses (Problem::array: {1, n}), and
  /// how good a match it is; loads nothing. Throws ReductionError where no variant serves it.
  Choice config_for(const Reduction& r, DType dtype, Problem problem, Shape shape) const;

  // ---- dot: the sum of x[i] * y[i] over two inputs of one shape -------------------------------
  // Op::dot, through these calls only (the calls above read one input and throw InvalidArgument
  // for it). x and y have one dtype and one shape: the same n, or the same rows, cols and
  // row_stride, or the same offsets (both inputs are read at [d_offsets[s], d_offsets[s+1])).
  // The result has the element type: integers wrap (the products and the sum), bf16 and f16
  // multiply and accumulate in float32 and round once, as sum does; n = 0 (and an empty row,
  // column or segment) gives 0. The asynchronous calls follow reduce_async's and the segmented
  // calls' rules (CUDA graphs included); an input whose address is not at the other's offset from
  // a 16-byte boundary is read without vector loads (slower, the same result).

  /// Synchronous: the dot product of n elements at `d_x` and `d_y`, as sum() waits for its result.
  template <typename T>
  T dot(const T* d_x, const T* d_y, std::uint64_t n, CUstream stream = nullptr) {
    T out;
    dot_sync(dtype_of<T>(), d_x, d_y, n, &out, stream);
    return out;
  }
  /// Asynchronous: one element of `dtype` (or, for bf16 and f16, of `result` = DType::f32: the
  /// float32 accumulator, as reduce_async) at `d_out`.
  void dot_async(DType dtype, const void* d_x, const void* d_y, std::uint64_t n, void* d_out,
                 CUstream stream = nullptr);
  void dot_async(DType dtype, const void* d_x, const void* d_y, std::uint64_t n, void* d_out,
                 DType result, CUstream stream = nullptr);
  /// One dot product per row, per column or per offsets segment (as reduce_rows, reduce_columns
  /// and reduce_segments, with y read where x is).
  void dot_rows(DType dtype, const void* d_x, const void* d_y, std::uint64_t rows,
                std::uint64_t cols, void* d_out, CUstream stream = nullptr,
                std::uint64_t row_stride = 0);
  void dot_columns(DType dtype, const void* d_x, const void* d_y, std::uint64_t rows,
                   std::uint64_t cols, void* d_out, CUstream stream = nullptr,
                   std::uint64_t row_stride = 0);
  void dot_segments(DType dtype, const void* d_x, const void* d_y, const std::int64_t* d_offsets,
                    std::uint64_t segments, void* d_out, CUstream stream = nullptr,
                    std::uint64_t elements = 0);
  template <typename T>
  void dot_async(const T* d_x, const T* d_y, std::uint64_t n, T* d_out, CUstream stream = nullptr) {
    dot_async(dtype_of<T>(), d_x, d_y, n, d_out, stream);
  }
  template <typename T>
  void dot_rows(const T* d_x, const T* d_y, std::uint64_t rows, std::uint64_t cols, T* d_out,
                CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    dot_rows(dtype_of<T>(), d_x, d_y, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void dot_columns(const T* d_x, const T* d_y, std::uint64_t rows, std::uint64_t cols, T* d_out,
                   CUstream stream = nullptr, std::uint64_t row_stride = 0) {
    dot_columns(dtype_of<T>(), d_x, d_y, rows, cols, d_out, stream, row_stride);
  }
  template <typename T>
  void dot_segments(const T* d_x, const T* d_y, const std::int64_t* d_offsets,
                    std::uint64_t segments, T* d_out, CUstream stream = nullptr,
                    std::uint64_t elements = 0) {
    dot_segments(dtype_of<T>(), d_x, d_y, d_offsets, segments, d_out, stream, elements);
  }

  /// The GPU this reducer runs on.
  std::string device_name() const;

private:
  template <typename T> mean_t<T> moment(Op op, const T* d_in, std::uint64_t n, CUstream stream) {
    mean_t<T> out;
    reduce_sync(dtype_of<T>(), op, d_in, n, &out, dtype_of<mean_t<T>>(), stream);
    return out;
  }
  struct Impl;
  std::unique_ptr<Impl> impl_;
  void reduce_sync(DType dtype, Op op, const void* d_in, std::uint64_t n, void* h_out,
                   DType out_dtype, CUstream stream);
  void dot_sync(DType dtype, const void* d_x, const void* d_y, std::uint64_t n, void* h_out,
                CUstream stream);
};

} // namespace reduce_tune
