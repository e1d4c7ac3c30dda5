// reduce-tune: the runtime library's private state (Reducer::Impl) and the helpers its two
// halves share: runtime/reducer.cpp (construction, the 1-D calls) and runtime/reducer_segmented.cpp
// (rows, columns, offsets). Not installed.
#pragma once

#include "reduce_tune/reducer.h"

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/values.h"
#include "kernels/runner.h"
#include "runtime/capture.h"
#include "runtime/lookup.h"

#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

namespace reduce_tune {
namespace detail {

using cuda::driver;

constexpr int kDTypes = 7, kOps = 3;
constexpr int kBuckets = 65; ///< bit_width(n) for n in 1..2^64-1 (0 unused)

/// Throws InvalidArgument for a dtype or op outside the enums.
void check_problem(DType dtype, Op op);

/// Checks that the kernels can access `count` elements of `dtype` at `p`: not null, aligned to the
/// element, device memory of GPU `ordinal` or managed memory, and, where the driver knows the
/// allocation's extent, large enough. Throws InvalidArgument naming `what` and the problem.
/// Returns the elements of `dtype` from `p` to the allocation's end where the driver knows it.
std::optional<std::uint64_t> check_pointer(const char* what, const void* p, std::uint64_t count,
                                           DType dtype, int ordinal);

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

/// Where a 1-D call's result goes: the host (sum, min, max), device memory as the element type
/// (reduce_async), or device memory as float32 (reduce_async of bf16/f16 with DType::f32).
enum class Result { host, device, wide };

/// The cached answer for one (dtype, op, size bucket, Result).
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
CompileCache open_cache();

/// The Result of an asynchronous call that writes `result`: Result::device for the element type,
/// Result::wide for float32 from bf16 or f16; InvalidArgument for anything else.
Result result_kind(DType dtype, DType result);

/// Throws InvalidArgument for a synchronous call on a capturing stream, before anything is
/// enqueued (so the capture stays valid).
void refuse_capture(const capture::State& cap);

} // namespace detail

using namespace detail;

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

  /// The 1-D entries: per (dtype, op, size bucket, Result).
  std::array<std::atomic<Entry*>, kDTypes * kOps * kBuckets * 3> entries{};
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
  Choice choose(DType dtype, Op op, std::uint64_t at, Result result) {
    return choose(dtype, op, Problem::array, Shape{1, at}, result != Result::host,
                  result == Result::wide);
  }
  Choice choose(DType dtype, Op op, Problem problem, Shape at, bool device_result,
                bool wide_result = false) {
    const DeviceKey device = device_key(info);
    Requirements req;
    req.deterministic = options.deterministic;
    req.allow_in_place = options.allow_in_place;
    req.device_result = device_result;
    req.wide_result = wide_result;
    std::lock_guard lock(store_mu);
    try {
      return lookup(store.get(), shipped.get(), device, dtype, op, problem, at, req, no_store);
    } catch (const db::StoreError& e) {
      return builtin_choice(problem, dtype, at,
                            std::string("the tuning store could not be read: ") + e.what(),
                            options.deterministic);
    }
  }

  /// The entry of a segmented call, its kernel loaded (first use only; needs the context current).
  const Entry& segmented_entry(Problem problem, DType dtype, Op op, Shape shape) {
    const Shape at = lookup_point(shape); // the bucket: [2^i, 2^(i+1)) in count and in length
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
      fall_back(*e, dtype, op, problem, at, err);
    }
    e->ready.store(true, std::memory_order_release);
    return *e;
  }

  /// Enqueues a segmented reduction whose arguments were checked: the entry's kernel, on a lease
  /// whose workspace holds the plan's state, ordered on `stream` like reduce_async.
  void run_segmented(Problem problem, DType dtype, Op op, const SegmentedArgs& a, CUstream stream);
  /// reduce_async's work once the context is current: the arguments checked, then enqueued.
  void reduce_array_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                          CUstream stream, Result result = Result::device);
  /// reduce_rows and reduce_columns: the same matrix, one result per row or per column.
  void reduce_matrix(Problem problem, DType dtype, Op op, const void* d_in, std::uint64_t rows,
                     std::uint64_t cols, void* d_out, CUstream stream, std::uint64_t row_stride);

  static std::uint64_t bucket_start(std::uint64_t n) {
    return std::bit_floor(std::max<std::uint64_t>(n, 1));
  }

  Entry& entry(DType dtype, Op op, std::uint64_t n, Result result) {
    const int bucket = std::bit_width(std::max<std::uint64_t>(n, 1));
    const std::size_t index =
        ((std::size_t(dtype) * kOps + std::size_t(op)) * kBuckets + std::size_t(bucket)) * 3 +
        std::size_t(result);
    std::atomic<Entry*>& slot = entries[index];
    if (Entry* e = slot.load(std::memory_order_acquire)) return *e;
    std::lock_guard lock(entries_mu);
    if (Entry* e = slot.load(std::memory_order_relaxed)) return *e;
    owned.push_back(std::make_unique<Entry>());
    slot.store(owned.back().get(), std::memory_order_release);
    return *owned.back();
  }

  /// The choice for n's bucket, graded for n itself.
  Choice choice_for(DType dtype, Op op, std::uint64_t n, Result result) {
    check_problem(dtype, op);
    Entry& e = entry(dtype, op, n, result);
    Choice c;
    if (e.ready.load(std::memory_order_acquire)) {
      c = *e.choice;
    } else {
      std::lock_guard lock(e.mu);
      if (!e.choice) e.choice = choose(dtype, op, bucket_start(n), result);
      c = *e.choice;
    }
    if (c.match == Match::exact || c.match == Match::nearest_size)
      c.match = c.tuned_n == std::max<std::uint64_t>(n, 1) ? Match::exact : Match::nearest_size;
    return c;
  }

  /// The entry for a call, its kernel loaded (first use only; needs the context current). A
  /// stored configuration that no longer compiles or loads (another NVRTC or driver than the
  /// tuner's) is replaced by the built-in default, and the note says why.
  const Entry& ready_entry(DType dtype, Op op, std::uint64_t n, Result result) {
    Entry& e = entry(dtype, op, n, result);
    if (e.ready.load(std::memory_order_acquire)) return e;
    std::lock_guard lock(e.mu);
    if (e.ready.load(std::memory_order_relaxed)) return e;
    if (!e.choice) e.choice = choose(dtype, op, bucket_start(n), result);
    const bool wide = result == Result::wide;
    try {
      e.kernel = loader.load(e.choice->config, dtype, op, wide);
    } catch (const CompileError& err) {
      fall_back(e, dtype, op, Problem::array, Shape{1, bucket_start(n)}, err, wide);
    } catch (const cuda::CudaError& err) {
      fall_back(e, dtype, op, Problem::array, Shape{1, bucket_start(n)}, err, wide);
    }
    e.ready.store(true, std::memory_order_release);
    return e;
  }

  /// Called while handling `err`, the failed load of e's stored choice: loads the built-in
  /// default for (problem, at) instead, under the same Options (deterministic), or rethrows when
  /// that was the one that failed.
  void fall_back(Entry& e, DType dtype, Op op, Problem problem, Shape at, const std::exception& err,
                 bool wide_result = false) {
    if (e.choice->match == Match::builtin) throw;
    std::string why = err.what();
    why = why.substr(0, why.find('\n')); // a compile error's log follows its first line
    e.choice = builtin_choice(problem, dtype, at,
                              "the stored configuration " + key(e.choice->config) +
                                  " failed to load: " + why,
                              options.deterministic);
    e.kernel = loader.load(e.choice->config, dtype, op, wide_result);
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

} // namespace reduce_tune
