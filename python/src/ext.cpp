// reduce_tune._ext: the thin nanobind layer over reduce_tune::Reducer. Pointers and streams are
// Python ints; the Python package (python/reduce_tune) reads the array protocols and calls these.
// One Reducer per GPU, created on first use and kept for the life of the process (never destroyed:
// at interpreter exit the CUDA driver may already be shutting down).
#include "reduce_tune/reducer.h"

#include "kernels/driver.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;
using namespace reduce_tune;

namespace {

using Ptr = std::uintptr_t;

// ---- reducers ---------------------------------------------------------------------------------

std::mutex g_reducers_mu;
std::vector<Reducer*> g_reducers; // index: ordinal; leaked on purpose (see above)
std::string g_shipped_path;       // the package's copy of the shipped tuning (set_shipped_path)

/// The Reducer of GPU `ordinal`, created on first use. Throws RuntimeError (no driver or GPU)
/// or ValueError (no such GPU).
Reducer& reducer(int ordinal) {
  std::lock_guard lock(g_reducers_mu);
  if (ordinal < 0 || std::size_t(ordinal) >= g_reducers.size() || !g_reducers[ordinal]) {
    std::string why;
    if (!gpu_available(&why)) throw std::runtime_error("reduce_tune: " + why);
    const int count = cuda::device_count();
    if (ordinal < 0 || ordinal >= count)
      throw std::invalid_argument("reduce_tune: no GPU " + std::to_string(ordinal) + " (this machine has " +
                                  std::to_string(count) + ")");
    if (g_reducers.size() < std::size_t(count)) g_reducers.resize(count, nullptr);
    if (!g_reducers[ordinal]) {
      Options o;
      o.shipped_path = g_shipped_path;
      g_reducers[ordinal] = new Reducer(ordinal, o);
    }
  }
  return *g_reducers[ordinal];
}

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

} // namespace

NB_MODULE(_ext, m) {
  m.doc() = "reduce-tune's C++ runtime (reduce_tune::Reducer), one per GPU. Private: use the "
            "reduce_tune package, which reads the array protocols and calls these.";
  m.attr("version") = RT_VERSION;

  m.def("dtypes", &names<DType>, "(name, DType value) of every dtype the library reduces.");
  m.def("ops", &names<Op>, "(name, Op value) of every operator.");
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
    nb::gil_scoped_release nogil;
    r.reduce_async(to_dtype(dtype), to_op(op), in_ptr(in), n, out_ptr(out),
                   to_dtype(result < 0 ? dtype : result), to_stream(stream));
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "n"_a, "d_out"_a, "stream"_a, "result"_a = -1,
     "Reducer::reduce_async: one result at d_out, asynchronous on stream; `result` (a DType "
     "value, -1: the input's) float32 for a bf16/f16 input writes the unrounded accumulator.");
  m.def("reduce_rows", [](int dev, int dtype, int op, Ptr in, std::uint64_t rows, std::uint64_t cols,
                          Ptr out, Ptr stream, std::uint64_t row_stride) {
    Reducer& r = reducer(dev);
    nb::gil_scoped_release nogil;
    r.reduce_rows(to_dtype(dtype), to_op(op), in_ptr(in), rows, cols, out_ptr(out), to_stream(stream),
                  row_stride);
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "rows"_a, "cols"_a, "d_out"_a, "stream"_a, "row_stride"_a,
     "Reducer::reduce_rows: one result per row.");
  m.def("reduce_columns", [](int dev, int dtype, int op, Ptr in, std::uint64_t rows, std::uint64_t cols,
                             Ptr out, Ptr stream, std::uint64_t row_stride) {
    Reducer& r = reducer(dev);
    nb::gil_scoped_release nogil;
    r.reduce_columns(to_dtype(dtype), to_op(op), in_ptr(in), rows, cols, out_ptr(out),
                     to_stream(stream), row_stride);
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "rows"_a, "cols"_a, "d_out"_a, "stream"_a, "row_stride"_a,
     "Reducer::reduce_columns: one result per column.");
  m.def("reduce_segments", [](int dev, int dtype, int op, Ptr in, Ptr offsets, std::uint64_t segments,
                              Ptr out, Ptr stream, std::uint64_t elements) {
    Reducer& r = reducer(dev);
    nb::gil_scoped_release nogil;
    r.reduce_segments(to_dtype(dtype), to_op(op), in_ptr(in),
                      reinterpret_cast<const std::int64_t*>(offsets), segments, out_ptr(out),
                      to_stream(stream), elements);
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
  m.def("dlpack_view", &dlpack_view, "capsule"_a,
        "(ptr, shape, strides or None, (code, bits, lanes), (device type, id)) of a DLPack capsule.");
  m.def("alloc", &alloc, "device"_a, "nbytes"_a, "Device memory (cuMemAlloc) on the GPU.");
  m.def("free", &release, "device"_a, "ptr"_a, "Frees alloc's memory.");
  m.def("copy_to_host", &copy_to_host, "device"_a, "src"_a, "dst"_a, "stream"_a,
        "Copies len(dst) bytes from device memory after stream's work, and waits.");
  m.def("time_calls", [](int dev, int dtype, int op, Ptr in, std::uint64_t n, Ptr out, Ptr stream, int calls) {
    nb::gil_scoped_release nogil;
    return time_calls(dev, dtype, op, in, n, out, stream, calls);
  }, "device"_a, "dtype"_a, "op"_a, "d_in"_a, "n"_a, "d_out"_a, "stream"_a, "calls"_a,
     "(enqueue, with the final sync) host microseconds per C++ reduce_async call, back to back.");
}
