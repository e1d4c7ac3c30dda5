// reduce-tune bench: per-call overhead of the library. The direct path is the one the tuner
// measures and the library runs (KernelLoader + plan + prepare + enqueue), with the configuration
// the Reducer chose, so the difference is the library's own bookkeeping: pointer checks, the
// cached lookup, the workspace lease, the result copy and the event that guards the workspace.
#include "bench/overhead.h"

#include "bench/data.h"

#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

namespace rt_bench {
namespace {

using namespace reduce_tune;
using Clock = std::chrono::steady_clock;

CompileCache open_cache() {
  try {
    return CompileCache(CompileCache::default_dir());
  } catch (const std::filesystem::filesystem_error&) {
    return CompileCache({}); // no cache: every load compiles
  }
}

/// Wall-clock microseconds per call of `body`, `calls` calls then one synchronisation (or one
/// after every call when `sync_each`).
template <typename F> double per_call_us(CUstream s, int calls, bool sync_each, F&& body) {
  RT_CU(cuStreamSynchronize(s));
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) {
    body();
    if (sync_each) RT_CU(cuStreamSynchronize(s));
  }
  RT_CU(cuStreamSynchronize(s));
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
}

} // namespace

struct OverheadBench::Impl {
  cuda::Context context; // the primary context, retained and current on this thread
  cuda::DeviceInfo info;
  Nvrtc nvrtc;
  CompileCache cache;
  KernelLoader loader;

  Impl(int ordinal, const std::string& nvrtc_path)
      : context(ordinal), info(cuda::device_info(ordinal)), nvrtc(nvrtc_path),
        cache(open_cache()), loader(nvrtc, cache, nvrtc.target_for(info.cc())) {}
};

OverheadBench::OverheadBench(int ordinal, const std::string& nvrtc_path)
    : impl_(std::make_unique<Impl>(ordinal, nvrtc_path)) {}

OverheadBench::~OverheadBench() = default;

Overhead OverheadBench::measure(Reducer& reducer, DType dtype, Op op, const void* d_in,
                                std::uint64_t n, void* d_out, CUstream s, int calls, int trials) {
  Impl& im = *impl_;
  im.context.make_current();
  // reduce_async needs the result on the device, so it uses the async choice (no host finish).
  const Choice choice = reducer.async_config_for(dtype, op, n);
  Overhead o;
  o.key = key(choice.config);
  o.match = std::string(name(choice.match));

  const Kernel k = im.loader.load(choice.config, dtype, op);
  Target t;
  t.dtype = dtype;
  t.op = op;
  t.cc = im.info.cc();
  t.max_block = im.info.max_threads_per_block;
  t.sm_count = im.info.sm_count;
  const LaunchPlan p = plan(choice.config, t, n);
  Workspace ws;
  ws.reserve(p, dtype, n);
  const CUdeviceptr in = reinterpret_cast<CUdeviceptr>(d_in);
  const CUdeviceptr out = reinterpret_cast<CUdeviceptr>(d_out);
  const std::size_t es = size_of(dtype);

  auto direct = [&] {
    prepare(k, p, in, n, ws, s);
    enqueue(k, p, in, n, ws, s);
  };
  auto direct_copy = [&] {
    direct();
    RT_CU(cuMemcpyDtoDAsync(out, ws.out(), es, s));
  };
  auto library = [&] { reducer.reduce_async(dtype, op, d_in, n, d_out, s); };

  // Warm-up: first-use lookups, loads and workspace growth stay out of the numbers.
  for (int i = 0; i < 20; ++i) {
    direct_copy();
    library();
  }
  RT_CU(cuStreamSynchronize(s));

  const int sync_calls = std::max(1, calls / 5);
  std::vector<double> d, dc, lib, ds, ls;
  for (int trial = 0; trial < trials; ++trial) {
    // Interleaved, so that drift of clocks or load hits every path alike.
    d.push_back(per_call_us(s, calls, false, direct));
    dc.push_back(per_call_us(s, calls, false, direct_copy));
    lib.push_back(per_call_us(s, calls, false, library));
    ds.push_back(per_call_us(s, sync_calls, true, direct));
    ls.push_back(per_call_us(s, sync_calls, true, library));
  }
  o.direct_us = rt_bench::median(d);
  o.direct_copy_us = rt_bench::median(dc);
  o.library_us = rt_bench::median(lib);
  o.direct_sync_us = rt_bench::median(ds);
  o.library_sync_us = rt_bench::median(ls);

  // The results of both paths, for the caller's check: poison, run once more, read back.
  // One element of each output (ws.out() holds 8 bytes, d_out at least one element).
  RT_CU(cuMemsetD8Async(out, 0xff, es, s));
  RT_CU(cuMemsetD8Async(ws.out(), 0xff, es, s));
  direct();
  o.direct_bits = result(k, p, ws, s).bits; // Scalar: the value's bytes in the low bytes
  library();
  RT_CU(cuStreamSynchronize(s));
  RT_CU(cuMemcpyDtoH(&o.library_bits, out, es));
  return o;
}

} // namespace rt_bench
