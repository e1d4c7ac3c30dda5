// reduce-tune: the driver API through dlopen, and its RAII owners.
#include "kernels/driver.h"

#include <dlfcn.h>

#include <mutex>

namespace reduce_tune::cuda {
namespace {

#define RT_STR2(x) #x
#define RT_STR(x) RT_STR2(x)

struct Loaded {
  Driver d;
  std::string error; // empty when usable
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      r.error = "no CUDA driver or GPU found: libcuda.so.1 could not be loaded (" +
                std::string(e ? e : "unknown") + ")";
      return r;
    }
#define RT_DRIVER_LOAD(f)                                                                       \
  r.d.f = reinterpret_cast<decltype(r.d.f)>(dlsym(h, RT_STR(f)));                               \
  if (!r.d.f && r.error.empty())                                                                \
    r.error = "the CUDA driver is too old: it lacks " RT_STR(f);
    RT_DRIVER_FUNCTIONS(RT_DRIVER_LOAD)
#undef RT_DRIVER_LOAD
#define RT_DRIVER_LOAD_OPTIONAL(f) r.d.f = reinterpret_cast<decltype(r.d.f)>(dlsym(h, RT_STR(f)));
    RT_DRIVER_OPTIONAL_FUNCTIONS(RT_DRIVER_LOAD_OPTIONAL)
#undef RT_DRIVER_LOAD_OPTIONAL
    r.d.cuStreamGetCaptureInfo_v2 =
        reinterpret_cast<StreamGetCaptureInfoV2>(dlsym(h, "cuStreamGetCaptureInfo_v2"));
    r.d.cuStreamGetCaptureInfo_v3 =
        reinterpret_cast<StreamGetCaptureInfoV3>(dlsym(h, "cuStreamGetCaptureInfo_v3"));
    r.d.cuFuncLoad = reinterpret_cast<FuncLoad>(dlsym(h, "cuFuncLoad"));
    if (!r.error.empty()) return r;
    if (CUresult c = r.d.cuInit(0); c != CUDA_SUCCESS) {
      const char* name = nullptr;
      r.d.cuGetErrorName(c, &name);
      r.error = "no CUDA driver or GPU found: cuInit failed (" + std::string(name ? name : "?") + ")";
      return r;
    }
    int n = 0;
    if (r.d.cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0)
      r.error = "no CUDA driver or GPU found: the driver reports no GPU";
    return r;
  }();
  return l;
}

} // namespace

const Driver& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw NoDevice(l.error);
  return l.d;
}

bool available(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error;
  return l.error.empty();
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char *name = nullptr, *text = nullptr;
  driver().cuGetErrorName(r, &name);
  driver().cuGetErrorString(r, &text);
  throw CudaError(std::string(call) + " failed: " + (name ? name : "?") + " (" +
                      (text ? text : "?") + ")",
                  r);
}

int device_count() {
  int n = 0;
  RT_CU(cuDeviceGetCount(&n));
  return n;
}

DeviceInfo device_info(int ordinal) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw NoDevice("no GPU with ordinal " + std::to_string(ordinal) + " (this machine has " +
                   std::to_string(count) + ")");
  CUdevice dev;
  RT_CU(cuDeviceGet(&dev, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  RT_CU(cuDeviceGetName(name, sizeof name, dev));
  info.name = name;
  CUuuid u;
  RT_CU(cuDeviceGetUuid(&u, dev));
  static const char* hex = "0123456789abcdef";
  info.uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) info.uuid += '-';
    info.uuid += hex[(u.bytes[i] >> 4) & 15];
    info.uuid += hex[u.bytes[i] & 15];
  }
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    RT_CU(cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.mem_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  std::size_t total = 0;
  RT_CU(cuDeviceTotalMem(&total, dev));
  info.total_mem = std::int64_t(total);
  RT_CU(cuDriverGetVersion(&info.driver_version));
  return info;
}

Context::Context(int ordinal) : ordinal_(ordinal) {
  device_info(ordinal); // validates the ordinal with a clear message
  RT_CU(cuDeviceGet(&dev_, ordinal));
  RT_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
  make_current();
}

Context::~Context() {
  if (ctx_) driver().cuDevicePrimaryCtxRelease(dev_);
}

void Context::make_current() const { RT_CU(cuCtxSetCurrent(ctx_)); }

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) RT_CU(cuMemAlloc(&ptr_, bytes));
}

Buffer::~Buffer() {
  if (ptr_) driver().cuMemFree(ptr_);
}

HostRegistration::HostRegistration(void* p, std::size_t bytes) {
  // Checked, and a refusal (a system that does not allow it, memory already registered) leaves
  // the memory as it was: copies into it are then staged, slower but the same.
  if (p && bytes && driver().cuMemHostRegister(p, bytes, 0) == CUDA_SUCCESS) p_ = p;
}

HostRegistration::~HostRegistration() {
  if (p_) driver().cuMemHostUnregister(p_);
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.ptr_ = 0, o.bytes_ = 0;
  }
  return *this;
}

Module::Module(const std::string& image) { RT_CU(cuModuleLoadData(&mod_, image.data())); }

Module::~Module() {
  if (mod_) driver().cuModuleUnload(mod_);
}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (mod_) driver().cuModuleUnload(mod_);
    mod_ = o.mod_;
    o.mod_ = nullptr;
  }
  return *this;
}

CUfunction Module::function(const char* name) const {
  CUfunction f = nullptr;
  RT_CU(cuModuleGetFunction(&f, mod_, name));
  return f;
}

Stream::Stream() { RT_CU(cuStreamCreate(&s_, CU_STREAM_NON_BLOCKING)); }

void upload_sync(CUdeviceptr dst, const void* src, std::size_t bytes) {
  RT_CU(cuMemcpyHtoD(dst, src, bytes));
  RT_CU(cuCtxSynchronize());
}
Stream::~Stream() {
  if (s_) driver().cuStreamDestroy(s_);
}
void Stream::synchronize() const { RT_CU(cuStreamSynchronize(s_)); }

Event::Event(bool timing) {
  RT_CU(cuEventCreate(&e_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
}
Event::~Event() {
  if (e_) driver().cuEventDestroy(e_);
}
void Event::record(CUstream s) const { RT_CU(cuEventRecord(e_, s)); }
float Event::since(const Event& start) const {
  RT_CU(cuEventSynchronize(e_));
  float ms = 0;
  RT_CU(cuEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

void launch(CUfunction f, unsigned grid, unsigned block, unsigned smem, CUstream s, void** args,
            bool programmatic) {
  if (!programmatic) {
    RT_CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, smem, s, args, nullptr));
    return;
  }
  if (!programmatic_launch())
    throw CudaError("cuLaunchKernelEx: the driver lacks it (programmatic launch needs CUDA 12.0)",
                    CUDA_ERROR_NOT_SUPPORTED);
  CUlaunchAttribute attr = {};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg = {};
  cfg.gridDimX = grid, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = block, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.sharedMemBytes = smem;
  cfg.hStream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  RT_CU(cuLaunchKernelEx(&cfg, f, args, nullptr));
}

bool programmatic_launch() { return driver().cuLaunchKernelEx != nullptr; }

} // namespace reduce_tune::cuda
