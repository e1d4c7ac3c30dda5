// The GPU tests' shared setup: GPU 0's primary context, NVRTC with the user's compile cache, a
// loader for the device's architecture and a stream, made once per test executable.
#pragma once

#include "kernels/runner.h"

namespace reduce_tune::testing {

struct Gpu {
  cuda::Context ctx{0};
  cuda::DeviceInfo info = cuda::device_info(0);
  Nvrtc nvrtc;
  CompileCache cache{CompileCache::default_dir()};
  KernelLoader loader{nvrtc, cache, nvrtc.target_for(info.cc())};
  cuda::Stream stream;
  Target target(DType d, Op op, bool allow_unsafe = false) const {
    return Target{d, op, info.cc(), info.max_threads_per_block, info.sm_count, allow_unsafe};
  }
};

/// The one Gpu of the test executable (inline: the same object in every file).
inline Gpu& gpu() {
  static Gpu g;
  return g;
}

} // namespace reduce_tune::testing
