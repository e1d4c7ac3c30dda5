// reduce-tune: the runtime library. A configuration is looked up once per (dtype, op, size
// bucket) and compiled once (through the disk cache); calls then launch it through the tuner's
// own path (kernels/runner.h), so what was measured is what runs.
#include "reduce_tune/reducer.h"

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/reference.h"
#include "kernels/runner.h"
#include "runtime/capture.h"
#include "runtime/lookup.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <optional>
#include <vector>

namespace reduce_tune {

bool gpu_available(std::string* why) { return cuda::available(why); }

namespace {

using cuda::driver;

constexpr int kDTypes = 7, kOps = 3;
constexpr int kBuckets = 65; ///< bit_width(n) for n in 1..2^64-1 (0 unused)

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

void check_problem(DType dtype, Op op) {
  if (static_cast<unsigned>(dtype) >= kDTypes)
    throw InvalidArgument("reduce_tune: unsupported dtype (enum value " +
                          std::to_string(static_cast<int>(dtype)) +
                          "): int32, uint32, int64, float32, float64, bfloat16 and float16 are supported");
  if (static_cast<unsigned>(op) >= kOps)
    throw InvalidArgument("reduce_tune: unsupported op (enum value " +
                          std::to_string(static_cast<int>(op)) +
                          "): sum, min and max are supported");
}

/// Checks that the kernels can access `count` elements of `dtype` at `p`: not null, aligned to the
/// element, device memory of GPU `ordinal` or managed memory, and, where the driver knows the
/// allocation's extent, large enough. Throws InvalidArgument naming `what` and the problem.
void check_pointer(const char* what, const void* p, std::uint64_t count, DType dtype,
                   int ordinal) {
  if (!p) throw InvalidArgument(std::string("reduce_tune: ") + what + " is null");
  const CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(p);
  const auto bad = [&](const std::string& problem) {
    return InvalidArgument(std::string("reduce_tune: ") + what + " (" + hex(ptr) + ") " + problem);
  };
  const std::size_t es = size_of(dtype);
  if (ptr % es)
    throw bad("is not aligned to its " + std::to_string(es) + "-byte " + std::string(name(dtype)) +
              " elements");
  // One driver call for everything: unlike cuPointerGetAttribute, cuPointerGetAttributes answers
  // for a pointer CUDA does not know with zeroed values instead of an error.
  unsigned type = 0;
  unsigned long long managed = 0; // a boolean of unspecified width: read into a zeroed word
  int device = -1;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* values[] = {&type, &managed, &device, &start, &size};
  RT_CU(cuPointerGetAttributes(5, attrs, values, ptr));
  if (type == 0) throw bad("is not memory CUDA knows (a host pointer?): pass device memory");
  // Managed memory may report either memory type and is accessible from any device.
  if (!managed) {
    if (type != CU_MEMORYTYPE_DEVICE) throw bad("is host memory (page-locked), not device memory");
    if (device != ordinal)
      throw bad("is memory of GPU " + std::to_string(device) + "; this reducer runs on GPU " +
                std::to_string(ordinal));
  }
  // The allocation's extent, where the driver knows it.
  if (size > 0 && ptr >= start && ptr - start < size) {
    const std::uint64_t room = (size - (ptr - start)) / es;
    if (count > room)
      throw bad("has room for " + std::to_string(room) + " " + std::string(name(dtype)) +
                " (in an allocation of " + std::to_string(size) + " bytes at " + hex(start) +
                "), fewer than n = " + std::to_string(count));
  }
}

/// Restores the calling thread's current context when the scope ends: the reducer works in its
/// own context and leaves the caller's as it was.
class RestoreContext {
public:
  RestoreContext() { RT_CU(cuCtxGetCurrent(&caller_)); }
  ~RestoreContext() {
    CUcontext now = nullptr;
    if (driver().cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != caller_)
      driver().cuCtxSetCurrent(caller_);
  }
  RestoreContext(const RestoreContext&) = delete;
  RestoreContext& operator=(const RestoreContext&) = delete;
  void enter(CUcontext ctx) const {
    if (ctx != caller_) RT_CU(cuCtxSetCurrent(ctx));
  }

private:
  CUcontext caller_ = nullptr;
};

/// The cached answer for one (dtype, op, size bucket, result on the device or not).
struct Entry {
  std::mutex mu;                  ///< held while looking up and loading
  std::optional<Choice> choice;   ///< set under mu
  Kernel kernel;                  ///< set under mu, before ready
  std::atomic<bool> ready{false}; ///< choice and kernel set: read without the lock from then on
};

/// Device memory for one reduction at a time, and the event that marks the end of its last
/// asynchronous use.
struct Lease {
  Workspace ws;
  cuda::Event done{false};
  CUstream stream = nullptr; ///< the stream of its last asynchronous use
  bool pending = false;      ///< `done` was recorded by an asynchronous call and not yet waited for
};

/// The user's compile cache, or none (every first use compiles) where it cannot be created: a
/// read-only home must not stop the library.
CompileCache open_cache() {
  try {
    return CompileCache(CompileCache::default_dir());
  } catch (const std::filesystem::filesystem_error&) {
    return CompileCache({});
  }
}

} // namespace

struct Reducer::Impl {
  Options options;
  cuda::DeviceInfo info;
  cuda::Context context; // declared before everything that holds device resources
  CUcontext ctx = nullptr;
  std::mutex store_mu;   ///< a Store is one SQLite connection: one user at a time
  std::unique_ptr<db::Store> store;
  std::string no_store;  ///< why there is no store
  std::unique_ptr<db::Store> shipped; ///< the tuning installed with the library (read-only)
  Nvrtc nvrtc;
  CompileCache cache;
  KernelLoader loader;

  std::array<std::atomic<Entry*>, kDTypes * kOps * kBuckets * 2> entries{};
  std::mutex entries_mu; ///< guards `owned`
  std::vector<std::unique_ptr<Entry>> owned;

  /// Segmented problems: one entry per (problem, dtype, op, count bucket, length bucket), made on
  /// first use; found under a shared lock afterwards (no allocation).
  std::shared_mutex segmented_mu;
  std::map<std::tuple<Problem, DType, Op, int, int>, std::unique_ptr<Entry>> segmented;

  std::mutex pool_mu;
  std::deque<std::unique_ptr<Lease>> pool; ///< idle leases, least recently used first

  /// Where captured graphs' workspaces come back to (runtime/capture.h).
  std::shared_ptr<capture::Home> home = std::make_shared<capture::Home>();
  std::mutex side_mu;
  std::optional<cuda::Stream> side; ///< zeroes a captured call's workspace, outside the graph

  /// A call on a stream being captured into `graph` (defined with the other capture code below).
  template <typename Reserve, typename Enqueue>
  void captured(CUgraph graph, const Kernel& kernel, Reserve&& reserve, Enqueue&& enqueue_call);

  Impl(int ordinal, Options opts)
      : options(std::move(opts)), info(cuda::device_info(ordinal)), context(ordinal),
        nvrtc(options.nvrtc_path), cache(open_cache()),
        loader(nvrtc, cache, nvrtc.target_for(info.cc())) {
    RT_CU(cuCtxGetCurrent(&ctx)); // the Context made it current
    store = open_existing_store(
        options.store_path.empty() ? db::default_store_path() : options.store_path, &no_store);
    std::string no_shipped;
    shipped = open_shipped_store(&no_shipped, options.shipped_path);
    if (!shipped) no_store += "; " + no_shipped;
  }

  Target target(DType dtype, Op op) const {
    Target t;
    t.dtype = dtype;
    t.op = op;
    t.cc = info.cc();
    t.max_block = info.max_threads_per_block;
    t.sm_count = info.sm_count;
    return t;
  }

  /// The lookup for a bucket, at its lower end 2^k (where sweeps measure). A store that cannot be
  /// read gives the built-in default, as no store does.
  Choice choose(DType dtype, Op op, std::uint64_t at, bool device_result) {
    return choose(dtype, op, Problem::array, Shape{1, at}, device_result);
  }
  Choice choose(DType dtype, Op op, Problem problem, Shape at, bool device_result) {
    DeviceKey device;
    device.uuid = info.uuid;
    device.name = info.name;
    device.cc_major = info.cc_major;
    device.cc_minor = info.cc_minor;
    device.max_block = info.max_threads_per_block;
    device.sm_count = info.sm_count;
    Requirements req;
    req.deterministic = options.deterministic;
    req.allow_in_place = options.allow_in_place;
    req.device_result = device_result;
    std::lock_guard lock(store_mu);
    try {
      return lookup(store.get(), shipped.get(), device, dtype, op, problem, at, req, no_store);
    } catch (const db::StoreError& e) {
      return builtin_choice(problem, dtype, at,
                            std::string("the tuning store could not be read: ") + e.what(),
                            options.deterministic);
    }
  }

  /// A segmented shape's bucket: [2^i, 2^(i+1)) in count and in length (0: unknown), looked up at
  /// its lower ends.
  static Shape bucket_start(Shape s) {
    return {std::bit_floor(std::max<std::uint64_t>(s.count, 1)),
            s.length ? std::bit_floor(s.length) : 0};
  }

  /// The entry of a segmented call, its kernel loaded (first use only; needs the context current).
  const Entry& segmented_entry(Problem problem, DType dtype, Op op, Shape shape) {
    const Shape at = bucket_start(shape);
    const auto k = std::make_tuple(problem, dtype, op, int(std::bit_width(at.count)),
                                   int(std::bit_width(at.length)));
    Entry* e = nullptr;
    {
      std::shared_lock lock(segmented_mu);
      if (auto it = segmented.find(k); it != segmented.end()) e = it->second.get();
    }
    if (!e) {
      std::unique_lock lock(segmented_mu);
      auto& slot = segmented[k];
      if (!slot) slot = std::make_unique<Entry>();
      e = slot.get();
    }
    if (e->ready.load(std::memory_order_acquire)) return *e;
    std::lock_guard lock(e->mu);
    if (e->ready.load(std::memory_order_relaxed)) return *e;
    if (!e->choice) e->choice = choose(dtype, op, problem, at, true);
    try {
      e->kernel = loader.load(e->choice->config, dtype, op);
    } catch (const std::exception& err) {
      if (e->choice->match == Match::builtin) throw;
      std::string why = err.what();
      why = why.substr(0, why.find('\n'));
      e->choice = builtin_choice(problem, dtype, at, "the stored configuration " +
                                                         key(e->choice->config) +
                                                         " failed to load: " + why,
                                 options.deterministic);
      e->kernel = loader.load(e->choice->config, dtype, op);
    }
    e->ready.store(true, std::memory_order_release);
    return *e;
  }

  /// Enqueues a segmented reduction whose arguments were checked: the entry's kernel, on a lease
  /// whose workspace holds the plan's state, ordered on `stream` like reduce_async.
  void run_segmented(Problem problem, DType dtype, Op op, const SegmentedArgs& a, CUstream stream);
  /// reduce_async's work once the context is current: the arguments checked, then enqueued.
  void reduce_array_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                          CUstream stream);
  /// reduce_rows and reduce_columns: the same matrix, one result per row or per column.
  void reduce_matrix(Problem problem, DType dtype, Op op, const void* d_in, std::uint64_t rows,
                     std::uint64_t cols, void* d_out, CUstream stream, std::uint64_t row_stride);

  static std::uint64_t bucket_start(std::uint64_t n) {
    return std::bit_floor(std::max<std::uint64_t>(n, 1));
  }

  Entry& entry(DType dtype, Op op, std::uint64_t n, bool device_result) {
    const int bucket = std::bit_width(std::max<std::uint64_t>(n, 1));
    const std::size_t index =
        ((std::size_t(dtype) * kOps + std::size_t(op)) * kBuckets + std::size_t(bucket)) * 2 +
        (device_result ? 1 : 0);
    std::atomic<Entry*>& slot = entries[index];
    if (Entry* e = slot.load(std::memory_order_acquire)) return *e;
    std::lock_guard lock(entries_mu);
    if (Entry* e = slot.load(std::memory_order_relaxed)) return *e;
    owned.push_back(std::make_unique<Entry>());
    slot.store(owned.back().get(), std::memory_order_release);
    return *owned.back();
  }

  /// The choice for n's bucket, graded for n itself.
  Choice choice_for(DType dtype, Op op, std::uint64_t n, bool device_result) {
    check_problem(dtype, op);
    Entry& e = entry(dtype, op, n, device_result);
    Choice c;
    if (e.ready.load(std::memory_order_acquire)) {
      c = *e.choice;
    } else {
      std::lock_guard lock(e.mu);
      if (!e.choice) e.choice = choose(dtype, op, bucket_start(n), device_result);
      c = *e.choice;
    }
    if (c.match == Match::exact || c.match == Match::nearest_size)
      c.match = c.tuned_n == std::max<std::uint64_t>(n, 1) ? Match::exact : Match::nearest_size;
    return c;
  }

  /// The entry for a call, its kernel loaded (first use only; needs the context current). A
  /// stored configuration that no longer compiles or loads (another NVRTC or driver than the
  /// tuner's) is replaced by the built-in default, and the note says why.
  const Entry& ready_entry(DType dtype, Op op, std::uint64_t n, bool device_result) {
    Entry& e = entry(dtype, op, n, device_result);
    if (e.ready.load(std::memory_order_acquire)) return e;
    std::lock_guard lock(e.mu);
    if (e.ready.load(std::memory_order_relaxed)) return e;
    if (!e.choice) e.choice = choose(dtype, op, bucket_start(n), device_result);
    try {
      e.kernel = loader.load(e.choice->config, dtype, op);
    } catch (const CompileError& err) {
      fall_back(e, dtype, op, bucket_start(n), err);
    } catch (const cuda::CudaError& err) {
      fall_back(e, dtype, op, bucket_start(n), err);
    }
    e.ready.store(true, std::memory_order_release);
    return e;
  }

  /// Called while handling `err`, the failed load of e's stored choice: loads the built-in
  /// default instead, or rethrows when that was the one that failed.
  void fall_back(Entry& e, DType dtype, Op op, std::uint64_t at, const std::exception& err) {
    if (e.choice->match == Match::builtin) throw;
    std::string why = err.what();
    why = why.substr(0, why.find('\n')); // a compile error's log follows its first line
    e.choice = builtin_choice(dtype, at, "the stored configuration " + key(e.choice->config) +
                                         " failed to load: " + why);
    e.kernel = loader.load(e.choice->config, dtype, op);
  }

  std::unique_ptr<Lease> take() {
    {
      std::lock_guard lock(pool_mu);
      if (!pool.empty()) {
        std::unique_ptr<Lease> l = std::move(pool.front());
        pool.pop_front();
        return l;
      }
    }
    auto l = std::make_unique<Lease>(); // one more caller at once than ever before
    if (std::optional<Workspace> ws = home->take()) l->ws = std::move(*ws); // a graph's, idle
    return l;
  }

  void give(std::unique_ptr<Lease> l) {
    std::lock_guard lock(pool_mu);
    pool.push_back(std::move(l));
  }

  /// A lease for the length of one eager call, idle when taken and back in the pool at the end.
  /// A failure after work was enqueued synchronizes the stream first, so a lease never goes back
  /// with work in flight that its next user does not know of. Calls on a capturing stream take no
  /// lease (Impl::captured).
  class Borrowed {
  public:
    /// Work on `stream` is ordered after the lease's last asynchronous use: by the stream itself
    /// when it is the same one, else by a device-side wait on its event (the host never waits).
    Borrowed(Impl& impl, CUstream stream) : impl_(impl), lease_(impl.take()) {
      if (lease_->pending && lease_->stream != stream)
        RT_CU(cuStreamWaitEvent(stream, lease_->done.get(), 0));
    }
    ~Borrowed() { impl_.give(std::move(lease_)); }
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;

    template <typename F> auto run(CUstream stream, F&& f) {
      try {
        return f(*lease_);
      } catch (...) {
        driver().cuStreamSynchronize(stream); // best effort: the first error is the one to report
        throw;
      }
    }

  private:
    Impl& impl_;
    std::unique_ptr<Lease> lease_;
  };
};

// ---- calls on a stream that is being captured into a CUDA graph ------------------------------

namespace {

/// Throws InvalidArgument for a synchronous call on a capturing stream, before anything is
/// enqueued (so the capture stays valid).
void refuse_capture(const capture::State& cap) {
  if (cap.active)
    throw InvalidArgument("reduce_tune: sum, min, max and reduce wait for their result, which a "
                          "stream being captured into a CUDA graph cannot do: use reduce_async");
}

} // namespace

/// A captured call: its work goes into the graph, with a workspace the graph owns (taken from the
/// workspaces of destroyed graphs, or new), zeroed once here on the side stream rather than by a
/// node of the graph; nothing of the eager calls' leases is touched. `reserve(ws, s)` sizes the
/// workspace, zeroing new state on s; `enqueue(k, ws)` enqueues the call with kernel k on the
/// capturing stream.
template <typename Reserve, typename Enqueue>
void Reducer::Impl::captured(CUgraph graph, const Kernel& kernel, Reserve&& reserve,
                             Enqueue&& enqueue_call) {
  std::optional<Workspace> idle = home->take();
  auto hold = std::make_unique<capture::Hold>(context.ordinal(), kernel.module,
                                              idle ? std::move(*idle) : Workspace(), home);
  Workspace& ws = hold->ws;
  ws.forget_state();
  {
    std::lock_guard lock(side_mu);
    if (!side) side.emplace();
    reserve(ws, side->get());
    side->synchronize();
  }
  capture::give_to_graph(graph, std::move(hold)); // the graph owns ws from here
  // Programmatic launches are captured as programmatic edges from CUDA 12.3 on.
  Kernel k = kernel;
  if (info.driver_version < 12030) k.programmatic = false;
  enqueue_call(k, ws);
}

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

Reducer::Reducer(int ordinal, Options options) {
  const RestoreContext restore; // the primary context is made current while setting up
  const capture::Relaxed relaxed;
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
    for (const auto& l : impl_->pool)
      if (l->pending) driver().cuEventSynchronize(l->done.get());
    impl_->home->close(); // graphs that outlive the reducer free their workspaces themselves
    impl_.reset();
  } catch (...) {
  }
  driver().cuCtxSetCurrent(caller);
}

Choice Reducer::config_for(DType dtype, Op op, std::uint64_t n) const {
  return impl_->choice_for(dtype, op, n, false);
}

Choice Reducer::async_config_for(DType dtype, Op op, std::uint64_t n) const {
  return impl_->choice_for(dtype, op, n, true);
}

std::string Reducer::device_name() const { return impl_->info.name; }

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

void Reducer::reduce_segments(DType dtype, Op op, const void* d_in, const std::int64_t* d_offsets,
                              std::uint64_t segments, void* d_out, CUstream stream) {
  check_problem(dtype, op);
  if (segments == 0) return;
  if (segments >= (std::uint64_t(1) << 40))
    throw InvalidArgument("reduce_tune: reduce_segments: " + std::to_string(segments) +
                          " segments: at most 2^40 are supported");
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  const int ordinal = impl_->context.ordinal();
  // The lengths are in device memory: the input is checked to be device memory, not its extent.
  check_pointer("d_in", d_in, 0, dtype, ordinal);
  check_pointer("d_offsets", d_offsets, segments + 1, DType::i64, ordinal);
  check_pointer("d_out", d_out, segments, dtype, ordinal);
  SegmentedArgs a;
  a.in = reinterpret_cast<CUdeviceptr>(d_in);
  a.offsets = reinterpret_cast<CUdeviceptr>(d_offsets);
  a.out = reinterpret_cast<CUdeviceptr>(d_out);
  a.shape = {segments, 0};
  impl_->run_segmented(Problem::segments, dtype, op, a, stream);
}

void Reducer::reduce_sync(DType dtype, Op op, const void* d_in, std::uint64_t n, void* h_out,
                          CUstream stream) {
  check_problem(dtype, op);
  const std::size_t es = size_of(dtype);
  if (n == 0) {
    const std::uint64_t bits = identity(dtype, op).bits;
    std::memcpy(h_out, &bits, es);
    return;
  }
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  const capture::Relaxed relaxed;
  refuse_capture(capture::state(stream));
  check_pointer("d_in", d_in, n, dtype, impl_->context.ordinal());
  const Entry& e = impl_->ready_entry(dtype, op, n, false);
  const LaunchPlan p = plan(e.kernel.config, impl_->target(dtype, op), n);
  const CUdeviceptr in = reinterpret_cast<CUdeviceptr>(d_in);
  Impl::Borrowed lease(*impl_, stream);
  const Scalar r = lease.run(stream, [&](Lease& l) {
    l.ws.reserve(p, dtype, n, stream);
    prepare(e.kernel, p, in, n, l.ws, stream);
    enqueue(e.kernel, p, in, n, l.ws, stream);
    const Scalar r = result(e.kernel, p, l.ws, stream); // synchronises the stream
    l.pending = false;
    return r;
  });
  std::memcpy(h_out, &r.bits, es);
}

void Reducer::reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                           CUstream stream) {
  check_problem(dtype, op);
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  impl_->reduce_array_async(dtype, op, d_in, n, d_out, stream);
}

void Reducer::Impl::reduce_array_async(DType dtype, Op op, const void* d_in, std::uint64_t n,
                                       void* d_out, CUstream stream) {
  const capture::Relaxed relaxed;
  const capture::State cap = capture::state(stream);
  const int ordinal = context.ordinal();
  check_pointer("d_out", d_out, 1, dtype, ordinal);
  const CUdeviceptr out = reinterpret_cast<CUdeviceptr>(d_out);
  if (n == 0) {
    set_identity(out, dtype, op, stream); // a memset, not a launch (a graph node when captured)
    return;
  }
  check_pointer("d_in", d_in, n, dtype, ordinal);
  const Entry& e = ready_entry(dtype, op, n, true);
  const LaunchPlan p = plan(e.kernel.config, target(dtype, op), n);
  const CUdeviceptr in = reinterpret_cast<CUdeviceptr>(d_in);
  if (cap.active) {
    captured(
        cap.graph, e.kernel,
        [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, dtype, n, zero_on); },
        [&](const Kernel& k, Workspace& ws) {
          prepare(k, p, in, n, ws, stream);
          enqueue(k, p, in, n, ws, stream, out);
        });
    return;
  }
  Borrowed lease(*this, stream);
  lease.run(stream, [&](Lease& l) {
    l.ws.reserve(p, dtype, n, stream);
    prepare(e.kernel, p, in, n, l.ws, stream);
    enqueue(e.kernel, p, in, n, l.ws, stream, out); // the finish writes to d_out itself
    l.done.record(stream);
    l.stream = stream;
    l.pending = true;
  });
}

} // namespace reduce_tune
