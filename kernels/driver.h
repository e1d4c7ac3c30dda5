// reduce-tune: the CUDA driver API, opened at run time (libcuda.so.1) so the same binary starts on
// machines with no driver. RAII owners for context, memory, modules, streams and events; every
// call checked, failures thrown as CudaError naming the call.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune::cuda {

/// A failed driver call: the call, its CUresult and the driver's text.
class CudaError : public std::runtime_error {
public:
  CudaError(const std::string& what, CUresult code) : std::runtime_error(what), code_(code) {}
  CUresult code() const { return code_; }
private:
  CUresult code_;
};

/// No usable driver or GPU on this machine.
class NoDevice : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The driver entry points used, looked up by the names cuda.h maps them to (e.g. cuMemAlloc ->
// cuMemAlloc_v2), so the ABI matches the header built against.
#define RT_DRIVER_FUNCTIONS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)      \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                  \
  X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
  X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree)              \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyDtoDAsync) X(cuMemcpyDtoHAsync)      \
  X(cuMemcpyHtoDAsync) X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async)              \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)             \
  X(cuFuncSetAttribute)                                                                          \
  X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)  \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)                  \
  X(cuPointerGetAttribute) X(cuPointerGetAttributes) X(cuMemHostAlloc) X(cuMemFreeHost)  \
  X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemHostGetFlags) X(cuMemHostGetDevicePointer)  \
  X(cuStreamWaitEvent) X(cuStreamGetCtx) X(cuStreamIsCapturing) X(cuThreadExchangeStreamCaptureMode)
// Entry points used where present (null on older drivers): cuLaunchKernelEx (CUDA 12.0) for
// programmatic dependent launch; stream capture and user objects (CUDA 11.4) for calls on a stream
// that is being captured into a graph (runtime/capture.h), and the graph and stream-ordered
// allocation calls the tests use.
#define RT_DRIVER_OPTIONAL_FUNCTIONS(X)                                                          \
  X(cuLaunchKernelEx) X(cuUserObjectCreate) X(cuUserObjectRelease) X(cuGraphRetainUserObject)  \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)   \
  X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuMemAllocAsync) X(cuMemFreeAsync)

/// cuStreamGetCaptureInfo_v2 (CUDA 11.3) and _v3 (12.3), by their own names and signatures: which
/// one cuda.h maps cuStreamGetCaptureInfo to depends on its version (_v3's edge data is declared
/// as void here, as CUDA 11's cuda.h has no CUgraphEdgeData).
using StreamGetCaptureInfoV2 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                            const CUgraphNode**, size_t*);
using StreamGetCaptureInfoV3 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                            const CUgraphNode**, const void**, size_t*);
/// cuFuncLoad (CUDA 12.4): finishes loading a function that lazy loading left for its first launch.
using FuncLoad = CUresult (*)(CUfunction);

/// The driver's function table; loaded once.
struct Driver {
#define RT_DRIVER_MEMBER(f) decltype(&::f) f = nullptr;
  RT_DRIVER_FUNCTIONS(RT_DRIVER_MEMBER)
  RT_DRIVER_OPTIONAL_FUNCTIONS(RT_DRIVER_MEMBER)
#undef RT_DRIVER_MEMBER
  StreamGetCaptureInfoV2 cuStreamGetCaptureInfo_v2 = nullptr; // optional too
  StreamGetCaptureInfoV3 cuStreamGetCaptureInfo_v3 = nullptr; // optional too
  FuncLoad cuFuncLoad = nullptr;                                // optional too
};

/// The driver, loaded and initialised on first use. Throws NoDevice when libcuda.so.1 cannot be
/// loaded or cuInit fails (no GPU): "no CUDA driver or GPU found: ...".
const Driver& driver();
/// Whether a driver and at least one GPU are present; never throws. `why` gets the reason if not.
bool available(std::string* why = nullptr);

/// Throws CudaError for a failed call; `call` is the source text of the call.
void check(CUresult r, const char* call);
#define RT_CU(call) ::reduce_tune::cuda::check(::reduce_tune::cuda::driver().call, #call)

/// What the tuner and lookup need to know about a GPU.
struct DeviceInfo {
  int ordinal = 0;
  std::string name, uuid;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0, max_threads_per_block = 0;
  std::int64_t l2_bytes = 0, total_mem = 0;
  int mem_clock_khz = 0, bus_width_bits = 0;
  int driver_version = 0;
  double peak_gbps() const { return 2.0 * mem_clock_khz * 1e3 * bus_width_bits / 8 / 1e9; }
  int cc() const { return cc_major * 10 + cc_minor; }
};
int device_count();
DeviceInfo device_info(int ordinal);

/// The device's primary context, retained and made current for the calling thread.
class Context {
public:
  explicit Context(int ordinal);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void make_current() const;
  int ordinal() const { return ordinal_; }
private:
  int ordinal_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

/// Device memory; move-only.
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0, o.bytes_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept;
  CUdeviceptr get() const { return ptr_; }
  std::size_t size() const { return bytes_; }
private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

/// Host memory that the caller owns, page-locked while this lives (cuMemHostRegister) where the
/// driver allows it, so device copies into it run at full speed instead of through a staging
/// buffer; not copyable. `pinned()` says whether it is.
class HostRegistration {
public:
  HostRegistration(void* p, std::size_t bytes);
  ~HostRegistration();
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  bool pinned() const { return p_ != nullptr; }
private:
  void* p_ = nullptr;
};

/// A loaded module (cubin or PTX); move-only.
class Module {
public:
  Module() = default;
  explicit Module(const std::string& image);
  ~Module();
  Module(Module&& o) noexcept : mod_(o.mod_) { o.mod_ = nullptr; }
  Module& operator=(Module&& o) noexcept;
  CUfunction function(const char* name) const;
private:
  CUmodule mod_ = nullptr;
};

/// A stream; move-only.
class Stream {
public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return s_; }
  void synchronize() const;
private:
  CUstream s_ = nullptr;
};

/// An event pair measures device time between two points of a stream.
class Event {
public:
  /// `timing` false makes a lighter event that only orders work (CU_EVENT_DISABLE_TIMING).
  explicit Event(bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(CUstream s) const;
  CUevent get() const { return e_; }
  /// Milliseconds from `start` to this event (both recorded; synchronises on this one).
  float since(const Event& start) const;
private:
  CUevent e_ = nullptr;
};

/// Launches f. `programmatic`: with programmatic stream serialization (programmatic dependent
/// launch, sm_90+), so f may start before the kernel ahead of it in `s` completes; f must then
/// execute griddepcontrol.wait before it touches what that kernel writes. Needs
/// programmatic_launch().
void launch(CUfunction f, unsigned grid, unsigned block, unsigned smem, CUstream s, void** args,
            bool programmatic = false);
/// Whether the driver can launch with programmatic stream serialization (cuLaunchKernelEx).
bool programmatic_launch();

/// Copies `bytes` of host memory to `dst` and returns once they are there. A plain cuMemcpyHtoD
/// from pageable memory may return while its DMA is still in flight, and a kernel on a non-blocking
/// stream (Stream) does not wait for it: it could read part of the old contents.
void upload_sync(CUdeviceptr dst, const void* src, std::size_t bytes);

} // namespace reduce_tune::cuda
