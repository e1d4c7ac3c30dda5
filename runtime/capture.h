// reduce-tune: calls on a stream that is being captured into a CUDA graph (runtime/reducer.cpp).
//
// A captured call gets a workspace of its own and hands it to the graph as a CUDA user object,
// with a reference to the module its kernels are in and to the device's primary context: the
// graph then holds everything its replays touch, and replays never share scratch memory with
// eager calls or with other graphs. When the graph (and every instantiation, after their last
// launch) is destroyed, CUDA calls the user object's destructor on an internal thread, where no
// CUDA call is allowed; it passes the hold to the reaper, a thread of this library that returns the
// workspace to the reducer that made it (if that still exists; else frees it) and drops the rest.
#pragma once

#include "kernels/driver.h"
#include "kernels/runner.h"

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace reduce_tune::capture {

/// Sets the calling thread's stream-capture mode to relaxed for the scope (and restores it): the
/// library's own allocations, module loads and waits on its own streams then never invalidate a
/// capture that another thread (global mode) or this one has under way. A no-op on a driver
/// without stream capture.
class Relaxed {
public:
  Relaxed();
  ~Relaxed();
  Relaxed(const Relaxed&) = delete;
  Relaxed& operator=(const Relaxed&) = delete;

private:
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

/// Whether `s` is being captured, and into which graph. Throws CudaError when its capture has been
/// invalidated (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: nothing more can be captured until the
/// capture is ended), and for the legacy stream while a blocking stream is captured.
struct State {
  bool active = false;
  CUgraph graph = nullptr;
};
State state(CUstream s);

/// Where a graph's workspace goes when the graph is gone: back to its reducer while that exists
/// (as an idle workspace for later calls), else it is freed. Thread-safe.
class Home {
public:
  /// Takes `ws` back; frees it when closed (the caller has the device's context current).
  void give_back(Workspace ws);
  /// An idle workspace given back earlier, if any.
  std::optional<Workspace> take();
  /// The reducer is going: frees what is held, and whatever is given back later.
  void close();

private:
  std::mutex mu_;
  bool open_ = true;
  std::vector<Workspace> idle_;
};

/// What a captured graph holds: the device's primary context (retained), the module of its kernels
/// and its workspace.
struct Hold {
  cuda::Context context; // declared first: released last
  std::shared_ptr<const cuda::Module> module;
  Workspace ws;
  std::weak_ptr<Home> home;
  Hold(int ordinal, std::shared_ptr<const cuda::Module> m, Workspace w, std::weak_ptr<Home> h)
      : context(ordinal), module(std::move(m)), ws(std::move(w)), home(std::move(h)) {}
};

/// Gives `hold` to `graph` (being captured) as a user object: from then on the graph owns it, and
/// its destruction returns it (see above). Throws CudaError when the driver lacks user objects or
/// the graph refuses it; `hold` is then freed here.
void give_to_graph(CUgraph graph, std::unique_ptr<Hold> hold);

} // namespace reduce_tune::capture
