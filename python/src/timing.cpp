// The bench's reference: host times of the C++ call and of the driver queries its path may make,
// measured in this process (bench/python_api.py compares the package's calls with them).
#include "python/src/ext.h"

#include "runtime/capture.h"

#include <algorithm>
#include <chrono>

namespace reduce_tune::pyext {

/// Host microseconds per Reducer::reduce_async call, `calls` back-to-back calls: (until the last
/// call returned, until the stream finished them), each divided by `calls`; the second is
/// bench/overhead.cpp's library_us, measured in this process.
std::pair<double, double> time_calls(int ordinal, int dtype, int op, Ptr in, std::uint64_t n,
                                     Ptr out, Ptr stream, int calls) {
  Reducer& r = reducer(ordinal);
  const InPrimary ctx(ordinal);
  calls = std::max(calls, 1);
  for (int i = 0; i < 10; ++i)
    r.reduce_async(to_dtype(dtype), to_op(op), in_ptr(in), n, out_ptr(out), to_stream(stream));
  RT_CU(cuStreamSynchronize(to_stream(stream)));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    r.reduce_async(to_dtype(dtype), to_op(op), in_ptr(in), n, out_ptr(out), to_stream(stream));
  const auto t1 = std::chrono::steady_clock::now();
  RT_CU(cuStreamSynchronize(to_stream(stream)));
  const auto t2 = std::chrono::steady_clock::now();
  using us = std::chrono::duration<double, std::micro>;
  return {us(t1 - t0).count() / calls, us(t2 - t0).count() / calls};
}

/// The median host microseconds of one Reducer::reduce_async call made on an idle stream (the
/// stream drained before each call, outside the timing): the host's own cost of the call, which
/// back-to-back calls (time_calls) hide where the GPU runs each call's kernel longer than the host
/// takes to enqueue it (those calls then wait for room in the stream's queue).
double time_calls_idle(int ordinal, int dtype, int op, Ptr in, std::uint64_t n, Ptr out, Ptr stream,
                       int calls) {
  Reducer& r = reducer(ordinal);
  const InPrimary ctx(ordinal);
  calls = std::max(calls, 1);
  std::vector<double> each(calls);
  using clock = std::chrono::steady_clock;
  for (int i = -10; i < calls; ++i) { // 10 calls first: warm
    RT_CU(cuStreamSynchronize(to_stream(stream)));
    const auto t0 = clock::now();
    r.reduce_async(to_dtype(dtype), to_op(op), in_ptr(in), n, out_ptr(out), to_stream(stream));
    const auto t1 = clock::now();
    if (i >= 0) each[i] = std::chrono::duration<double, std::micro>(t1 - t0).count();
  }
  RT_CU(cuStreamSynchronize(to_stream(stream)));
  std::nth_element(each.begin(), each.begin() + calls / 2, each.end());
  return each[calls / 2];
}

/// Host microseconds per driver query that the call path may make, `calls` back to back: the
/// pointer query of a pointer not checked before (cuPointerGetAttributes of five attributes, as
/// runtime/arguments.cpp asks), the stream's capture state (every asynchronous call:
/// capture::state) and the current context (every call).
nb::dict time_queries(int ordinal, Ptr ptr, Ptr stream, int calls) {
  reducer(ordinal);
  const InPrimary ctx(ordinal);
  calls = std::max(calls, 1);
  using clock = std::chrono::steady_clock;
  const auto per_call = [&](auto&& f) {
    const auto t0 = clock::now();
    for (int i = 0; i < calls; ++i) f();
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count() / calls;
  };
  nb::dict d;
  d["pointer_query_us"] = per_call([&] {
    unsigned type = 0;
    unsigned long long managed = 0;
    int device = -1;
    CUdeviceptr start = 0;
    std::size_t size = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void* values[] = {&type, &managed, &device, &start, &size};
    RT_CU(cuPointerGetAttributes(5, attrs, values, CUdeviceptr(ptr)));
  });
  d["capture_query_us"] = per_call([&] { capture::state(to_stream(stream)); });
  d["context_query_us"] = per_call([&] {
    CUcontext c = nullptr;
    RT_CU(cuCtxGetCurrent(&c));
  });
  return d;
}

} // namespace reduce_tune::pyext
