// reduce-tune: the Reducer's calls with a user reduction (reduce_tune/reduction.h). Their
// arguments are checked as the built-in ops' are (runtime/arguments.h), their configuration is
// looked up once per (reduction, problem, dtype, shape bucket) and they run through the one call
// path (runtime/launch.cpp), with the reduction's kernel in place of an op's.
#include "runtime/reducer_state.h"

#include "kernels/ops.h"
#include "runtime/defaults.h"

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

/// The built-in op whose tuning a user reduction of `dtype` takes where it has none of its own:
/// the first of these that reduces the dtype with an accumulator of the user's size (its shared
/// memory, partials and shuffles cost the same), or nullopt.
std::optional<Op> related_op(const UserOp& u, DType dtype) {
  static constexpr Op kOrder[] = {Op::sum,  Op::logsumexp, Op::count_nonzero, Op::mean,
                                  Op::any,  Op::argmax,    Op::var};
  const std::size_t bytes = u.accumulator_bytes(dtype);
  for (Op op : kOrder)
    if (!op_unsupported(op, dtype) && accumulator_bytes(op, dtype) == bytes) return op;
  return std::nullopt;
}

/// A configuration for a lookup whose answer the reduction's rules refuse (an atomic finish, a
/// mapping that reorders a non-commutative combine): the first of these that `t` admits. The
/// answer itself with the ordered finish (columns_split, segments_flat_carry: partials combined
/// in block order, for any combine); the split columns with it; the flat segments with it (a map
/// that does not read the index); last, a lane per row or segment reading its elements in order
/// (kernels/catalogue.cpp, reorders).
std::optional<Config> in_order(Problem problem, const Config& refused, const Target& t) {
  std::vector<Config> candidates;
  if (const Variant* v = find_variant(refused.variant);
      v && std::find(v->finishes.begin(), v->finishes.end(), Finish::twopass) != v->finishes.end()) {
    Config c = refused;
    c.finish = Finish::twopass;
    candidates.push_back(c);
  }
  for (int vec : {4, 2, 1}) {
    if (problem == Problem::columns)
      candidates.push_back(Config{"columns_split", 256, 2, vec, 4, Tail::shfl, Finish::twopass});
    if (problem == Problem::segments)
      candidates.push_back(Config{"segments_flat_carry", 128, 4, vec, 8, Tail::shfl, Finish::twopass});
  }
  if (problem == Problem::rows || problem == Problem::segments) {
    Config c;
    c.variant = problem == Problem::rows ? "rows_group" : "segments_group";
    c.block = 256;
    c.width = 1;
    c.tail = Tail::shfl;
    c.finish = Finish::direct;
    candidates.push_back(c);
  }
  for (const Config& c : candidates)
    if (!invalid_reason(c, t)) return c;
  return std::nullopt;
}

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
  Requirements req = requirements(Result::device);
  req.user = &u;
  const std::optional<Op> rel = related_op(u, k.dtype);
  Choice c;
  {
    std::lock_guard lock(store_mu);
    try {
      c = rel ? lookup(store.get(), shipped.get(), device, k.dtype, *rel, k.problem, k.at, req, no_store)
              : builtin_choice(k.problem, k.dtype, Op::sum, k.at, req, device,
                               "no built-in op has a " + std::to_string(u.accumulator_bytes(k.dtype)) +
                                   "-byte accumulator for " + std::string(name(k.dtype)));
    } catch (const db::StoreError& e) {
      c = builtin_choice(k.problem, k.dtype, Op::sum, k.at, req, device,
                         std::string("the tuning store could not be read: ") + e.what());
    }
  }
  // Rows of the related op, whatever grade they had for it, are `related` for the reduction.
  if (rel && c.match != Match::builtin && c.match != Match::related) {
    c.note = "tuned for " + std::string(name(k.dtype)) + " " + std::string(name(*rel)) +
             (c.device_name.empty() ? "" : " on " + c.device_name) + (c.note.empty() ? "" : "; " + c.note);
    c.match = Match::related;
  }
  Target t = target_of(device, k.dtype, Op::sum, k.problem, req);
  if (t.sm_count <= 0) t.sm_count = info.sm_count;
  if (auto why = invalid_reason(c.config, t)) {
    const std::optional<Config> fallback = in_order(k.problem, c.config, t);
    if (!fallback)
      throw ReductionError("reduce_tune: no variant serves the reduction " + u.name + " on the " +
                           std::string(name(k.problem)) + " problem: " + *why);
    c.config = *fallback;
    c.match = Match::builtin;
    c.note = fallback->finish == Finish::twopass
                 ? "the ordered finish, as the reduction's rules ask (" + key(*fallback) + ")"
                 : "a lane per " + std::string(k.problem == Problem::rows ? "row" : "segment") +
                       " in order, as the reduction's rules ask (" + key(*fallback) + ")";
  }
  return c;
}

const Entry& Reducer::Impl::ready_user(const std::shared_ptr<const UserOp>& u, const EntryKey& k) {
  Entry* e = nullptr;
  {
    std::lock_guard lock(user_mu);
    auto& slot = user_entries[{u->hash, k.problem, k.dtype, k.at.count, k.at.length}];
    if (!slot) slot = std::make_unique<Entry>();
    e = slot.get();
  }
  if (e->ready.load(std::memory_order_acquire)) return *e;
  std::lock_guard lock(e->mu);
  if (e->ready.load(std::memory_order_relaxed)) return *e;
  if (!e->choice) e->choice = choose_user(*u, k);
  e->kernel = loader.load(e->choice->config, k.dtype, u); // ReductionError: the description's log
  e->ready.store(true, std::memory_order_release);
  return *e;
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
  const char* what = problem == Problem::rows ? "reduce_rows" : "reduce_columns";
  const std::uint64_t stride = row_stride ? row_stride : cols;
  if (stride < cols)
    throw InvalidArgument(std::string("reduce_tune: ") + what + ": row_stride " +
                          std::to_string(stride) + " is below cols " + std::to_string(cols));
  const std::uint64_t max = ~std::uint64_t(0) / size_of(dtype);
  if (rows > 0 && stride > (max - cols) / rows)
    throw InvalidArgument(std::string("reduce_tune: ") + what + ": " + std::to_string(rows) +
                          " rows of stride " + std::to_string(stride) + " overflow a 64-bit byte count");
  const std::uint64_t elements = rows == 0 ? 0 : (rows - 1) * stride + cols;
  const std::uint64_t results = problem == Problem::rows ? rows : cols;
  check_pointer("d_in", d_in, elements, dtype, ordinal, capturing);
  check_pointer("d_out", d_out, results, u->result_dtype(dtype), ordinal, capturing);
  Call c;
  c.problem = problem;
  c.dtype = dtype;
  c.user = u;
  c.in_count = elements;
  c.out_count = results;
  c.args.in = reinterpret_cast<CUdeviceptr>(d_in);
  c.args.out = reinterpret_cast<CUdeviceptr>(d_out);
  c.args.shape = problem == Problem::rows ? Shape{rows, cols} : Shape{cols, rows};
  c.args.stride = stride;
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
  Call c;
  c.problem = Problem::segments;
  c.dtype = dtype;
  c.user = u;
  c.args.shape = segments_shape(dtype, d_in, segments, elements, impl_->ordinal, cap.active);
  check_pointer("d_offsets", d_offsets, segments + 1, DType::i64, impl_->ordinal, cap.active);
  check_pointer("d_out", d_out, segments, result, impl_->ordinal, cap.active);
  c.in_count = elements;
  c.out_count = segments;
  c.args.in = reinterpret_cast<CUdeviceptr>(d_in);
  c.args.offsets = reinterpret_cast<CUdeviceptr>(d_offsets);
  c.args.out = reinterpret_cast<CUdeviceptr>(d_out);
  impl_->run(c, stream, cap);
}

} // namespace reduce_tune
