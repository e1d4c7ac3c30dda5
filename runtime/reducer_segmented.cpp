// reduce-tune: the runtime library's segmented calls (rows, columns, offsets segments): their
// argument checks, the shapes that are another problem in disguise, and the enqueue on a lease or
// into a graph being captured, as for the 1-D calls (runtime/reducer.cpp).
#include "runtime/reducer_impl.h"

#include <algorithm>
#include <string>

namespace reduce_tune {

void Reducer::Impl::run_segmented(Problem problem, DType dtype, Op op, const SegmentedArgs& a,
                                  CUstream stream) {
  const capture::Relaxed relaxed;
  const capture::State cap = capture::state(stream);
  const Entry& e = segmented_entry(problem, dtype, op, a.shape);
  Target t = target(dtype, op);
  t.problem = problem;
  const SegmentedPlan p = segmented_plan(e.kernel.config, t, a.shape);
  if (cap.active) {
    captured(
        cap.graph, e.kernel, [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, zero_on); },
        [&](const Kernel& k, Workspace& ws) { enqueue(k, p, a, ws, stream); });
    return;
  }
  Borrowed lease(*this, stream);
  lease.run(stream, [&](Lease& l) {
    l.ws.reserve(p, stream);
    enqueue(e.kernel, p, a, l.ws, stream);
    l.done.record(stream);
    l.stream = stream;
    l.pending = true;
  });
}

Choice Reducer::config_for(DType dtype, Op op, Problem problem, Shape shape) const {
  if (problem == Problem::array) return async_config_for(dtype, op, shape.length);
  check_problem(dtype, op);
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  const capture::Relaxed relaxed; // a first use loads the module
  Choice c = *impl_->segmented_entry(problem, dtype, op, shape).choice;
  if (c.match == Match::exact || c.match == Match::nearest_size)
    c.match = c.tuned_shape == shape ? Match::exact : Match::nearest_size;
  return c;
}

namespace {

/// The checks every segmented call makes; returns the shape. `rows` x `cols` with `stride`
/// (already defaulted) for rows and columns.
SegmentedArgs matrix_args(Problem problem, DType dtype, const void* d_in, std::uint64_t rows,
                          std::uint64_t cols, void* d_out, std::uint64_t stride, int ordinal) {
  const char* what = problem == Problem::rows ? "reduce_rows" : "reduce_columns";
  if (stride < cols)
    throw InvalidArgument(std::string("reduce_tune: ") + what + ": row_stride " +
                          std::to_string(stride) + " is below cols " + std::to_string(cols));
  const std::uint64_t max = ~std::uint64_t(0) / size_of(dtype);
  if (rows > 0 && (stride > (max - cols) / rows))
    throw InvalidArgument(std::string("reduce_tune: ") + what + ": " + std::to_string(rows) +
                          " rows of stride " + std::to_string(stride) +
                          " overflow a 64-bit byte count");
  const std::uint64_t elements = rows == 0 ? 0 : (rows - 1) * stride + cols;
  const std::uint64_t results = problem == Problem::rows ? rows : cols;
  check_pointer("d_in", d_in, elements, dtype, ordinal);
  check_pointer("d_out", d_out, results, dtype, ordinal);
  SegmentedArgs a;
  a.in = reinterpret_cast<CUdeviceptr>(d_in);
  a.out = reinterpret_cast<CUdeviceptr>(d_out);
  a.shape = problem == Problem::rows ? Shape{rows, cols} : Shape{cols, rows};
  a.stride = stride;
  return a;
}

} // namespace

void Reducer::Impl::reduce_matrix(Problem problem, DType dtype, Op op, const void* d_in,
                                  std::uint64_t rows, std::uint64_t cols, void* d_out,
                                  CUstream stream, std::uint64_t row_stride) {
  check_problem(dtype, op);
  if ((problem == Problem::rows ? rows : cols) == 0) return;
  const RestoreContext restore;
  restore.enter(ctx);
  const std::uint64_t stride = row_stride ? row_stride : cols;
  const SegmentedArgs a = matrix_args(problem, dtype, d_in, rows, cols, d_out, stride, context.ordinal());
  // Shapes that are another problem in disguise take that problem's faster path: one element per
  // result (rows of one dense column, columns of one row) is a copy (a sum of one element is the
  // element, NaN and -0.0 included), and one result over contiguous elements (one row, or the
  // column of a dense n x 1 matrix) is the tuned 1-D reduction.
  const bool dense = stride == cols || rows == 1;
  const std::uint64_t per_result = a.shape.length, results = a.shape.count;
  if (per_result == 1 && (problem == Problem::columns || dense)) {
    RT_CU(cuMemcpyDtoDAsync(a.out, a.in, results * size_of(dtype), stream));
    return;
  }
  if (results == 1 && dense) {
    reduce_array_async(dtype, op, d_in, per_result, d_out, stream);
    return;
  }
  run_segmented(problem, dtype, op, a, stream);
}

void Reducer::reduce_rows(DType dtype, Op op, const void* d_in, std::uint64_t rows,
                          std::uint64_t cols, void* d_out, CUstream stream,
                          std::uint64_t row_stride) {
  impl_->reduce_matrix(Problem::rows, dtype, op, d_in, rows, cols, d_out, stream, row_stride);
}

void Reducer::reduce_columns(DType dtype, Op op, const void* d_in, std::uint64_t rows,
                             std::uint64_t cols, void* d_out, CUstream stream,
                             std::uint64_t row_stride) {
  impl_->reduce_matrix(Problem::columns, dtype, op, d_in, rows, cols, d_out, stream, row_stride);
}

namespace {

/// An allocation of fewer elements stands in for a call's element count. The count-only lookup
/// takes a count's tuning at the middle of its totals from 2^20 up (2^20 and 2^24: 2^24, the tie's
/// larger), and an allocation of 2^22 elements or more finds that one too; a smaller one says the
/// call is smaller than that lookup assumes.
constexpr std::uint64_t kExtentStandsInBelow = std::uint64_t(1) << 22;

/// The shape an offsets call is looked up by, its input checked: {segments, mean length} of
/// `elements`, or where that is 0 and d_in's allocation holds fewer than kExtentStandsInBelow
/// elements (the call spans no more), of that extent; else {segments, 0}, the count-only lookup.
Shape segments_shape(DType dtype, const void* d_in, std::uint64_t segments, std::uint64_t elements,
                     int ordinal) {
  if (segments >= (std::uint64_t(1) << 40))
    throw InvalidArgument("reduce_tune: reduce_segments: " + std::to_string(segments) +
                          " segments: at most 2^40 are supported");
  // The lengths are in device memory: the input's extent is checked against `elements` only.
  const std::optional<std::uint64_t> room = check_pointer("d_in", d_in, elements, dtype, ordinal);
  if (!elements && room && *room < kExtentStandsInBelow) elements = *room;
  // The mean length, at least 1 (fewer elements than segments: the shortest tuned mean).
  return {segments, elements ? std::max<std::uint64_t>(elements / segments, 1) : 0};
}

} // namespace

Choice Reducer::segments_config_for(DType dtype, Op op, const void* d_in, std::uint64_t segments,
                                    std::uint64_t elements) const {
  check_problem(dtype, op);
  Shape shape;
  {
    const RestoreContext restore;
    restore.enter(impl_->ctx);
    shape = segments_shape(dtype, d_in, std::max<std::uint64_t>(segments, 1), elements,
                           impl_->context.ordinal());
  }
  return config_for(dtype, op, Problem::segments, shape);
}

void Reducer::reduce_segments(DType dtype, Op op, const void* d_in, const std::int64_t* d_offsets,
                              std::uint64_t segments, void* d_out, CUstream stream,
                              std::uint64_t elements) {
  check_problem(dtype, op);
  if (segments == 0) return;
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  const int ordinal = impl_->context.ordinal();
  SegmentedArgs a;
  a.shape = segments_shape(dtype, d_in, segments, elements, ordinal);
  check_pointer("d_offsets", d_offsets, segments + 1, DType::i64, ordinal);
  check_pointer("d_out", d_out, segments, dtype, ordinal);
  a.in = reinterpret_cast<CUdeviceptr>(d_in);
  a.offsets = reinterpret_cast<CUdeviceptr>(d_offsets);
  a.out = reinterpret_cast<CUdeviceptr>(d_out);
  impl_->run_segmented(Problem::segments, dtype, op, a, stream);
}

} // namespace reduce_tune
