// reduce-tune: a timed batch held until it is queued whole. The sweeps queue a batch of
// repetitions (flush, start event, launches, stop event, ...) while the threads that make the
// next inputs and references load every core; a host delay between a start event and its launch
// was timed as kernel time (on an NVIDIA H100, int32 columns 16 x 1M sum: medians of 43-70 us
// with a 2x spread where the same configurations took 32.5 us). A one-thread kernel queued first
// (templates/check/hold.cu) keeps the stream waiting until the host has queued the whole batch and
// releases it through mapped host memory; the batch then runs back to back. The kernel gives up
// after a timeout (a host that blocked on the GPU while queueing): such a batch is queued again
// once, and counted.
#pragma once

#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace reduce_tune {

class Hold {
public:
  static constexpr double kTimeoutS = 2.0;
  /// The kernel is compiled with `nvrtc` for `target` through `cache` and loaded into the current
  /// context on first use. `on` false: hold() and release() do nothing (for tests to show what the
  /// hold prevents).
  Hold(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target, double timeout_s = kTimeoutS,
       bool on = true);
  ~Hold();
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;

  /// Queues the hold kernel on `s` (never a capturing stream): what is queued on `s` after it
  /// runs once release() is called, or once the timeout has passed on the GPU.
  void hold(CUstream s);
  /// Lets the last hold go.
  void release();
  /// Once the stream has passed the last hold (e.g. its batch's stop events were waited for):
  /// whether the kernel gave up before release(), so the batch ran with the host's delays.
  bool timed_out() const;

  /// hold, queue(), release, wait() (which waits for the batch and reads its times). Where the hold
  /// timed out, rerun(). `wait` must replace what an earlier call of it read.
  template <class Queue, class Wait> void batch(CUstream s, Queue&& queue, Wait&& wait) {
    once(s, queue, wait);
    if (timed_out()) rerun(s, queue, wait);
  }
  /// A batch whose hold timed out, queued again behind a new hold: counted in reruns(), and in
  /// unprotected() where that hold times out too (its times are kept then).
  template <class Queue, class Wait> void rerun(CUstream s, Queue&& queue, Wait&& wait) {
    ++reruns_;
    once(s, queue, wait);
    if (timed_out()) ++unprotected_;
  }

  bool on() const { return on_; }
  std::size_t holds() const { return holds_; }
  std::size_t reruns() const { return reruns_; }
  std::size_t unprotected() const { return unprotected_; }

private:
  template <class Queue, class Wait> void once(CUstream s, Queue& queue, Wait& wait) {
    hold(s);
    queue();
    release();
    wait();
  }

  const Nvrtc& nvrtc_;
  CompileCache& cache_;
  ArchTarget target_;
  std::uint64_t timeout_ns_;
  bool on_;
  std::unique_ptr<cuda::Module> module_;
  CUfunction kernel_ = nullptr;
  // Two words of pinned, device-mapped host memory: [0] the generation released, [1] the last
  // generation that timed out. Generations only grow, so nothing is reset between holds.
  volatile std::uint64_t* words_ = nullptr;
  CUdeviceptr device_words_ = 0;
  std::uint64_t generation_ = 0;
  std::size_t holds_ = 0, reruns_ = 0, unprotected_ = 0;
};

/// Finishes loading `k`'s functions where the driver loads them lazily (cuFuncLoad, CUDA 12.4+; a
/// no-op before): a function's load at its first launch may wait for the GPU, which a held stream
/// keeps busy until its hold times out. Before the first held launch of a kernel.
void load_fully(const Kernel& k);

} // namespace reduce_tune
