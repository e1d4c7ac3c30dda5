// reduce-tune: calls on a stream that is being captured into a CUDA graph.
#include "runtime/capture.h"

#include <condition_variable>
#include <deque>
#include <thread>

namespace reduce_tune::capture {

using cuda::driver;

Relaxed::Relaxed() {
  if (!driver().cuThreadExchangeStreamCaptureMode) return;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  RT_CU(cuThreadExchangeStreamCaptureMode(&mode));
  previous_ = mode;
  exchanged_ = true;
}

Relaxed::~Relaxed() {
  if (!exchanged_) return;
  CUstreamCaptureMode mode = previous_;
  driver().cuThreadExchangeStreamCaptureMode(&mode); // errors cannot be reported from here
}

State state(CUstream s) {
  const cuda::Driver& d = driver();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  State st;
  cuuint64_t id = 0;
  if (d.cuStreamGetCaptureInfo_v3) {
    RT_CU(cuStreamGetCaptureInfo_v3(s, &status, &id, &st.graph, nullptr, nullptr, nullptr));
  } else if (d.cuStreamGetCaptureInfo_v2) {
    RT_CU(cuStreamGetCaptureInfo_v2(s, &status, &id, &st.graph, nullptr, nullptr));
  } else if (d.cuStreamIsCapturing) {
    RT_CU(cuStreamIsCapturing(s, &status));
  }
  if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    throw cuda::CudaError("reduce_tune: the stream's capture into a graph has been invalidated; "
                          "nothing can be enqueued on it until cuStreamEndCapture",
                          CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  st.active = status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (st.active && !st.graph)
    throw cuda::CudaError("reduce_tune: capturing into a graph needs a CUDA 11.4 driver or newer",
                          CUDA_ERROR_NOT_SUPPORTED);
  if (!st.active) st.graph = nullptr;
  return st;
}

void Home::give_back(Workspace ws) {
  ws.forget_state(); // the graph may never have run, or stopped half-way
  std::lock_guard lock(mu_);
  if (open_) idle_.push_back(std::move(ws));
  // else: freed as `ws` goes out of scope, after the lock (declared before it)
}

std::optional<Workspace> Home::take() {
  std::lock_guard lock(mu_);
  if (idle_.empty()) return std::nullopt;
  Workspace ws = std::move(idle_.back());
  idle_.pop_back();
  return ws;
}

void Home::close() {
  std::vector<Workspace> idle;
  {
    std::lock_guard lock(mu_);
    open_ = false;
    idle.swap(idle_);
  } // freed here, outside the lock
}

namespace {

/// The thread that releases what graphs held, where CUDA calls are allowed. Made on first use and
/// never destroyed (graphs may be destroyed during static destruction); a release that comes
/// while the process exits may be left undone.
class Reaper {
public:
  static Reaper& get() {
    static Reaper* r = new Reaper;
    return *r;
  }

  void push(Hold* h) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(h);
    }
    cv_.notify_one();
  }

private:
  Reaper() : thread_([this] { run(); }) { thread_.detach(); }

  void run() {
    // Frees memory and unloads modules: must not invalidate a capture of another thread.
    try {
      if (driver().cuThreadExchangeStreamCaptureMode) {
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        driver().cuThreadExchangeStreamCaptureMode(&mode);
      }
    } catch (...) {
    }
    for (;;) {
      Hold* h = nullptr;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        h = queue_.front();
        queue_.pop_front();
      }
      release(std::unique_ptr<Hold>(h));
    }
  }

  static void release(std::unique_ptr<Hold> h) {
    try {
      h->context.make_current();
      if (std::shared_ptr<Home> home = h->home.lock()) home->give_back(std::move(h->ws));
    } catch (...) {
      // A failed cuCtxSetCurrent: still release (the driver frees by address).
    }
    h.reset(); // the workspace (unless given back), the module reference, the context reference
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Hold*> queue_;
  std::thread thread_;
};

void CUDA_CB destroy_hold(void* p) { Reaper::get().push(static_cast<Hold*>(p)); }

} // namespace

void give_to_graph(CUgraph graph, std::unique_ptr<Hold> hold) {
  const cuda::Driver& d = driver();
  if (!d.cuUserObjectCreate || !d.cuGraphRetainUserObject || !d.cuUserObjectRelease)
    throw cuda::CudaError("reduce_tune: capturing into a graph needs CUDA user objects (a CUDA "
                          "11.4 driver or newer)",
                          CUDA_ERROR_NOT_SUPPORTED);
  Reaper::get(); // made here, on a thread of the program, not in CUDA's callback
  CUuserObject object = nullptr;
  RT_CU(cuUserObjectCreate(&object, hold.get(), destroy_hold, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  hold.release(); // the user object owns it now: its destructor is destroy_hold
  // Move the one reference to the graph; where that fails, drop it (the hold is released then).
  if (const CUresult r = d.cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE);
      r != CUDA_SUCCESS) {
    d.cuUserObjectRelease(object, 1);
    cuda::check(r, "cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE)");
  }
}

} // namespace reduce_tune::capture
