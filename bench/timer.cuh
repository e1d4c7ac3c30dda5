// reduce-tune bench: what every benchmark of bench/ shares on the GPU side: CUDA error checks,
// the device's figures, and the timing loop (events, warm-up, chunk medians, cold L2 by a
// 2 x L2 memset, a spin kernel that hides the host's enqueue). reduce_bench (bench.cu) and
// reduce_bench_segmented (segmented.cu) time every contestant through Timer.
#pragma once

#include "bench/data.h" // median
#include "kernels/driver.h" // reduce_tune::cuda::CudaError

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rt_bench {

/// A failed CUDA runtime call. Fatal for the run: a fault leaves the context unusable.
struct CudaRuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs one bench cell. A library error (an argument, a compile, the store) fails only that cell:
/// its message is returned (empty: none). CUDA errors, runtime or driver, propagate and end the run.
template <class F> std::string cell_error(F&& cell) {
  try {
    cell();
  } catch (const CudaRuntimeError&) {
    throw;
  } catch (const reduce_tune::cuda::CudaError&) {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

/// Throws CudaRuntimeError naming the call and where it was made.
void check_cuda(cudaError_t e, const char* call, const char* file, int line);
#define CK(call) ::rt_bench::check_cuda((call), #call, __FILE__, __LINE__)

/// The GPU's figures the reports quote.
struct Device {
  int ordinal = 0;
  cudaDeviceProp prop{};
  int sm_count = 0, l2_bytes = 0, mem_clock_khz = 0, bus_bits = 0;
  double peak_gbps = 0; ///< 2 x memory clock x bus width / 8
  int driver_version = 0, runtime_version = 0;
};

/// Makes `ordinal` current (creating its primary context) and reads its figures.
Device open_device(int ordinal);

/// Enqueues a one-warp kernel that spins for `ns` nanoseconds of the GPU's global timer.
void launch_spin(cudaStream_t s, unsigned long long ns);

/// How Timer times.
struct TimerOptions {
  int reps = 50;        ///< timed calls
  int warmup = 3;
  double spin_us = 40;  ///< spin kernel before each start event (0: none)
  bool idle = false;    ///< wait for the stream before the start event instead of spinning
  /// Where a call takes at least this long, the timed calls are cut to what fits (no fewer than
  /// min_reps): a segmented CUB call over 2^28 elements can take a third of a second. 0: never.
  double budget_s = 0;
  int min_reps = 8;
  /// Poison the output before the L2 flush instead of after it (the flush then evicts the
  /// output too: cold output, as a fresh output allocation has). The 1-D bench's output is one
  /// element and keeps the historical order (after).
  bool poison_before_flush = false;
};

struct Stats {
  double median_us = 0;     ///< the lowest chunk median (each contestant in its best launch state)
  double all_median_us = 0; ///< the median of every timed call
  double min_us = 0;
  int calls = 0;            ///< timed calls
};

/// The timing loop every contestant goes through.
class Timer {
public:
  Timer(const Device& dev, const TimerOptions& o);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  cudaStream_t stream() const { return stream_; }
  std::size_t flush_bytes() const { return flush_bytes_; }

  /// Warm-up, then reps timed calls in kChunks chunks; `call` enqueues one call on stream() and
  /// writes `out_bytes` bytes of results at `out`, which are poisoned (0xff) before each call so
  /// each call must write them. The median is the lowest of the chunks' medians.
  ///
  /// Why chunks: on an H100 a call of two dependent kernels (CUB's two passes, a two-pass finish)
  /// took ~0.9 us longer in some runs of consecutive calls than in others, the same all through a
  /// run and changed by what was enqueued before it (an odd count of calls per contestant made it
  /// alternate between sizes; one empty kernel between runs could switch it). A memset and one
  /// kernel were not affected. Before chunk c the stream gets (c & 1) empty kernels and (c >> 1)
  /// small memsets, so each contestant is timed in more than one such state, and each is
  /// reported in its best (docs/PERFORMANCE.md, "Timing two-kernel calls").
  static constexpr int kChunks = 4;
  template <typename F> Stats time(bool cold, void* out, std::size_t out_bytes, F&& call) {
    std::vector<double> us;
    std::vector<double> chunk_medians;
    int reps = o_.reps;
    int per_chunk = std::max(1, reps / kChunks);
    int chunk = 0, in_chunk = 0;
    const std::size_t filler = out_bytes < 8 ? out_bytes : 8;
    for (int r = 0; r < o_.warmup + reps; ++r) {
      if (r >= o_.warmup && in_chunk == 0) {
        for (int k = 0; k < (chunk & 1); ++k) launch_spin(stream_, 0);
        for (int k = 0; k < (chunk >> 1); ++k) CK(cudaMemsetAsync(out, 0, filler, stream_));
      }
      if (o_.poison_before_flush) CK(cudaMemsetAsync(out, 0xff, out_bytes, stream_));
      if (cold) CK(cudaMemsetAsync(flush_, r & 0xff, flush_bytes_, stream_));
      if (!o_.poison_before_flush) CK(cudaMemsetAsync(out, 0xff, out_bytes, stream_));
      if (o_.idle) {
        CK(cudaStreamSynchronize(stream_));
      } else {
        launch_spin(stream_, (unsigned long long)(o_.spin_us * 1e3));
      }
      CK(cudaEventRecord(start_, stream_));
      call();
      CK(cudaEventRecord(stop_, stream_));
      CK(cudaEventSynchronize(stop_));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, start_, stop_));
      if (r < o_.warmup) {
        // The last warm-up call sets the count of timed calls where a budget is given.
        if (r == o_.warmup - 1 && o_.budget_s > 0 && ms * 1e-3 * reps > o_.budget_s) {
          reps = std::max(std::min(o_.min_reps, o_.reps), int(o_.budget_s / (ms * 1e-3)));
          per_chunk = std::max(1, reps / kChunks);
        }
        continue;
      }
      us.push_back(ms * 1e3);
      // A chunk ends after per_chunk calls; the last one takes the remainder.
      if (++in_chunk == per_chunk && chunk + 1 < kChunks) {
        chunk_medians.push_back(median({us.end() - in_chunk, us.end()}));
        ++chunk, in_chunk = 0;
      }
    }
    if (in_chunk > 0) chunk_medians.push_back(median({us.end() - in_chunk, us.end()}));
    Stats s;
    s.median_us = *std::min_element(chunk_medians.begin(), chunk_medians.end());
    s.all_median_us = median(us);
    s.min_us = *std::min_element(us.begin(), us.end());
    s.calls = int(us.size());
    return s;
  }

private:
  TimerOptions o_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
};

} // namespace rt_bench
