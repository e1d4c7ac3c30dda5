// The GPU tests' shared setup. GpuContext: GPU 0's primary context and what the tests check
// configurations against, made per test case by the Reducer's tests (the Reducer loads its own
// kernels). Gpu: that plus NVRTC with the user's compile cache, a loader for the device's
// architecture and a stream, made once per test executable. mismatch: a Reducer result checked
// against the CPU reference.
#pragma once

#include "tuner/reference.h"
#include "kernels/catalogue.h"
#include "kernels/runner.h"
#include "reduce_tune/reducer.h"

#include <string>
#include <vector>

namespace reduce_tune::testing {

struct GpuContext {
  cuda::Context ctx{0};
  cuda::DeviceInfo info = cuda::device_info(0);
  Target target(DType d, Op op, bool allow_unsafe = false) const {
    return Target{d, op, info.cc(), info.max_threads_per_block, info.sm_count, allow_unsafe};
  }
};

struct Gpu : GpuContext {
  Nvrtc nvrtc;
  CompileCache cache{CompileCache::default_dir()};
  KernelLoader loader{nvrtc, cache, nvrtc.target_for(info.cc())};
  cuda::Stream stream;
};

/// The one Gpu of the test executable (inline: the same object in every file).
inline Gpu& gpu() {
  static Gpu g;
  return g;
}

/// `got` checked against the CPU reference of `a`, with the float bound of the configuration the
/// reducer reports for the call (`c`). Returns the message for a failure, empty when right.
inline std::string mismatch(const GpuContext& g, const Choice& c, const HostArray& a, Op op,
                            Scalar got) {
  const Check k = check(reference(a, op), got, op,
                        summation_depth(c.config, g.target(a.dtype, op), a.n));
  if (k.ok) return "";
  return key(c.config) + " " + std::string(name(a.dtype)) + " " + std::string(name(op)) +
         " n=" + std::to_string(a.n) + ": got " + k.observed + ", expected " + k.expected +
         " (error " + std::to_string(k.error) + ", bound " + std::to_string(k.bound) + ")";
}

/// One launch of a segmented kernel on `a` (its plan `p`, workspace `ws`), its results copied into
/// `got` and checked against `refs` with the configuration's bound. The caller poisons `a.out`
/// before the first launch.
inline Check launch_checked(const Kernel& k, const Config& config, const Target& t,
                            const Segmentation& seg, const SegmentedPlan& p,
                            const SegmentedArgs& a, Workspace& ws, HostArray& got,
                            const std::vector<Reference>& refs, Op op, CUstream s) {
  enqueue(k, p, a, ws, s);
  RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), a.out, got.bytes.size(), s));
  RT_CU(cuStreamSynchronize(s));
  return check_segmented(refs, got, seg, op, [&](std::uint64_t len) {
    return segment_depth(config, t, seg.shape, len);
  });
}

/// The arguments of a segmented launch over `seg` (input, offsets and result in device memory).
inline SegmentedArgs segmented_args(const Segmentation& seg, CUdeviceptr in, CUdeviceptr offsets,
                                    CUdeviceptr out) {
  SegmentedArgs a;
  a.in = in;
  a.offsets = offsets;
  a.out = out;
  a.shape = seg.shape;
  a.stride = seg.stride;
  return a;
}

} // namespace reduce_tune::testing
