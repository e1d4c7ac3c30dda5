// reduce_tune._ext: the thin nanobind layer over reduce_tune::Reducer. Pointers and streams are
// Python ints; the Python package (python/reduce_tune) reads the array protocols and calls these.
// One Reducer per GPU, created on first use and kept for the life of the process (never destroyed:
// at interpreter exit the CUDA driver may already be shutting down; set_record replaces them with
// new ones and keeps the old). A second one per GPU, never tuning on first use, serves the user
// reductions whose first-use tuning the package does itself (checked by their NumPy check).
#include "reduce_tune/reducer.h"

#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/ops.h"
#include "kernels/user_op.h"
#include "runtime/capture.h"
#include "runtime/counters.h"
#include "runtime/autotune.h"
#include "runtime/record.h"

#include <dlfcn.h>
#include <sqlite3.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;
using namespace reduce_tune;

namespace {

using Ptr = std::uintptr_t;

// ---- what the calls did: counters the tests read ---------------------------------------------

/// Counted since import: Reducers created, SQLite statements run by the library's connections (the
/// tuning store and the shipped tuning: a lookup), and the extension's own allocations, stream
/// waits and pointer queries (stats() adds the library's: runtime/counters.h). A warm call of the
/// package does none of these.
struct Stats {
  std::atomic<std::uint64_t> reducers{0}, store_statements{0}, allocations{0}, stream_waits{0},
      pointer_queries{0};
} g_stats;

int count_statement(unsigned, void*, void*, void*) {
  g_stats.store_statements.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

/// Run by SQLite for every connection opened after import (sqlite3_auto_extension): the store's and
/// the shipped tuning's, which the Reducers open. (Where SQLite is a shared library, connections
/// that others in the process open are counted too.)
int count_statements_of(sqlite3* db, const char**, const sqlite3_api_routines*) {
  sqlite3_trace_v2(db, SQLITE_TRACE_STMT, count_statement, nullptr);
  return SQLITE_OK;
}

// ---- NVRTC ------------------------------------------------------------------------------------

std::vector<std::string> g_nvrtc_candidates; // NVRTCs of pip wheels the package found (set_nvrtc_candidates)

/// The NVRTC the reducers open: "" for the library's own choice ($REDUCE_TUNE_NVRTC, else the
/// soname this build was made against, on the loader path or in the build's toolkit) where that
/// loads, else the first of the package's candidates that loads (the nvidia-cuda-nvrtc wheels).
/// Its builtins library (libnvrtc-builtins.so.X.Y) is opened from the same folder first, so that
/// NVRTC finds it by name without LD_LIBRARY_PATH. g_reducers_mu held.
std::string nvrtc_path() {
  const char* env = std::getenv("REDUCE_TUNE_NVRTC");
  if (env && *env) return "";
  // Left open: the Reducer opens the same library next.
  if (dlopen(RT_DEFAULT_NVRTC, RTLD_NOW | RTLD_LOCAL)) return "";
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(RT_NVRTC_FALLBACK_DIR) / RT_DEFAULT_NVRTC, ec))
    return "";
  for (const std::string& c : g_nvrtc_candidates) {
    const std::filesystem::path dir = std::filesystem::path(c).parent_path();
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("libnvrtc-builtins.so.", 0) == 0) dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return c;
  }
  return "";
}

/// An NVRTC that cannot be loaded, said with what would provide one.
[[noreturn]] void rethrow_nvrtc(const std::exception& e) {
  const std::string what = e.what();
  if (what.rfind("cannot load NVRTC", 0) == 0)
    throw std::runtime_error("reduce_tune: " + what + ". Install the CUDA toolkit's NVRTC, or "
                             "`pip install nvidia-cuda-nvrtc` (or nvidia-cuda-nvrtc-cu12), or set "
                             "REDUCE_TUNE_NVRTC to a libnvrtc.so");
  throw;
}

// ---- reducers ---------------------------------------------------------------------------------

std::mutex g_reducers_mu;
std::vector<Reducer*> g_reducers; // index: ordinal; leaked on purpose (see above)
std::string g_shipped_path;       // the package's copy of the shipped tuning (set_shipped_path)
constexpr int kFastGpus = 64;
std::atomic<Reducer*> g_fast[kFastGpus]; // the same reducers, read without the lock by every call
bool g_record = false; // Options::record of the reducers (set_record); g_reducers_mu held
bool g_autotune = false; // Options::autotune of the reducers (set_autotune); g_reducers_mu held
/// Per GPU, the reducer without first-use tuning (own_reducer); made on first use, leaked as the
/// others. g_reducers_mu held.
std::vector<Reducer*> g_own;

/// A Reducer of GPU `ordinal` with the package's options; `own_tuning`: never tuning on first use
/// (the package tunes those calls itself). g_reducers_mu held.
Reducer* new_reducer(int ordinal, bool own_tuning = false) {
  Options o;
  o.shipped_path = g_shipped_path;
  o.nvrtc_path = nvrtc_path();
  o.record = g_record;
  o.autotune = own_tuning ? false : g_autotune;
  o.autotune_from_env = !own_tuning;
  Reducer* r = nullptr;
  try {
    r = new Reducer(ordinal, o);
  } catch (const std::runtime_error& e) {
    rethrow_nvrtc(e);
  }
  g_stats.reducers.fetch_add(1, std::memory_order_relaxed);
  if (!own_tuning && ordinal < kFastGpus) g_fast[ordinal].store(r, std::memory_order_release);
  return r;
}

Reducer& create_reducer(int ordinal) {
  std::lock_guard lock(g_reducers_mu);
  if (ordinal < 0 || std::size_t(ordinal) >= g_reducers.size() || !g_reducers[ordinal]) {
    std::string why;
    if (!gpu_available(&why)) throw std::runtime_error("reduce_tune: " + why);
    const int count = cuda::device_count();
    if (ordinal < 0 || ordinal >= count)
      throw std::invalid_argument("reduce_tune: no GPU " + std::to_string(ordinal) + " (this machine has " +
                                  std::to_string(count) + ")");
    if (g_reducers.size() < std::size_t(count)) g_reducers.resize(count, nullptr);
    if (!g_reducers[ordinal]) g_reducers[ordinal] = new_reducer(ordinal);
  }
  return *g_reducers[ordinal];
}

/// The Reducer of GPU `ordinal`, created on first use. Throws RuntimeError (no driver or GPU)
/// or ValueError (no such GPU).
inline Reducer& reducer(int ordinal) {
  if (unsigned(ordinal) < unsigned(kFastGpus))
    if (Reducer* r = g_fast[ordinal].load(std::memory_order_acquire)) return *r;
  return create_reducer(ordinal);
}

/// GPU `ordinal`'s reducer that never tunes on first use, for the user reductions the package
/// tunes itself; created on first use (after reducer(ordinal), whose checks it shares).
Reducer& own_reducer(int ordinal) {
  reducer(ordinal);
  std::lock_guard lock(g_reducers_mu);
  if (g_own.size() <= std::size_t(ordinal)) g_own.resize(std::size_t(ordinal) + 1, nullptr);
  if (!g_own[ordinal]) g_own[ordinal] = new_reducer(ordinal, true);
  return *g_own[ordinal];
}

/// A new own_reducer for GPU `ordinal` (the old one kept alive, as set_record keeps its): it opens
/// the store again, which a tuning that created the store after the old one was made needs.
void renew_own_reducer(int ordinal) {
  reducer(ordinal);
  std::lock_guard lock(g_reducers_mu);
  if (g_own.size() <= std::size_t(ordinal)) g_own.resize(std::size_t(ordinal) + 1, nullptr);
  g_own[ordinal] = new_reducer(ordinal, true);
}

// ---- calls with or without the GIL -------------------------------------------------------------

/// The calls known to be warm: a call of that kind, GPU, dtype, op, result and size buckets (the
/// Reducer's: [2^k, 2^(k+1)) in each extent) returned before, so its configuration is looked up and
/// loaded and the call only enqueues work. Those run holding the GIL, which costs less than
/// letting it go and taking it back; a first call, which may compile for a second, lets other
/// threads run. A direct-mapped table of exact keys: a key pushed out by another is just cold again.
class WarmCalls {
public:
  static std::uint64_t key(int kind, int dev, int dtype, int op, std::uint64_t a, std::uint64_t b,
                           int result) {
    return 1 + (std::uint64_t(kind & 3) | std::uint64_t(dev & 0xff) << 2 |
                std::uint64_t(dtype & 0x3f) << 10 | std::uint64_t(op & 0x3f) << 16 |
                std::uint64_t(std::bit_width(a)) << 22 | std::uint64_t(std::bit_width(b)) << 29 |
                std::uint64_t(result & 0x3f) << 36);
  }
  /// Runs f, without the GIL unless `k` is warm; `k` is warm after f returns.
  template <typename F> void run(std::uint64_t k, F&& f) {
    std::atomic<std::uint64_t>& slot = slots_[(k * 0x9E3779B97F4A7C15ull) >> (64 - kBits)];
    if (slot.load(std::memory_order_relaxed) == k) {
      f();
      return;
    }
    {
      nb::gil_scoped_release nogil;
      f();
    }
    slot.store(k, std::memory_order_relaxed);
  }
  /// Every call cold again (the reducers were replaced: their first calls load kernels).
  void clear() {
    for (auto& slot : slots_) slot.store(0, std::memory_order_relaxed);
  }

private:
  static constexpr int kBits = 12;
  std::atomic<std::uint64_t> slots_[std::size_t(1) << kBits] = {};
} g_warm;

/// Options::record for the reducers from now on: the existing ones are replaced by new ones with
/// the setting (Options are fixed at construction). The old ones are left alive, never destroyed,
/// since another thread may be inside a call on one; the new ones load their kernels again (from
/// the compile cache).
void set_record(bool on) {
  std::lock_guard lock(g_reducers_mu);
  if (on == g_record) return;
  g_record = on;
  for (std::size_t i = 0; i < g_reducers.size(); ++i)
    if (g_reducers[i]) g_reducers[i] = new_reducer(int(i));
  for (std::size_t i = 0; i < g_own.size(); ++i)
    if (g_own[i]) g_own[i] = new_reducer(int(i), true);
  g_warm.clear();
}

/// Options::autotune for the reducers from now on, as set_record does for recording.
void set_autotune(bool on) {
  std::lock_guard lock(g_reducers_mu);
  if (on == g_autotune) return;
  g_autotune = on;
  for (std::size_t i = 0; i < g_reducers.size(); ++i)
    if (g_reducers[i]) g_reducers[i] = new_reducer(int(i));
  g_warm.clear();
}

enum CallKind { kArray = 0, kRows = 1, kColumns = 2, kSegments = 3 };

DType to_dtype(int v) { return static_cast<DType>(v); }
Op to_op(int v) { return static_cast<Op>(v); }
const void* in_ptr(Ptr p) { return reinterpret_cast<const void*>(p); }
void* out_ptr(Ptr p) { return reinterpret_cast<void*>(p); }
CUstream to_stream(Ptr s) { return reinterpret_cast<CUstream>(s); }

/// Every value of an enum that has a name, in enum order: the C++ library is the one table of
/// what exists, so a dtype added there appears here without a change.
template <typename E> std::vector<std::pair<std::string, int>> names() {
  std::vector<std::pair<std::string, int>> out;
  for (int i = 0; i < 64; ++i) {
    const std::string_view n = name(static_cast<E>(i));
    if (n == "?" || n.empty()) break;
    out.emplace_back(std::string(n), i);
  }
  return out;
}

nb::dict choice_dict(const Choice& c) {
  nb::dict d;
  d["key"] = key(c.config);
  d["variant"] = c.config.variant;
  d["match"] = std::string(name(c.match));
  d["problem"] = std::string(name(c.problem));
  d["tuned_shape"] = nb::make_tuple(c.tuned_shape.count, c.tuned_shape.length);
  d["tuned_n"] = c.tuned_n;
  d["median_us"] = c.median_us;
  d["gbps"] = c.gbps;
  d["device_name"] = c.device_name;
  d["note"] = c.note;
  return d;
}

// ---- streams ----------------------------------------------------------------------------------

/// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: special handles that mean "the current context's".
bool special_stream(Ptr s) { return s == 0 || s == 1 || s == 2; }

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

/// GPU `ordinal`'s primary context made current for a scope (the caller's restored after). The
/// Reducer, created first, keeps the context retained for the life of the process.
class InPrimary {
public:
  explicit InPrimary(int ordinal) {
    reducer(ordinal); // the driver and the GPU exist
    RT_CU(cuCtxGetCurrent(&caller_));
    CUdevice dev = 0;
    RT_CU(cuDeviceGet(&dev, ordinal));
    CUcontext primary = nullptr;
    RT_CU(cuDevicePrimaryCtxRetain(&primary, dev));
    RT_CU(cuDevicePrimaryCtxRelease(dev));
    if (primary != caller_) RT_CU(cuCtxSetCurrent(primary));
  }
  ~InPrimary() {
    CUcontext now = nullptr;
    if (cuda::driver().cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != caller_)
      cuda::driver().cuCtxSetCurrent(caller_);
  }
  InPrimary(const InPrimary&) = delete;
  InPrimary& operator=(const InPrimary&) = delete;

private:
  CUcontext caller_ = nullptr;
};

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

// ---- DLPack (the ABI of dlpack.h, versions 0.x and 1.x) ---------------------------------------

struct DLDevice { std::int32_t device_type, device_id; };
struct DLDataType { std::uint8_t code, bits; std::uint16_t lanes; };
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor { DLTensor dl_tensor; void* manager_ctx; void (*deleter)(DLManagedTensor*); };
struct DLPackVersion { std::uint32_t major, minor; };
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  std::uint64_t flags;
  DLTensor dl_tensor;
};

/// What a DLPack capsule describes: (data pointer incl. byte offset, shape, strides in elements or
/// None for compact row-major, (type code, bits, lanes), (device type, device id)). The capsule is
/// read, not consumed: its destructor releases the producer's bookkeeping; the data stays owned by
/// the array it came from.
nb::tuple dlpack_view(nb::handle capsule) {
  PyObject* c = capsule.ptr();
  const DLTensor* t = nullptr;
  if (PyCapsule_IsValid(c, "dltensor")) {
    t = &static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"))->dl_tensor;
  } else if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (v->version.major > 1)
      throw nb::type_error("reduce_tune: DLPack version too new (major version > 1)");
    t = &v->dl_tensor;
  } else {
    throw nb::type_error("reduce_tune: not a DLPack capsule (or one already consumed)");
  }
  nb::list shape, strides;
  for (int i = 0; i < t->ndim; ++i) {
    shape.append(t->shape[i]);
    if (t->strides) strides.append(t->strides[i]);
  }
  const Ptr data = reinterpret_cast<Ptr>(t->data) + Ptr(t->byte_offset);
  return nb::make_tuple(data, nb::tuple(shape), t->strides ? nb::object(nb::tuple(strides)) : nb::none(),
                        nb::make_tuple(t->dtype.code, t->dtype.bits, t->dtype.lanes),
                        nb::make_tuple(t->device.device_type, t->device.device_id));
}

// ---- device memory for results of frameworks without an allocator we know ---------------------

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

// ---- the bench's reference: the C++ call's host time ------------------------------------------

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

/// The NVRTC the reducers use (see nvrtc_path): its path, version and targets; with `arch`
/// ("sm_90"), a small kernel compiled for it too. Needs no driver or GPU.
nb::dict nvrtc_info(const std::string& arch) {
  std::string path;
  {
    std::lock_guard lock(g_reducers_mu);
    path = nvrtc_path();
  }
  nb::dict d;
  nb::gil_scoped_release nogil;
  try {
    const Nvrtc n(path);
    std::string bytes;
    if (!arch.empty())
      bytes = n.compile("extern \"C\" __global__ void rt_probe(float* p) {\n"
                        "  __shared__ float s[32];\n  s[threadIdx.x] = p[threadIdx.x];\n"
                        "  __syncthreads();\n  if (threadIdx.x == 0) atomicAdd(p, s[31]);\n}\n",
                        "rt_probe.cu", n.parse_target(arch)).image;
    nb::gil_scoped_acquire gil;
    d["path"] = n.path();
    d["version"] = nb::make_tuple(n.major(), n.minor());
    d["archs"] = n.archs();
    if (!arch.empty()) d["compiled_bytes"] = bytes.size();
  } catch (const std::runtime_error& e) {
    rethrow_nvrtc(e);
  }
  return d;
}

// ---- the eager torch call's entry -------------------------------------------------------------

/// _ext.hot(kind, device, dtype, op, d_in, a, b, d_out, stream): reduce_async of a = n elements
/// (kind 0; b unused), or reduce_rows (1) or reduce_columns (2) of a dense a x b matrix, results
/// of the op's result dtype (result_dtype). The eager torch call's entry (reduce_tune._torch_fast):
/// a METH_FASTCALL function of nine ints, with no more parsing than their conversion (nanobind's
/// dispatch of the same call costs more). Errors as nanobind gives them: ValueError for InvalidArgument and other
/// std::invalid_argument, RuntimeError for the rest.
PyObject* hot(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 9) {
    PyErr_SetString(PyExc_TypeError, "reduce_tune._ext.hot takes 9 ints: kind, device, dtype, op, "
                                     "d_in, a, b, d_out, stream");
    return nullptr;
  }
  const long long kind = PyLong_AsLongLong(args[0]), dev = PyLong_AsLongLong(args[1]),
                  dtype = PyLong_AsLongLong(args[2]), op = PyLong_AsLongLong(args[3]);
  const unsigned long long in = PyLong_AsUnsignedLongLong(args[4]),
                           a = PyLong_AsUnsignedLongLong(args[5]),
                           b = PyLong_AsUnsignedLongLong(args[6]),
                           out = PyLong_AsUnsignedLongLong(args[7]),
                           stream = PyLong_AsUnsignedLongLong(args[8]);
  if (PyErr_Occurred()) return nullptr; // a conversion failed: TypeError or OverflowError set
  if (kind < 0 || kind > 2 || dev < 0 || dev > 0xffff || dtype < 0 || dtype > 0xff || op < 0 ||
      op > 0xff) {
    PyErr_SetString(PyExc_ValueError, "reduce_tune._ext.hot: kind, device, dtype or op out of range");
    return nullptr;
  }
  try {
    Reducer& r = reducer(int(dev));
    const DType dt = to_dtype(int(dtype));
    const Op o = to_op(int(op));
    if (kind == kArray) {
      const DType rdt = result_dtype(o, dt);
      g_warm.run(WarmCalls::key(kArray, int(dev), int(dtype), int(op), a, 0, int(rdt)), [&] {
        r.reduce_async(dt, o, in_ptr(in), a, out_ptr(out), rdt, to_stream(stream));
      });
    } else if (kind == kRows) {
      g_warm.run(WarmCalls::key(kRows, int(dev), int(dtype), int(op), a, b, 0), [&] {
        r.reduce_rows(dt, o, in_ptr(in), a, b, out_ptr(out), to_stream(stream), b);
      });
    } else {
      g_warm.run(WarmCalls::key(kColumns, int(dev), int(dtype), int(op), a, b, 0), [&] {
        r.reduce_columns(dt, o, in_ptr(in), a, b, out_ptr(out), to_stream(stream), b);
      });
    }
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef g_hot_def = {"hot", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&hot)),
                         METH_FASTCALL,
                         "hot(kind, device, dtype, op, d_in, a, b, d_out, stream): reduce_async "
                         "(kind 0: a = n), reduce_rows (1) or reduce_columns (2) of a dense a x b "
                         "matrix; the eager torch call's entry."};

// ---- user reductions --------------------------------------------------------------------------

/// A Reduction's fields as the package's Reduction passes them: (map, combine, identity, post,
/// accumulator, accumulator_bytes, preamble, inputs (DType values), result (a DType value, -1:
/// the element type), commutative).
using Fields = std::tuple<std::string, std::string, std::string, std::string, std::string,
                          std::size_t, std::string, std::vector<int>, int, bool>;

Reduction to_reduction(const Fields& f) {
  Reduction r;
  std::tie(r.map, r.combine, r.identity, r.post, r.accumulator, r.accumulator_bytes, r.preamble,
           std::ignore, std::ignore, r.commutative) = f;
  for (int d : std::get<7>(f)) r.inputs.push_back(to_dtype(d));
  if (std::get<8>(f) >= 0) r.result = to_dtype(std::get<8>(f));
  return r;
}

void bind_reductions(nb::module_& m) {
  m.def("reduction_name", [](const Fields& f) {
    const Reduction r = to_reduction(f);
    make_user_op(r); // the description's checks: ValueError naming the field
    return r.name();
  }, "fields"_a, "Reduction::name: 'user:' and the stable hash of the description (checked).");
  m.def("reduction_canonical", [](const Fields& f) { return to_reduction(f).canonical(); }, "fields"_a,
        "Reduction::canonical: the text the hash is of.");
  m.def("reduction_text", [](const Fields& f) { return to_text(to_reduction(f)); }, "fields"_a,
        "to_text: the description in the format of `reduce-tune reduction FILE` (which reads it back to "
        "the same name).");
  m.def("reduction_result_dtype", [](const Fields& f, int dtype) {
    return int(to_reduction(f).result_dtype(to_dtype(dtype)));
  }, "fields"_a, "dtype"_a, "The result's DType value for elements of `dtype`; ValueError where it does not take it.");
  m.def("compile_reduction", [](const Fields& f, int dtype, const std::string& arch) {
    const Reduction r = to_reduction(f);
    std::string path;
    {
      std::lock_guard lock(g_reducers_mu);
      path = nvrtc_path();
    }
    nb::gil_scoped_release nogil;
    try {
      compile_reduction(r, to_dtype(dtype), arch, path);
    } catch (const std::runtime_error& e) {
      rethrow_nvrtc(e);
    }
  }, "fields"_a, "dtype"_a, "arch"_a = "",
     "compile_reduction: NVRTC, no GPU; ValueError with NVRTC's log where it does not compile.");
  // problem: a Problem value. array: a = n; rows and columns: a = rows, b = cols, c = row_stride;
  // segments: a = segments, b = elements, offsets.
  m.def("reduce_user", [](int dev, const Fields& f, int dtype, int problem, Ptr in, std::uint64_t a,
                          std::uint64_t b, std::uint64_t c, Ptr offsets, Ptr out, Ptr stream, bool own_tuning) {
    const Reduction r = to_reduction(f);
    Reducer& red = own_tuning ? own_reducer(dev) : reducer(dev);
    nb::gil_scoped_release nogil;
    const DType d = to_dtype(dtype);
    switch (static_cast<Problem>(problem)) {
    case Problem::array: red.reduce_async(r, d, in_ptr(in), a, out_ptr(out), to_stream(stream)); break;
    case Problem::rows: red.reduce_rows(r, d, in_ptr(in), a, b, out_ptr(out), to_stream(stream), c); break;
    case Problem::columns: red.reduce_columns(r, d, in_ptr(in), a, b, out_ptr(out), to_stream(stream), c); break;
    case Problem::segments:
      red.reduce_segments(r, d, in_ptr(in), reinterpret_cast<const std::int64_t*>(offsets), a,
                          out_ptr(out), to_stream(stream), b);
      break;
    default: throw std::invalid_argument("reduce_tune: unknown problem " + std::to_string(problem));
    }
  }, "device"_a, "fields"_a, "dtype"_a, "problem"_a, "d_in"_a, "a"_a, "b"_a, "c"_a, "d_offsets"_a,
     "d_out"_a, "stream"_a, "own_tuning"_a = false,
     "A user reduction's call (Reducer::reduce_async, reduce_rows, reduce_columns, reduce_segments); "
     "own_tuning: on the reducer that never tunes on first use (the package tuned the point).");
  // count, length: as Shape's (results, elements each; the array problem: 1, n).
  m.def("config_for_user", [](int dev, const Fields& f, int dtype, int problem, std::uint64_t count,
                              std::uint64_t length, bool own_tuning) {
    const Reduction r = to_reduction(f);
    Reducer& red = own_tuning ? own_reducer(dev) : reducer(dev);
    Choice c;
    {
      nb::gil_scoped_release nogil;
      c = red.config_for(r, to_dtype(dtype), static_cast<Problem>(problem), Shape{count, length});
    }
    return choice_dict(c);
  }, "device"_a, "fields"_a, "dtype"_a, "problem"_a, "count"_a, "length"_a, "own_tuning"_a = false,
     "Reducer::config_for of a user reduction: the Choice its call of that shape would take, as a "
     "dict; a lookup only (nothing loaded or tuned).");
  m.def("renew_own_reducer", &renew_own_reducer, "device"_a,
        "Replaces the GPU's reducer that never tunes on first use by a new one, which opens the store "
        "again.");
}

} // namespace

NB_MODULE(_ext, m) {
  bind_reductions(m);
  m.doc() = "reduce-tune's C++ runtime (reduce_tune::Reducer), one per GPU. Private: use the "
            "reduce_tune package, which reads the array protocols and calls these.";
  m.attr("version") = RT_VERSION;
  m.attr("nvrtc_soname") = RT_DEFAULT_NVRTC;
  sqlite3_auto_extension(reinterpret_cast<void (*)()>(&count_statements_of));

  m.def("dtypes", &names<DType>, "(name, DType value) of every dtype the library reduces.");
  m.def("ops", &names<Op>, "(name, Op value) of every operator.");
  m.def("result_dtype", [](int dtype, int op) { return int(result_dtype(to_op(op), to_dtype(dtype))); },
        "dtype"_a, "op"_a, "The DType value of the result of `op` over `dtype` (kernels/ops.h).");
  m.def("op_unsupported", [](int dtype, int op) {
    return op_unsupported(to_op(op), to_dtype(dtype)).value_or(std::string());
  }, "dtype"_a, "op"_a, "Why `op` does not reduce `dtype` elements (kernels/ops.h), '' if it does.");
  m.def("set_record", &set_record, "on"_a,
        "Options::record for the reducers: those created from now on, and the existing ones "
        "replaced by new ones with it.");
  m.def("record", [] {
    std::lock_guard lock(g_reducers_mu);
    return std::make_pair(g_record, record_from_env());
  }, "(Options::record as set_record left it, whether $REDUCE_TUNE_RECORD asks for recording).");
  m.def("set_autotune", &set_autotune, "on"_a,
        "Options::autotune for the reducers: those created from now on, and the existing ones "
        "replaced by new ones with it.");
  m.def("autotune", [] {
    std::lock_guard lock(g_reducers_mu);
    return std::make_pair(g_autotune, detail::autotune_from_env());
  }, "(Options::autotune as set_autotune left it, whether $REDUCE_TUNE_AUTOTUNE asks for it).");
  m.def("problems", &names<Problem>, "(name, Problem value) of every problem kind.");
  m.def("item_size", [](int dtype) { return size_of(to_dtype(dtype)); }, "dtype"_a,
        "Bytes per element of a DType value.");
  m.def("set_shipped_path", [](const std::string& path) {
    std::lock_guard lock(g_reducers_mu);
    g_shipped_path = path;
  }, "path"_a,
        "The shipped tuning for reducers created from now on, unless $REDUCE_TUNE_SHIPPED_DB is "
        "set (the package calls it at import with its own copy).");
  m.def("shipped_path", [] {
    std::lock_guard lock(g_reducers_mu);
    return g_shipped_path;
  }, "The path set_shipped_path set ('' if none).");
  m.def("set_nvrtc_candidates", [](std::vector<std::string> paths) {
    std::lock_guard lock(g_reducers_mu);
    g_nvrtc_candidates = std::move(paths);
  }, "paths"_a,
        "NVRTC libraries to open, in order, where the one this build was made against is not "
        "found and $REDUCE_TUNE_NVRTC is unset (the package passes those of nvidia-cuda-nvrtc wheels).");
  m.def("nvrtc_info", &nvrtc_info, "arch"_a = "",
        "The NVRTC the reducers use: {'path', 'version', 'archs'}, with `arch` also "
        "'compiled_bytes' of a small kernel compiled for it. RuntimeError if none loads.");
  m.def("stats", [] {
    nb::dict d;
    d["reducers"] = g_stats.reducers.load();
    d["store_statements"] = g_stats.store_statements.load();
    d["allocations"] = g_stats.allocations.load();
    d["stream_waits"] = g_stats.stream_waits.load();
    d["pointer_queries"] = g_stats.pointer_queries.load() + detail::counters.pointer_queries.load();
    d["cold_calls"] = detail::counters.cold_calls.load();
    return d;
  }, "Counts since import: Reducers created, SQLite statements of the library's connections "
     "(store lookups), allocations and stream waits of the extension, pointer queries of the "
     "extension and the library, and asynchronous calls that took the library's full path (not "
     "the same call again on the same thread on pointers it checked before).");
  m.def("gpu_available", [] {
    std::string why;
    const bool ok = gpu_available(&why);
    return std::make_pair(ok, why);
  }, "(True, '') when a CUDA driver and a GPU are present, else (False, why). Never raises.");
  m.def("device_count", [] { return gpu_available() ? cuda::device_count() : 0; },
        "GPUs the driver sees (0 without a driver).");
  m.def("device_info", [](int ordinal) {
    const cuda::DeviceInfo i = cuda::device_info(ordinal);
    nb::dict d;
    d["index"] = i.ordinal;
    d["name"] = i.name;
    d["uuid"] = i.uuid;
    d["compute_capability"] = nb::make_tuple(i.cc_major, i.cc_minor);
    d["sm_count"] = i.sm_count;
    d["total_memory"] = i.total_mem;
    d["l2_bytes"] = i.l2_bytes;
    d["peak_gbps"] = i.peak_gbps();
    d["driver_version"] = i.driver_version;
    return d;
  }, "ordinal"_a, "Properties of GPU `ordinal` (a dict).");

  m.def("reduce", [](int dev, int dtype, int op, Ptr in, std::uint64_t n, Ptr out, Ptr stream,
                     int result) {
    Reducer& r = reducer(dev);
    const int rdt = result < 0 ? int(result_dtype(to_op(op), to_dtype(dtype))) : result;
    g_warm.run(WarmCalls::key(kArray, dev, dtype, op, n, 0, rdt), [&] {
      r.reduce_async(to_dtype(dtype), to_op(op), in_ptr(in), n, out_ptr(out), to_dtype(rdt),
                     to_stream(stream));
    });
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "n"_a, "d_out"_a, "stream"_a, "result"_a = -1,
     "Reducer::reduce_async: one result at d_out, asynchronous on stream; `result` (a DType "
     "value, -1: the op's result dtype) float32 for a bf16/f16 input writes the unrounded accumulator.");
  m.def("reduce_rows", [](int dev, int dtype, int op, Ptr in, std::uint64_t rows, std::uint64_t cols,
                          Ptr out, Ptr stream, std::uint64_t row_stride) {
    Reducer& r = reducer(dev);
    g_warm.run(WarmCalls::key(kRows, dev, dtype, op, rows, cols, 0), [&] {
      r.reduce_rows(to_dtype(dtype), to_op(op), in_ptr(in), rows, cols, out_ptr(out),
                    to_stream(stream), row_stride);
    });
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "rows"_a, "cols"_a, "d_out"_a, "stream"_a, "row_stride"_a,
     "Reducer::reduce_rows: one result per row.");
  m.def("reduce_columns", [](int dev, int dtype, int op, Ptr in, std::uint64_t rows, std::uint64_t cols,
                             Ptr out, Ptr stream, std::uint64_t row_stride) {
    Reducer& r = reducer(dev);
    g_warm.run(WarmCalls::key(kColumns, dev, dtype, op, rows, cols, 0), [&] {
      r.reduce_columns(to_dtype(dtype), to_op(op), in_ptr(in), rows, cols, out_ptr(out),
                       to_stream(stream), row_stride);
    });
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "rows"_a, "cols"_a, "d_out"_a, "stream"_a, "row_stride"_a,
     "Reducer::reduce_columns: one result per column.");
  // dot: x and y of one dtype and layout (the library's dot calls).
  m.def("dot", [](int dev, int dtype, Ptr x, Ptr y, std::uint64_t n, Ptr out, Ptr stream, int result) {
    Reducer& r = reducer(dev);
    const int rdt = result < 0 ? dtype : result;
    g_warm.run(WarmCalls::key(kArray, dev, dtype, int(Op::dot), n, 0, rdt), [&] {
      r.dot_async(to_dtype(dtype), in_ptr(x), in_ptr(y), n, out_ptr(out), to_dtype(rdt),
                  to_stream(stream));
    });
  }, "device"_a, "dtype"_a, "d_x"_a, "d_y"_a, "n"_a, "d_out"_a, "stream"_a, "result"_a = -1,
     "Reducer::dot_async: the sum of x[i] * y[i] at d_out; `result` as reduce's.");
  m.def("dot_rows", [](int dev, int dtype, Ptr x, Ptr y, std::uint64_t rows, std::uint64_t cols,
                       Ptr out, Ptr stream, std::uint64_t row_stride) {
    Reducer& r = reducer(dev);
    g_warm.run(WarmCalls::key(kRows, dev, dtype, int(Op::dot), rows, cols, 0), [&] {
      r.dot_rows(to_dtype(dtype), in_ptr(x), in_ptr(y), rows, cols, out_ptr(out), to_stream(stream),
                 row_stride);
    });
  }, "device"_a, "dtype"_a, "d_x"_a, "d_y"_a, "rows"_a, "cols"_a, "d_out"_a, "stream"_a,
     "row_stride"_a, "Reducer::dot_rows: one dot product per row.");
  m.def("dot_columns", [](int dev, int dtype, Ptr x, Ptr y, std::uint64_t rows, std::uint64_t cols,
                          Ptr out, Ptr stream, std::uint64_t row_stride) {
    Reducer& r = reducer(dev);
    g_warm.run(WarmCalls::key(kColumns, dev, dtype, int(Op::dot), rows, cols, 0), [&] {
      r.dot_columns(to_dtype(dtype), in_ptr(x), in_ptr(y), rows, cols, out_ptr(out),
                    to_stream(stream), row_stride);
    });
  }, "device"_a, "dtype"_a, "d_x"_a, "d_y"_a, "rows"_a, "cols"_a, "d_out"_a, "stream"_a,
     "row_stride"_a, "Reducer::dot_columns: one dot product per column.");
  PyObject* hot_function = PyCFunction_NewEx(&g_hot_def, nullptr, nullptr);
  if (!hot_function) throw nb::python_error();
  m.attr("hot") = nb::steal(hot_function);
  m.def("reduce_segments", [](int dev, int dtype, int op, Ptr in, Ptr offsets, std::uint64_t segments,
                              Ptr out, Ptr stream, std::uint64_t elements) {
    Reducer& r = reducer(dev);
    g_warm.run(WarmCalls::key(kSegments, dev, dtype, op, segments, elements, 0), [&] {
      r.reduce_segments(to_dtype(dtype), to_op(op), in_ptr(in),
                        reinterpret_cast<const std::int64_t*>(offsets), segments, out_ptr(out),
                        to_stream(stream), elements);
    });
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "d_offsets"_a, "segments"_a, "d_out"_a, "stream"_a,
     "elements"_a,
     "Reducer::reduce_segments: one result per segment of int64 offsets.");
  m.def("config_for", [](int dev, int dtype, int op, int problem, std::uint64_t count,
                         std::uint64_t length) {
    Reducer& r = reducer(dev);
    Choice c;
    {
      nb::gil_scoped_release nogil;
      const auto p = static_cast<Problem>(problem);
      c = p == Problem::array ? r.async_config_for(to_dtype(dtype), to_op(op), length)
                              : r.config_for(to_dtype(dtype), to_op(op), p, Shape{count, length});
    }
    return choice_dict(c);
  }, "device"_a, "dtype"_a, "op"_a, "problem"_a, "count"_a, "length"_a,
     "The Choice the calls use for a problem's shape, as a dict.");
  m.def("device_name", [](int dev) { return reducer(dev).device_name(); }, "device"_a);

  m.def("pointer_info", &pointer_info, "ptr"_a,
        "(memory type or 0 if unknown to CUDA, device ordinal or -1, managed) of a pointer.");
  m.def("stream_on_device", &stream_on_device, "device"_a, "stream"_a,
        "Whether a stream handle belongs to the GPU's primary context.");
  m.def("stream_wait", [](int dev, Ptr consumer, Ptr producer) {
    nb::gil_scoped_release nogil;
    stream_wait(dev, consumer, producer);
  }, "device"_a, "consumer"_a, "producer"_a, "Orders consumer after producer's work so far.");
  m.def("stream_capturing", [](int dev, Ptr stream) {
    if (stream == 0 || stream == 1) return false; // the legacy default stream is never captured
    if (stream == 2) { // the per-thread default stream: the current context's
      const InPrimary ctx(dev);
      return capture::state(to_stream(stream)).active;
    }
    reducer(dev); // the driver loaded; a stream handle needs no current context
    return capture::state(to_stream(stream)).active;
  }, "device"_a, "stream"_a,
     "Whether the stream (of the GPU's primary context) is being captured into a CUDA graph; "
     "RuntimeError where its capture was invalidated.");
  m.def("dlpack_view", &dlpack_view, "capsule"_a,
        "(ptr, shape, strides or None, (code, bits, lanes), (device type, id)) of a DLPack capsule.");
  m.def("alloc", &alloc, "device"_a, "nbytes"_a, "Device memory (cuMemAlloc) on the GPU.");
  m.def("free", &release, "device"_a, "ptr"_a, "Frees alloc's memory.");
  m.def("copy_to_host", &copy_to_host, "device"_a, "src"_a, "dst"_a, "stream"_a,
        "Copies len(dst) bytes from device memory after stream's work, and waits.");
  m.def("time_queries", [](int dev, Ptr ptr, Ptr stream, int calls) {
    return time_queries(dev, ptr, stream, calls);
  }, "device"_a, "ptr"_a, "stream"_a, "calls"_a,
     "Host microseconds per driver query of the call path: {'pointer_query_us', "
     "'capture_query_us', 'context_query_us'}.");
  m.def("time_calls", [](int dev, int dtype, int op, Ptr in, std::uint64_t n, Ptr out, Ptr stream, int calls) {
    nb::gil_scoped_release nogil;
    return time_calls(dev, dtype, op, in, n, out, stream, calls);
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "n"_a, "d_out"_a, "stream"_a, "calls"_a,
     "(enqueue, with the final sync) host microseconds per C++ reduce_async call, back to back.");
  m.def("time_calls_idle", [](int dev, int dtype, int op, Ptr in, std::uint64_t n, Ptr out, Ptr stream,
                              int calls) {
    nb::gil_scoped_release nogil;
    return time_calls_idle(dev, dtype, op, in, n, out, stream, calls);
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "n"_a, "d_out"_a, "stream"_a, "calls"_a,
     "The median host microseconds of one C++ reduce_async call on an idle stream.");
}
