// reduce-tune: every check the Reducer makes of its arguments, and the Call they become: dtype, op
// and problem within their enums, the result a call may write, the pointers (device memory of the
// reducer's GPU, aligned, within their allocations), the shapes, and the shapes that are another
// problem in disguise. Throws InvalidArgument naming the problem. Not installed.
#pragma once

#include "kernels/runner.h"
#include "runtime/capture.h"
#include "runtime/entry_cache.h"

#include <cstdint>
#include <optional>

namespace reduce_tune::detail {

/// Throws InvalidArgument for a dtype or op outside the enums.
void check_problem(DType dtype, Op op);
/// Throws InvalidArgument for a problem outside the enum.
void check_problem(Problem problem);
/// Throws InvalidArgument for an empty reduction of an op that has none (argmax, argmin).
void check_not_empty(Op op);
/// Throws InvalidArgument where a call's inputs do not match the op: an op of two inputs (dot)
/// through a call of one (reduce_async, ...), or the dot calls with an op of one (`two`: the call
/// passes a second input).
void check_inputs(Op op, bool two);

/// What the driver says of a pointer (cuPointerGetAttributes, which answers zeroes for a pointer it
/// does not know).
struct PointerFacts {
  unsigned type = 0;     ///< CU_MEMORYTYPE_*; 0: not memory CUDA knows
  bool managed = false;
  int device = -1;       ///< the GPU of device memory
  CUdeviceptr start = 0; ///< the allocation's range; size 0 where the driver does not say
  std::size_t size = 0;
};

/// The rule check_pointer applies to what the driver says of `p` (already checked not null and
/// aligned): device memory of GPU `ordinal` or managed memory and, where the driver knows the
/// allocation's extent, room for `count` elements of `dtype`. Where the call's stream is being
/// captured (`capturing`), memory CUDA does not know is accepted: a stream-ordered allocation made
/// during the capture (cudaMallocAsync, as CuPy's and other pools do) is a node of the graph,
/// unknown to the driver's pointer queries until the graph runs; what the kernels read and write
/// is then the graph's business, as for any captured kernel. Everything else is refused as outside
/// a capture. Throws InvalidArgument naming `what` and the problem; returns the elements of
/// `dtype` from `p` to the allocation's end where the driver knows it.
std::optional<std::uint64_t> judge_pointer(const char* what, CUdeviceptr p, std::uint64_t count,
                                           DType dtype, int ordinal, bool capturing,
                                           const PointerFacts& facts);

/// Checks that the kernels can access `count` elements of `dtype` at `p`: not null, aligned to the
/// element, then judge_pointer of the driver's answer (one cuPointerGetAttributes). Throws
/// InvalidArgument naming `what` and the problem. Returns the elements of `dtype` from `p` to the
/// allocation's end where the driver knows it. Outside a capture, the calling thread remembers the
/// allocation of device memory it found (the last few: see checked_before).
std::optional<std::uint64_t> check_pointer(const char* what, const void* p, std::uint64_t count,
                                           DType dtype, int ordinal, bool capturing = false);

/// Whether `count` elements of `dtype` at `p` (aligned) lie in an allocation of GPU `ordinal` that
/// check_pointer accepted on this thread: no driver call. An allocation is remembered until
/// another pushes it out or a later check finds something else at its addresses; memory freed
/// and its addresses reused for host memory or another GPU's before this thread checks them again
/// is not noticed (the calls then fail as the kernels' accesses do).
bool checked_before(const void* p, std::uint64_t count, DType dtype, int ordinal);
/// What check_pointer does with an allocation it accepted outside a capture: the calling thread
/// remembers [start, start + size) as memory of GPU `ordinal` (the most recent first, 8 at most),
/// dropping any it remembered that overlaps it.
void remember_checked(CUdeviceptr start, std::size_t size, int ordinal);

/// The Result of an asynchronous call that writes `result`: Result::device for the element type,
/// Result::wide for float32 from bf16 or f16; InvalidArgument for anything else.
Result result_kind(DType dtype, Op op, DType result);

/// Throws InvalidArgument for a synchronous call on a capturing stream, before anything is
/// enqueued (so the capture stays valid).
void refuse_capture(const capture::State& cap);

/// A call whose arguments were checked: what the call path runs.
struct Call {
  enum class Work {
    reduce,   ///< the tuned kernel of (problem, shape bucket, dtype, op, result)
    identity, ///< the array problem of n = 0: the identity into args.out
    copy,     ///< one element per result: args.shape.count elements from args.in to args.out
  };
  Work work = Work::reduce;
  Problem problem = Problem::array;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Result result = Result::device;
  /// A user reduction in place of `op` (runtime/reducer_user.cpp makes its calls).
  std::shared_ptr<const UserOp> user;
  /// in, offsets, out (0 for a host result), shape ({1, n} for the array problem) and stride.
  SegmentedArgs args;
  /// Elements of dtype from args.in, and of the result's dtype from args.out, that the call
  /// reads and writes (what its pointers were checked for).
  std::uint64_t in_count = 0, out_count = 0;
};

/// sum/min/max (Result::host: `d_out` unused) or reduce_async of n elements. dtype and op checked.
Call array_call(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out, Result result,
                int ordinal, bool capturing = false);
/// reduce_rows or reduce_columns (`problem`) of a rows x cols matrix, row_stride 0 meaning cols,
/// at least one result. dtype and op checked. One element per result (rows of one dense column,
/// columns of one row) is a copy (a sum of one element is the element, NaN and -0.0 included);
/// one result over contiguous elements (one row, or the column of a dense n x 1 matrix) is the
/// array problem.
Call matrix_call(Problem problem, DType dtype, Op op, const void* d_in, std::uint64_t rows,
                 std::uint64_t cols, void* d_out, std::uint64_t row_stride, int ordinal,
                 bool capturing = false);
/// The stride of a rows or columns call (`problem`) of a rows x cols matrix of `dtype`, row_stride
/// 0 meaning cols, checked: not below cols, the matrix's extent within a 64-bit byte count.
std::uint64_t matrix_stride(Problem problem, DType dtype, std::uint64_t rows, std::uint64_t cols,
                            std::uint64_t row_stride);
/// What a rows or columns call of a built-in op or a user reduction shares: its pointers checked
/// (d_in for the matrix of `stride`, d_out for its results of `result`) and the Call of its
/// problem, dtype, counts, pointers, shape and stride; the caller sets the op or the reduction.
Call matrix_layout(Problem problem, DType dtype, DType result, const void* d_in,
                   std::uint64_t rows, std::uint64_t cols, void* d_out, std::uint64_t stride,
                   int ordinal, bool capturing);
/// The second input of a dot call (`d_in2`, as many elements as c's first input, in its layout)
/// checked and added to `c`; nothing for a call that reads no input (Call::Work::identity).
void add_second_input(Call& c, const void* d_in2, int ordinal, bool capturing = false);
/// reduce_segments of at least one segment. dtype and op checked.
Call segments_call(DType dtype, Op op, const void* d_in, const std::int64_t* d_offsets,
                   std::uint64_t segments, void* d_out, std::uint64_t elements, int ordinal,
                   bool capturing = false);
/// What a segments call of a built-in op or a user reduction shares: its shape looked up and its
/// pointers checked (d_out for `segments` results of `result`), and the Call; the caller sets the
/// op or the reduction.
Call segments_layout(DType dtype, DType result, const void* d_in, const std::int64_t* d_offsets,
                     std::uint64_t segments, void* d_out, std::uint64_t elements, int ordinal,
                     bool capturing);
/// The shape an offsets call is looked up by, d_in checked against `elements`: {segments, mean
/// length} of `elements`, or where that is 0 and d_in's allocation holds fewer than 2^22 elements
/// (the call spans no more), of that extent; else {segments, 0}, the count-only lookup.
Shape segments_shape(DType dtype, const void* d_in, std::uint64_t segments, std::uint64_t elements,
                     int ordinal, bool capturing = false);

} // namespace reduce_tune::detail
