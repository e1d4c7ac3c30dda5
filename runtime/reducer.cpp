// reduce-tune: the runtime library's public calls. Each checks its arguments into a Call
// (runtime/arguments.h) and hands it to the one call path (runtime/reducer_state.h): entry ->
// lookup, once per (problem, shape bucket, dtype, op, result) -> plan -> launch. An asynchronous
// call that the thread made before, on pointers in allocations it checked before, first tries the
// warm path (runtime/warm.h): the decision remembered, no check or lookup, only the launch.
#include "runtime/reducer_state.h"

#include "kernels/values.h"

#include <algorithm>
#include <cstring>

namespace reduce_tune {

bool gpu_available(std::string* why) { return cuda::available(why); }

namespace {

using cuda::driver;

/// What holds for the length of a call: the reducer's context current (the caller's made current
/// again at the end: the reducer leaves it as it was), and the relaxed capture mode
/// (capture::Relaxed), so the call's compiling, loading and allocating never invalidate a capture
/// of this or another thread.
class CallScope {
public:
  /// `ctx` null: the current context is left as it is (and restored at the end all the same).
  explicit CallScope(CUcontext ctx) {
    RT_CU(cuCtxGetCurrent(&caller_));
    if (ctx && ctx != caller_) RT_CU(cuCtxSetCurrent(ctx));
  }
  ~CallScope() {
    CUcontext now = nullptr;
    if (driver().cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != caller_)
      driver().cuCtxSetCurrent(caller_);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

private:
  CUcontext caller_ = nullptr;
  capture::Relaxed relaxed_;
};

/// `c` graded for the shape asked about rather than its bucket's lower end: exact where it was
/// tuned at that very shape (the array problem: at that n), else nearest_size.
Choice graded(Choice c, Problem problem, Shape asked) {
  if (c.match != Match::exact && c.match != Match::nearest_size) return c;
  const bool same = problem == Problem::array ? c.tuned_n == asked.length : c.tuned_shape == asked;
  c.match = same ? Match::exact : Match::nearest_size;
  return c;
}

/// The shape of a 1-D call of n elements (n = 0 is looked up as 1), which its choice is graded for.
Shape array_shape(std::uint64_t n) { return {1, std::max<std::uint64_t>(n, 1)}; }

} // namespace

Reducer::Reducer(int ordinal, Options options) {
  const CallScope scope(nullptr); // the primary context is made current while setting up
  impl_ = std::make_unique<Impl>(ordinal, std::move(options));
}

Reducer::~Reducer() {
  if (!impl_) return;
  // Memory, events and modules are released in the reducer's context, after any asynchronous
  // reduction still using them; errors cannot be reported from here.
  CUcontext caller = nullptr;
  driver().cuCtxGetCurrent(&caller);
  driver().cuCtxSetCurrent(impl_->ctx);
  try {
    const capture::Relaxed relaxed; // frees must not invalidate another thread's capture
    impl_->leases.wait_idle();
    // Warm calls that took no lease left no event to wait for: their kernels may still be queued.
    if (impl_->unleased.load()) driver().cuCtxSynchronize();
    impl_->home->close(); // graphs that outlive the reducer free their workspaces themselves
    impl_.reset();
  } catch (...) {
  }
  driver().cuCtxSetCurrent(caller);
}

std::string Reducer::device_name() const { return impl_->info.name; }

// ---- configurations ---------------------------------------------------------------------------

// The 1-D calls' configuration for n is looked up without loading it.
Choice Reducer::config_for(DType dtype, Op op, std::uint64_t n) const {
  check_problem(dtype, op);
  const Shape shape = array_shape(n);
  return graded(impl_->choice(entry_key(Problem::array, dtype, op, shape, Result::host)),
                Problem::array, shape);
}

Choice Reducer::async_config_for(DType dtype, Op op, std::uint64_t n) const {
  check_problem(dtype, op);
  return async_config_for(dtype, op, n, result_dtype(op, dtype)); // as reduce_async's own result
}

Choice Reducer::async_config_for(DType dtype, Op op, std::uint64_t n, DType result) const {
  const Result r = result_kind(dtype, op, result);
  check_problem(dtype, op);
  const Shape shape = array_shape(n);
  return graded(impl_->choice(entry_key(Problem::array, dtype, op, shape, r)), Problem::array, shape);
}

Choice Reducer::config_for(DType dtype, Op op, Problem problem, Shape shape) const {
  if (problem == Problem::array) return async_config_for(dtype, op, shape.length);
  check_problem(dtype, op);
  check_problem(problem);
  const CallScope scope(impl_->ctx); // a first use loads the module
  const EntryKey k = entry_key(problem, dtype, op, shape, Result::device);
  return graded(*impl_->ready(k, Reducer::Impl::Use::query).choice, problem, shape);
}

Choice Reducer::segments_config_for(DType dtype, Op op, const void* d_in, std::uint64_t segments,
                                    std::uint64_t elements) const {
  check_problem(dtype, op);
  Shape shape;
  {
    const CallScope scope(impl_->ctx);
    shape = segments_shape(dtype, d_in, std::max<std::uint64_t>(segments, 1), elements,
                           impl_->ordinal);
  }
  return config_for(dtype, op, Problem::segments, shape);
}

// ---- 1-D reductions ---------------------------------------------------------------------------

void Reducer::reduce_sync(DType dtype, Op op, const void* d_in, std::uint64_t n, void* h_out,
                          DType out_dtype, CUstream stream) {
  check_problem(dtype, op);
  check_inputs(op, false);
  const DType result = result_dtype(op, dtype);
  if (result != out_dtype)
    throw InvalidArgument("reduce_tune: a " + std::string(name(dtype)) + " " + std::string(name(op)) +
                          " gives " + std::string(name(result)) + ", not " +
                          std::string(name(out_dtype)) + " (see the typed helpers)");
  const std::size_t es = size_of(result);
  if (n == 0) {
    check_not_empty(op);
    const std::uint64_t bits = empty_result(op, result).bits;
    std::memcpy(h_out, &bits, es);
    return;
  }
  const CallScope scope(impl_->ctx);
  refuse_capture(capture::state(stream));
  const Scalar r = impl_->run_to_host(
      array_call(dtype, op, d_in, n, nullptr, Result::host, impl_->ordinal), stream);
  std::memcpy(h_out, &r.bits, es);
}

void Reducer::reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                           CUstream stream) {
  check_problem(dtype, op);
  reduce_async(dtype, op, d_in, n, d_out, result_dtype(op, dtype), stream); // Result::device
}

void Reducer::reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                           DType result, CUstream stream) {
  const WarmKey key{impl_->serial, n, 0, 0, Problem::array, dtype, op, result};
  if (impl_->run_warm(key, d_in, d_out, stream)) return;
  check_problem(dtype, op);
  check_inputs(op, false);
  const Result r = result_kind(dtype, op, result);
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream); // first: a capture's pointers are its own
  impl_->run(array_call(dtype, op, d_in, n, d_out, r, impl_->ordinal, cap.active), stream, cap,
             &key);
}

// ---- segmented reductions ---------------------------------------------------------------------

void Reducer::reduce_rows(DType dtype, Op op, const void* d_in, std::uint64_t rows,
                          std::uint64_t cols, void* d_out, CUstream stream,
                          std::uint64_t row_stride) {
  const WarmKey key{impl_->serial, rows, cols, row_stride, Problem::rows, dtype, op, dtype};
  if (impl_->run_warm(key, d_in, d_out, stream)) return;
  check_problem(dtype, op);
  check_inputs(op, false);
  if (rows == 0) return;
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  impl_->run(matrix_call(Problem::rows, dtype, op, d_in, rows, cols, d_out, row_stride,
                         impl_->ordinal, cap.active),
             stream, cap, &key);
}

void Reducer::reduce_columns(DType dtype, Op op, const void* d_in, std::uint64_t rows,
                             std::uint64_t cols, void* d_out, CUstream stream,
                             std::uint64_t row_stride) {
  const WarmKey key{impl_->serial, rows, cols, row_stride, Problem::columns, dtype, op, dtype};
  if (impl_->run_warm(key, d_in, d_out, stream)) return;
  check_problem(dtype, op);
  check_inputs(op, false);
  if (cols == 0) return;
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  impl_->run(matrix_call(Problem::columns, dtype, op, d_in, rows, cols, d_out, row_stride,
                         impl_->ordinal, cap.active),
             stream, cap, &key);
}

void Reducer::reduce_segments(DType dtype, Op op, const void* d_in, const std::int64_t* d_offsets,
                              std::uint64_t segments, void* d_out, CUstream stream,
                              std::uint64_t elements) {
  check_problem(dtype, op);
  check_inputs(op, false);
  if (segments == 0) return;
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  impl_->run(segments_call(dtype, op, d_in, d_offsets, segments, d_out, elements, impl_->ordinal,
                           cap.active),
             stream, cap);
}

// ---- dot: two inputs --------------------------------------------------------------------------
// The one-input calls' paths with the second input checked and added to the Call; no warm path
// (its key and pointer checks are of one input), so every dot call checks both pointers.

void Reducer::dot_sync(DType dtype, const void* d_x, const void* d_y, std::uint64_t n, void* h_out,
                       CUstream stream) {
  check_problem(dtype, Op::dot);
  const std::size_t es = size_of(dtype);
  if (n == 0) {
    const std::uint64_t bits = empty_result(Op::dot, dtype).bits;
    std::memcpy(h_out, &bits, es);
    return;
  }
  const CallScope scope(impl_->ctx);
  refuse_capture(capture::state(stream));
  Call c = array_call(dtype, Op::dot, d_x, n, nullptr, Result::host, impl_->ordinal);
  add_second_input(c, d_y, impl_->ordinal);
  const Scalar r = impl_->run_to_host(c, stream);
  std::memcpy(h_out, &r.bits, es);
}

void Reducer::dot_async(DType dtype, const void* d_x, const void* d_y, std::uint64_t n,
                        void* d_out, CUstream stream) {
  check_problem(dtype, Op::dot);
  dot_async(dtype, d_x, d_y, n, d_out, dtype, stream);
}

void Reducer::dot_async(DType dtype, const void* d_x, const void* d_y, std::uint64_t n,
                        void* d_out, DType result, CUstream stream) {
  check_problem(dtype, Op::dot);
  const Result r = result_kind(dtype, Op::dot, result);
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  Call c = array_call(dtype, Op::dot, d_x, n, d_out, r, impl_->ordinal, cap.active);
  add_second_input(c, d_y, impl_->ordinal, cap.active);
  impl_->run(c, stream, cap);
}

void Reducer::dot_rows(DType dtype, const void* d_x, const void* d_y, std::uint64_t rows,
                       std::uint64_t cols, void* d_out, CUstream stream, std::uint64_t row_stride) {
  check_problem(dtype, Op::dot);
  if (rows == 0) return;
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  Call c = matrix_call(Problem::rows, dtype, Op::dot, d_x, rows, cols, d_out, row_stride,
                       impl_->ordinal, cap.active);
  add_second_input(c, d_y, impl_->ordinal, cap.active);
  impl_->run(c, stream, cap);
}

void Reducer::dot_columns(DType dtype, const void* d_x, const void* d_y, std::uint64_t rows,
                          std::uint64_t cols, void* d_out, CUstream stream,
                          std::uint64_t row_stride) {
  check_problem(dtype, Op::dot);
  if (cols == 0) return;
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  Call c = matrix_call(Problem::columns, dtype, Op::dot, d_x, rows, cols, d_out, row_stride,
                       impl_->ordinal, cap.active);
  add_second_input(c, d_y, impl_->ordinal, cap.active);
  impl_->run(c, stream, cap);
}

void Reducer::dot_segments(DType dtype, const void* d_x, const void* d_y,
                           const std::int64_t* d_offsets, std::uint64_t segments, void* d_out,
                           CUstream stream, std::uint64_t elements) {
  check_problem(dtype, Op::dot);
  if (segments == 0) return;
  const CallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  Call c = segments_call(dtype, Op::dot, d_x, d_offsets, segments, d_out, elements, impl_->ordinal,
                         cap.active);
  add_second_input(c, d_y, impl_->ordinal, cap.active);
  impl_->run(c, stream, cap);
}

} // namespace reduce_tune
