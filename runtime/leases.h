// reduce-tune: the Reducer's workspaces for eager calls. Each concurrent caller takes one (a
// lease) for the length of its call and gives it back; a later call that reuses it is ordered on
// the device after the asynchronous reduction that used it last (the host never waits). Calls on
// a capturing stream take none (runtime/capture.h). Not installed.
#pragma once

#include "kernels/driver.h"
#include "kernels/runner.h"
#include "runtime/capture.h"

#include <deque>
#include <memory>
#include <mutex>

namespace reduce_tune::detail {

/// Device memory for one reduction at a time, and the event that marks the end of its last
/// asynchronous use.
struct Lease {
  Workspace ws;
  cuda::Event done{false};
  CUstream stream = nullptr; ///< the stream of its last asynchronous use
  bool pending = false;      ///< `done` was recorded by an asynchronous call and not yet waited for
};

/// The idle leases. Thread-safe.
class LeasePool {
public:
  /// An idle lease, least recently used first, else a new one (one more caller at once than ever
  /// before), with a workspace a destroyed graph gave back to `home` if there is one.
  std::unique_ptr<Lease> take(capture::Home& home);
  void give(std::unique_ptr<Lease> lease);
  /// Waits for the asynchronous work of every idle lease (the reducer is going; needs its context
  /// current).
  void wait_idle();

private:
  std::mutex mu_;
  std::deque<std::unique_ptr<Lease>> idle_;
};

/// A lease for the length of one eager call, idle when taken and back in the pool at the end.
/// A failure after work was enqueued synchronizes the stream first, so a lease never goes back
/// with work in flight that its next user does not know of.
class Borrowed {
public:
  /// Work on `stream` is ordered after the lease's last asynchronous use: by the stream itself
  /// when it is the same one, else by a device-side wait on its event (the host never waits).
  Borrowed(LeasePool& pool, capture::Home& home, CUstream stream);
  ~Borrowed();
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;

  /// f(lease): the call's work on `stream`.
  template <typename F> auto run(CUstream stream, F&& f) {
    try {
      return f(*lease_);
    } catch (...) {
      synchronize(stream);
      throw;
    }
  }

private:
  static void synchronize(CUstream stream) noexcept;
  LeasePool& pool_;
  std::unique_ptr<Lease> lease_;
};

} // namespace reduce_tune::detail
