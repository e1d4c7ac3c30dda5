// reduce-tune: the Reducer's calls with a user reduction (reduce_tune/reduction.h). Their
// arguments are checked as the built-in ops' are (runtime/arguments.h), their configuration is
// looked up once per (reduction, problem, dtype, shape bucket) -- its own rows, stored under its
// hash by `reduce-tune tune --reduction`, then a related built-in op's, then the defaults -- and
// they run through the one call path (runtime/launch.cpp), with the reduction's kernel in place
// of an op's.
#include "runtime/reducer_state.h"

#include "kernels/ops.h"
#include "runtime/user_lookup.h"

#include <algorithm>

namespace reduce_tune {
namespace {

using cuda::driver;

/// The reducer's context current and the relaxed capture mode for a call (see reducer.cpp).
class UserCallScope {
public:
  explicit UserCallScope(CUcontext ctx) {
    RT_CU(cuCtxGetCurrent(&caller_));
    if (ctx && ctx != caller_) RT_CU(cuCtxSetCurrent(ctx));
  }
  ~UserCallScope() {
    CUcontext now = nullptr;
    if (driver().cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != caller_)
      driver().cuCtxSetCurrent(caller_);
  }
  UserCallScope(const UserCallScope&) = delete;
  UserCallScope& operator=(const UserCallScope&) = delete;

private:
  CUcontext caller_ = nullptr;
  capture::Relaxed relaxed_;
};

void check_dtype(DType dtype) {
  if (static_cast<unsigned>(dtype) >= detail::kDTypes)
    throw InvalidArgument("reduce_tune: unsupported dtype (enum value " +
                          std::to_string(static_cast<int>(dtype)) + ")");
}

} // namespace

std::shared_ptr<const UserOp> Reducer::Impl::user_op(const Reduction& r) {
  const std::uint64_t h = r.hash();
  std::lock_guard lock(user_mu);
  if (auto it = user_ops.find(h); it != user_ops.end()) {
    if (it->second->description.canonical() != r.canonical())
      throw ReductionError("reduce_tune: two reductions share the hash " + r.name() +
                           ": change either description");
    return it->second;
  }
  std::shared_ptr<const UserOp> op = make_user_op(r);
  user_ops.emplace(h, op);
  return op;
}

Choice Reducer::Impl::choose_user(const UserOp& u, const EntryKey& k) {
  DeviceKey dev = device;
  if (dev.sm_count <= 0) dev.sm_count = info.sm_count;
  std::lock_guard lock(store_mu);
  return lookup_user(store.get(), shipped.get(), dev, u, k.dtype, k.problem, k.at, requirements(Result::device),
                     no_store);
}

const Entry& Reducer::Impl::ready_user(const std::shared_ptr<const UserOp>& u, const EntryKey& k, Use use) {
  Entry* e = nullptr;
  {
    std::lock_guard lock(user_mu);
    auto& slot = user_entries[{u->hash, k.problem, k.dtype, k.at.count, k.at.length}];
    if (!slot) slot = std::make_unique<Entry>();
    e = slot.get();
  }
  if (e->ready.load(std::memory_order_acquire)) return *e;
  // As a built-in op's entry: tuned on first use (under the reduction's hash), recorded.
  return make_ready(*e, k, use, u);
}

// ---- the public calls -----------------------------------------------------------------------

Choice Reducer::config_for(const Reduction& r, DType dtype, Problem problem, Shape shape) const {
  check_dtype(dtype);
  check_problem(problem);
  const std::shared_ptr<const UserOp> u = impl_->user_op(r);
  u->result_dtype(dtype); // throws for a dtype it does not take
  if (problem == Problem::array) shape = {1, shape.length};
  return impl_->choose_user(*u, entry_key(problem, dtype, Op::sum, shape, Result::device));
}

void Reducer::reduce_async(const Reduction& r, DType dtype, const void* d_in, std::uint64_t n,
                           void* d_out, CUstream stream) {
  check_dtype(dtype);
  const std::shared_ptr<const UserOp> u = impl_->user_op(r);
  const DType result = u->result_dtype(dtype);
  const UserCallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  Call c;
  c.problem = Problem::array;
  c.dtype = dtype;
  c.user = u;
  c.args.shape = {1, n}; // n = 0: one block writes post(identity, 0)
  check_pointer("d_out", d_out, 1, result, impl_->ordinal, cap.active);
  c.args.out = reinterpret_cast<CUdeviceptr>(d_out);
  c.out_count = 1;
  if (n) {
    check_pointer("d_in", d_in, n, dtype, impl_->ordinal, cap.active);
    c.args.in = reinterpret_cast<CUdeviceptr>(d_in);
    c.in_count = n;
  }
  impl_->run(c, stream, cap);
}

namespace {

/// A user reduction's rows or columns call, checked as matrix_call checks a built-in op's; a
/// single dense row (or the column of a dense n x 1 matrix) of a commutative reduction is its 1-D
/// problem.
Call user_matrix_call(Problem problem, const std::shared_ptr<const UserOp>& u, DType dtype,
                      const void* d_in, std::uint64_t rows, std::uint64_t cols, void* d_out,
                      std::uint64_t row_stride, int ordinal, bool capturing) {
  const std::uint64_t stride = matrix_stride(problem, dtype, rows, cols, row_stride);
  Call c = matrix_layout(problem, dtype, u->result_dtype(dtype), d_in, rows, cols, d_out, stride,
                         ordinal, capturing);
  c.user = u;
  const std::uint64_t results = problem == Problem::rows ? rows : cols;
  const bool dense = stride == cols || rows == 1;
  if (results == 1 && dense && !u->ordered()) {
    c.problem = Problem::array;
    c.args.shape = {1, c.args.shape.length};
    c.args.stride = 0;
  }
  return c;
}

} // namespace

void Reducer::reduce_rows(const Reduction& r, DType dtype, const void* d_in, std::uint64_t rows,
                          std::uint64_t cols, void* d_out, CUstream stream, std::uint64_t row_stride) {
  check_dtype(dtype);
  const std::shared_ptr<const UserOp> u = impl_->user_op(r);
  u->result_dtype(dtype);
  if (rows == 0) return;
  const UserCallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  impl_->run(user_matrix_call(Problem::rows, u, dtype, d_in, rows, cols, d_out, row_stride,
                              impl_->ordinal, cap.active),
             stream, cap);
}

void Reducer::reduce_columns(const Reduction& r, DType dtype, const void* d_in, std::uint64_t rows,
                             std::uint64_t cols, void* d_out, CUstream stream,
                             std::uint64_t row_stride) {
  check_dtype(dtype);
  const std::shared_ptr<const UserOp> u = impl_->user_op(r);
  u->result_dtype(dtype);
  if (cols == 0) return;
  const UserCallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  impl_->run(user_matrix_call(Problem::columns, u, dtype, d_in, rows, cols, d_out, row_stride,
                              impl_->ordinal, cap.active),
             stream, cap);
}

void Reducer::reduce_segments(const Reduction& r, DType dtype, const void* d_in,
                              const std::int64_t* d_offsets, std::uint64_t segments, void* d_out,
                              CUstream stream, std::uint64_t elements) {
  check_dtype(dtype);
  const std::shared_ptr<const UserOp> u = impl_->user_op(r);
  const DType result = u->result_dtype(dtype);
  if (segments == 0) return;
  const UserCallScope scope(impl_->ctx);
  const capture::State cap = capture::state(stream);
  Call c = segments_layout(dtype, result, d_in, d_offsets, segments, d_out, elements,
                           impl_->ordinal, cap.active);
  c.user = u;
  impl_->run(c, stream, cap);
}

} // namespace reduce_tune
