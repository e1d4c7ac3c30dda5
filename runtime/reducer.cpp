// reduce-tune: the runtime library. A configuration is looked up once per (dtype, op, size
// bucket) and compiled once (through the disk cache); calls then launch it through the tuner's
// own path (kernels/runner.h), so what was measured is what runs.
#include "runtime/reducer_impl.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

namespace reduce_tune {

bool gpu_available(std::string* why) { return cuda::available(why); }

namespace detail {
namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

} // namespace

void check_problem(DType dtype, Op op) {
  if (static_cast<unsigned>(dtype) >= kDTypes)
    throw InvalidArgument("reduce_tune: unsupported dtype (enum value " +
                          std::to_string(static_cast<int>(dtype)) +
                          "): int32, uint32, int64, float32, float64, bfloat16 and float16 are supported");
  if (static_cast<unsigned>(op) >= kOps)
    throw InvalidArgument("reduce_tune: unsupported op (enum value " +
                          std::to_string(static_cast<int>(op)) +
                          "): sum, min and max are supported");
}

std::optional<std::uint64_t> check_pointer(const char* what, const void* p, std::uint64_t count,
                                           DType dtype, int ordinal) {
  if (!p) throw InvalidArgument(std::string("reduce_tune: ") + what + " is null");
  const CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(p);
  const auto bad = [&](const std::string& problem) {
    return InvalidArgument(std::string("reduce_tune: ") + what + " (" + hex(ptr) + ") " + problem);
  };
  const std::size_t es = size_of(dtype);
  if (ptr % es)
    throw bad("is not aligned to its " + std::to_string(es) + "-byte " + std::string(name(dtype)) +
              " elements");
  // One driver call for everything: unlike cuPointerGetAttribute, cuPointerGetAttributes answers
  // for a pointer CUDA does not know with zeroed values instead of an error.
  unsigned type = 0;
  unsigned long long managed = 0; // a boolean of unspecified width: read into a zeroed word
  int device = -1;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* values[] = {&type, &managed, &device, &start, &size};
  RT_CU(cuPointerGetAttributes(5, attrs, values, ptr));
  if (type == 0) throw bad("is not memory CUDA knows (a host pointer?): pass device memory");
  // Managed memory may report either memory type and is accessible from any device.
  if (!managed) {
    if (type != CU_MEMORYTYPE_DEVICE) throw bad("is host memory (page-locked), not device memory");
    if (device != ordinal)
      throw bad("is memory of GPU " + std::to_string(device) + "; this reducer runs on GPU " +
                std::to_string(ordinal));
  }
  // The allocation's extent, where the driver knows it.
  if (size == 0 || ptr < start || ptr - start >= size) return std::nullopt;
  const std::uint64_t room = (size - (ptr - start)) / es;
  if (count > room)
    throw bad("has room for " + std::to_string(room) + " " + std::string(name(dtype)) +
              " (in an allocation of " + std::to_string(size) + " bytes at " + hex(start) +
              "), fewer than n = " + std::to_string(count));
  return room;
}

CompileCache open_cache() {
  try {
    return CompileCache(CompileCache::default_dir());
  } catch (const std::filesystem::filesystem_error&) {
    return CompileCache({});
  }
}

Result result_kind(DType dtype, DType result) {
  check_problem(result, Op::sum);
  if (result == dtype) return Result::device;
  if (is_half(dtype) && result == DType::f32) return Result::wide;
  throw InvalidArgument("reduce_tune: a " + std::string(name(dtype)) + " reduction cannot write a " +
                        std::string(name(result)) + " result: " +
                        (is_half(dtype) ? "its result is " + std::string(name(dtype)) + " or float32"
                                        : "its result has the element type"));
}

void refuse_capture(const capture::State& cap) {
  if (cap.active)
    throw InvalidArgument("reduce_tune: sum, min, max and reduce wait for their result, which a "
                          "stream being captured into a CUDA graph cannot do: use reduce_async");
}

} // namespace detail

Reducer::Reducer(int ordinal, Options options) {
  const RestoreContext restore; // the primary context is made current while setting up
  const capture::Relaxed relaxed;
  impl_ = std::make_unique<Impl>(ordinal, std::move(options));
}

Reducer::~Reducer() {
  if (!impl_) return;
  // Memory, events and modules are released in the reducer's context, after any asynchronous
  // reduction still using them; errors cannot be reported from here.
  CUcontext caller = nullptr;
  driver().cuCtxGetCurrent(&caller);
  driver().cuCtxSetCurrent(impl_->ctx);
  try {
    const capture::Relaxed relaxed; // frees must not invalidate another thread's capture
    for (const auto& l : impl_->pool)
      if (l->pending) driver().cuEventSynchronize(l->done.get());
    impl_->home->close(); // graphs that outlive the reducer free their workspaces themselves
    impl_.reset();
  } catch (...) {
  }
  driver().cuCtxSetCurrent(caller);
}

Choice Reducer::config_for(DType dtype, Op op, std::uint64_t n) const {
  return impl_->choice_for(dtype, op, n, Result::host);
}

Choice Reducer::async_config_for(DType dtype, Op op, std::uint64_t n) const {
  return impl_->choice_for(dtype, op, n, Result::device);
}

Choice Reducer::async_config_for(DType dtype, Op op, std::uint64_t n, DType result) const {
  return impl_->choice_for(dtype, op, n, result_kind(dtype, result));
}

std::string Reducer::device_name() const { return impl_->info.name; }

void Reducer::reduce_sync(DType dtype, Op op, const void* d_in, std::uint64_t n, void* h_out,
                          CUstream stream) {
  check_problem(dtype, op);
  const std::size_t es = size_of(dtype);
  if (n == 0) {
    const std::uint64_t bits = identity(dtype, op).bits;
    std::memcpy(h_out, &bits, es);
    return;
  }
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  const capture::Relaxed relaxed;
  refuse_capture(capture::state(stream));
  check_pointer("d_in", d_in, n, dtype, impl_->context.ordinal());
  const Entry& e = impl_->ready_entry(dtype, op, n, Result::host);
  const LaunchPlan p = plan(e.kernel.config, impl_->target(dtype, op), n);
  const CUdeviceptr in = reinterpret_cast<CUdeviceptr>(d_in);
  Impl::Borrowed lease(*impl_, stream);
  const Scalar r = lease.run(stream, [&](Lease& l) {
    l.ws.reserve(p, dtype, n, stream);
    prepare(e.kernel, p, in, n, l.ws, stream);
    enqueue(e.kernel, p, in, n, l.ws, stream);
    const Scalar r = result(e.kernel, p, l.ws, stream); // synchronises the stream
    l.pending = false;
    return r;
  });
  std::memcpy(h_out, &r.bits, es);
}

void Reducer::reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                           CUstream stream) {
  reduce_async(dtype, op, d_in, n, d_out, dtype, stream); // the element type: Result::device
}

void Reducer::reduce_async(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out,
                           DType result, CUstream stream) {
  check_problem(dtype, op);
  const Result r = result_kind(dtype, result);
  const RestoreContext restore;
  restore.enter(impl_->ctx);
  impl_->reduce_array_async(dtype, op, d_in, n, d_out, stream, r);
}

void Reducer::Impl::reduce_array_async(DType dtype, Op op, const void* d_in, std::uint64_t n,
                                       void* d_out, CUstream stream, Result result) {
  const capture::Relaxed relaxed;
  const capture::State cap = capture::state(stream);
  const int ordinal = context.ordinal();
  const DType out_dtype = result == Result::wide ? accumulator_of(dtype) : dtype;
  check_pointer("d_out", d_out, 1, out_dtype, ordinal);
  const CUdeviceptr out = reinterpret_cast<CUdeviceptr>(d_out);
  if (n == 0) {
    set_identity(out, out_dtype, op, stream); // a memset, not a launch (a graph node when captured)
    return;
  }
  check_pointer("d_in", d_in, n, dtype, ordinal);
  const Entry& e = ready_entry(dtype, op, n, result);
  const LaunchPlan p = plan(e.kernel.config, target(dtype, op), n);
  const CUdeviceptr in = reinterpret_cast<CUdeviceptr>(d_in);
  if (cap.active) {
    captured(
        cap.graph, e.kernel,
        [&](Workspace& ws, CUstream zero_on) { ws.reserve(p, dtype, n, zero_on); },
        [&](const Kernel& k, Workspace& ws) {
          prepare(k, p, in, n, ws, stream);
          enqueue(k, p, in, n, ws, stream, out);
        });
    return;
  }
  Borrowed lease(*this, stream);
  lease.run(stream, [&](Lease& l) {
    l.ws.reserve(p, dtype, n, stream);
    prepare(e.kernel, p, in, n, l.ws, stream);
    enqueue(e.kernel, p, in, n, l.ws, stream, out); // the finish writes to d_out itself
    l.done.record(stream);
    l.stream = stream;
    l.pending = true;
  });
}

} // namespace reduce_tune
