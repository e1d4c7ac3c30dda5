// reduce-tune: a checked call's plan and launch: the entry's kernel planned for the call's size or
// shape and enqueued through the tuner's own path (kernels/runner.h), so what was measured is
// what runs; eagerly on a lease, or into the graph of a stream being captured.
#include "runtime/reducer_state.h"

#include "runtime/counters.h"

namespace reduce_tune {

using cuda::driver;

Target Reducer::Impl::target(DType dtype, Op op) const {
  Target t;
  t.dtype = dtype;
  t.op = op;
  t.cc = info.cc();
  t.max_block = info.max_threads_per_block;
  t.sm_count = info.sm_count;
  return t;
}

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
  auto hold = std::make_unique<capture::Hold>(ordinal, kernel.module,
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

template <typename Reserve, typename Enqueue>
void Reducer::Impl::launch(const Kernel& kernel, const capture::State& cap, CUstream stream,
                           Reserve&& reserve, Enqueue&& enqueue_call) {
  if (cap.active) {
    captured(cap.graph, kernel, reserve, enqueue_call);
    return;
  }
  Borrowed lease(leases, *home, stream);
  lease.run(stream, [&](Lease& l) {
    reserve(l.ws, stream);
    enqueue_call(kernel, l.ws); // the finish writes to the call's result itself
    l.done.record(stream);
    l.stream = stream;
    l.pending = true;
  });
}

// ---- the call path ---------------------------------------------------------------------------

void Reducer::Impl::run(const Call& c, CUstream stream, const capture::State& cap,
                        const WarmKey* warm) {
  counters.cold_calls.fetch_add(1, std::memory_order_relaxed);
  const SegmentedArgs& a = c.args;
  if (c.work == Call::Work::copy) {
    RT_CU(cuMemcpyDtoDAsync(a.out, a.in, a.shape.count * size_of(c.dtype), stream));
    return;
  }
  if (c.work == Call::Work::identity) {
    // A memset, not a launch (a graph node when captured).
    set_value(a.out, empty_result(c.op, result_dtype(c.op, c.dtype, c.result == Result::wide)), stream);
    return;
  }
  const Use use = cap.active ? Use::capture : Use::call;
  const Entry& e = c.user ? ready_user(c.user, entry_key(c.problem, c.dtype, c.op, c.args.shape, c.result), use)
                          : ready(entry_key(c.problem, c.dtype, c.op, c.args.shape, c.result), use);
  WarmCall w;
  w.call = c;
  w.entry = &e;
  Target t = target(c.dtype, c.op);
  t.user = c.user.get();
  if (c.problem == Problem::array) {
    const std::uint64_t n = a.shape.length;
    const LaunchPlan p = plan(e.kernel.config, t, n);
    launch(
        e.kernel, cap, stream,
        [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, c.dtype, n, zero_on); },
        [&](const Kernel& k, Workspace& ws) {
          prepare(k, p, a.in, n, ws, stream);
          enqueue(k, p, a.in, n, ws, stream, a.out, a.in2);
        });
    w.plan = p;
    w.workspace = needs_workspace(p);
  } else {
    t.problem = c.problem;
    const SegmentedPlan p = segmented_plan(e.kernel.config, t, a.shape);
    launch(
        e.kernel, cap, stream, [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, zero_on); },
        [&](const Kernel& k, Workspace& ws) { enqueue(k, p, a, ws, stream); });
    w.segmented = p;
    w.workspace = needs_workspace(p);
  }
  // Remembered once it ran: a warm call repeats what just worked. A captured call is not (the
  // warm path never runs on a capturing stream; its pointers may be the capture's).
  if (warm && !cap.active && !c.user && !a.in2) {
    w.key = *warm;
    remember_warm(w);
  }
}

bool Reducer::Impl::run_warm(const WarmKey& key, const void* in, void* out, CUstream stream) {
  const WarmCall* w = find_warm(key);
  if (!w) return false;
  const Call& c = w->call;
  const DType out_dtype = result_dtype(c.op, c.dtype, c.result == Result::wide);
  if (!checked_before(in, c.in_count, c.dtype, ordinal) ||
      !checked_before(out, c.out_count, out_dtype, ordinal))
    return false;
  // The reducer's context current for the call (a thread-local read where it already is), the
  // caller's made current again after.
  struct Current {
    CUcontext caller = nullptr;
    bool switched = false;
    ~Current() {
      if (switched) driver().cuCtxSetCurrent(caller);
    }
  } current;
  RT_CU(cuCtxGetCurrent(&current.caller));
  if (current.caller != ctx) {
    RT_CU(cuCtxSetCurrent(ctx));
    current.switched = true;
  }
  const capture::State cap = capture::state(stream);
  if (cap.active) return false; // the graph must hold the call's kernels and workspace: see launch
  const Kernel& k = w->entry->kernel;
  SegmentedArgs a = c.args;
  a.in = reinterpret_cast<CUdeviceptr>(in);
  a.out = reinterpret_cast<CUdeviceptr>(out);
  const std::uint64_t n = a.shape.length;
  if (!w->workspace) {
    // No lease, so no event marks the kernels' end: the reducer's destruction waits for them.
    if (!unleased.load(std::memory_order_relaxed)) unleased.store(true, std::memory_order_relaxed);
    Workspace none; // no memory: the plan's kernels touch none (needs_workspace)
    if (c.problem == Problem::array) enqueue(k, w->plan, a.in, n, none, stream, a.out, a.in2);
    else enqueue(k, w->segmented, a, none, stream);
    return true;
  }
  const capture::Relaxed relaxed; // a new lease allocates: never into another thread's capture
  if (c.problem == Problem::array) {
    const LaunchPlan& p = w->plan;
    launch(
        k, cap, stream,
        [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, c.dtype, n, zero_on); },
        [&](const Kernel& kk, Workspace& ws) {
          prepare(kk, p, a.in, n, ws, stream);
          enqueue(kk, p, a.in, n, ws, stream, a.out, a.in2);
        });
  } else {
    const SegmentedPlan& p = w->segmented;
    launch(
        k, cap, stream, [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, zero_on); },
        [&](const Kernel& kk, Workspace& ws) { enqueue(kk, p, a, ws, stream); });
  }
  return true;
}

Scalar Reducer::Impl::run_to_host(const Call& c, CUstream stream) {
  const Entry& e = ready(entry_key(c.problem, c.dtype, c.op, c.args.shape, c.result));
  const std::uint64_t n = c.args.shape.length;
  const LaunchPlan p = plan(e.kernel.config, target(c.dtype, c.op), n);
  const CUdeviceptr in = c.args.in, in2 = c.args.in2;
  Borrowed lease(leases, *home, stream);
  return lease.run(stream, [&](Lease& l) {
    l.ws.reserve(p, c.dtype, n, stream);
    prepare(e.kernel, p, in, n, l.ws, stream);
    enqueue(e.kernel, p, in, n, l.ws, stream, 0, in2);
    const Scalar r = result(e.kernel, p, l.ws, stream); // synchronises the stream
    l.pending = false;
    return r;
  });
}

} // namespace reduce_tune
