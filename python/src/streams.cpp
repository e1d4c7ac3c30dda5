// Streams, pointers and device memory as the package's array handling needs them: which GPU a
// stream or pointer belongs to, ordering one stream after another, capture state, and memory for
// results of frameworks without an allocator we know.
#include "python/src/ext.h"

#include "runtime/capture.h"

namespace reduce_tune::pyext {

namespace {

/// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: special handles that mean "the current context's".
bool special_stream(Ptr s) { return s == 0 || s == 1 || s == 2; }

} // namespace

/// Whether `stream` belongs to GPU `ordinal`'s primary context (the CUDA runtime's, which torch,
/// CuPy and the Reducer use). The special handles always do. Returns false for a stream of
/// another GPU (or another context); throws RuntimeError without a driver.
bool stream_on_device(int ordinal, Ptr stream) {
  if (special_stream(stream)) return true;
  std::string why;
  if (!gpu_available(&why)) throw std::runtime_error("reduce_tune: " + why);
  CUcontext ctx = nullptr;
  RT_CU(cuStreamGetCtx(to_stream(stream), &ctx));
  CUdevice dev = 0;
  RT_CU(cuDeviceGet(&dev, ordinal));
  CUcontext primary = nullptr;
  RT_CU(cuDevicePrimaryCtxRetain(&primary, dev));
  RT_CU(cuDevicePrimaryCtxRelease(dev));
  return ctx == primary;
}

InPrimary::InPrimary(int ordinal) {
  reducer(ordinal); // the driver and the GPU exist
  RT_CU(cuCtxGetCurrent(&caller_));
  CUdevice dev = 0;
  RT_CU(cuDeviceGet(&dev, ordinal));
  CUcontext primary = nullptr;
  RT_CU(cuDevicePrimaryCtxRetain(&primary, dev));
  RT_CU(cuDevicePrimaryCtxRelease(dev));
  if (primary != caller_) RT_CU(cuCtxSetCurrent(primary));
}

InPrimary::~InPrimary() {
  CUcontext now = nullptr;
  if (cuda::driver().cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != caller_)
    cuda::driver().cuCtxSetCurrent(caller_);
}

/// Makes `consumer` wait on the device for the work enqueued so far on `producer` (both of GPU
/// `ordinal`): an event recorded on one, waited on by the other, then destroyed (the driver keeps
/// it until the wait is done). The protocol of __cuda_array_interface__ v3's stream field.
void stream_wait(int ordinal, Ptr consumer, Ptr producer) {
  if (consumer == producer) return;
  g_stats.stream_waits.fetch_add(1, std::memory_order_relaxed);
  const InPrimary in(ordinal);
  CUevent ev = nullptr;
  RT_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  CUresult r = cuda::driver().cuEventRecord(ev, to_stream(producer));
  if (r == CUDA_SUCCESS) r = cuda::driver().cuStreamWaitEvent(to_stream(consumer), ev, 0);
  cuda::driver().cuEventDestroy(ev);
  cuda::check(r, "cuEventRecord + cuStreamWaitEvent (the array's stream before the call's)");
}

/// Throws where the stream's capture was invalidated. A stream handle needs no context switch:
/// inside a capture in global mode it asks nothing else of the driver.
bool stream_capturing(int ordinal, Ptr stream) {
  if (stream == 0 || stream == 1) return false; // the legacy default stream is never captured
  if (stream == 2) { // the per-thread default stream: the current context's
    const InPrimary ctx(ordinal);
    return capture::state(to_stream(stream)).active;
  }
  reducer(ordinal); // the driver loaded; a stream handle needs no current context
  return capture::state(to_stream(stream)).active;
}

/// (CU_MEMORYTYPE of the pointer or 0 if CUDA does not know it, its device ordinal or -1, whether
/// it is managed memory). Raises RuntimeError without a driver.
nb::tuple pointer_info(Ptr p) {
  g_stats.pointer_queries.fetch_add(1, std::memory_order_relaxed);
  std::string why;
  if (!gpu_available(&why)) throw std::runtime_error("reduce_tune: " + why);
  unsigned type = 0;
  unsigned long long managed = 0;
  int device = -1;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* values[] = {&type, &managed, &device};
  RT_CU(cuPointerGetAttributes(3, attrs, values, CUdeviceptr(p)));
  return nb::make_tuple(int(type), device, managed != 0);
}

Ptr alloc(int ordinal, std::uint64_t bytes) {
  g_stats.allocations.fetch_add(1, std::memory_order_relaxed);
  const InPrimary in(ordinal);
  CUdeviceptr p = 0;
  RT_CU(cuMemAlloc(&p, bytes ? bytes : 1));
  return Ptr(p);
}

void release(int ordinal, Ptr p) {
  const InPrimary in(ordinal);
  RT_CU(cuMemFree(CUdeviceptr(p)));
}

void copy_to_host(int ordinal, Ptr src, nb::bytearray dst, Ptr stream) {
  const InPrimary in(ordinal);
  RT_CU(cuMemcpyDtoHAsync(dst.data(), CUdeviceptr(src), dst.size(), to_stream(stream)));
  RT_CU(cuStreamSynchronize(to_stream(stream)));
}

} // namespace reduce_tune::pyext
