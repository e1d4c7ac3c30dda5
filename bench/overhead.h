// reduce-tune bench: the per-call host overhead of Reducer::reduce_async over launching the same
// kernel directly through the tuner's own path (kernels/runner.h).
#pragma once

#include "reduce_tune/reducer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace rt_bench {

/// Per-call wall-clock times in microseconds (std::chrono::steady_clock), medians over trials.
struct Overhead {
  std::string key;            ///< the configuration reduce_async uses (async_config_for)
  std::string match;
  /// K back-to-back calls, then one stream synchronisation, divided by K:
  double direct_us = 0;       ///< prepare + enqueue of the chosen kernel (kernels/runner.h)
  double direct_copy_us = 0;  ///< the same plus the device-to-device copy of the result (4 or
                              ///< 8 bytes) to the caller's pointer, which reduce_async adds
  double library_us = 0;      ///< Reducer::reduce_async
  /// Each call followed by a stream synchronisation (the latency of one call):
  double direct_sync_us = 0;
  double library_sync_us = 0;
  /// The last results, for the check: the result's bytes in the low bytes (bench/data.h).
  std::uint64_t direct_bits = 0, library_bits = 0;
};

/// Loads kernels the way the library does, in the primary context of `ordinal` (the one the CUDA
/// runtime and the Reducer use). Construct after the runtime has initialised the device.
class OverheadBench {
public:
  OverheadBench(int ordinal, const std::string& nvrtc_path);
  ~OverheadBench();
  OverheadBench(const OverheadBench&) = delete;
  OverheadBench& operator=(const OverheadBench&) = delete;

  /// Times `calls` back-to-back calls per trial, `trials` trials (median taken); the synchronised
  /// variants use calls / 5. d_in holds n elements of dtype; d_out one element (device memory).
  Overhead measure(reduce_tune::Reducer& reducer, reduce_tune::DType dtype, reduce_tune::Op op,
                   const void* d_in, std::uint64_t n, void* d_out, CUstream stream, int calls,
                   int trials);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace rt_bench
