// reduce_tune._ext: the thin nanobind layer over reduce_tune::Reducer. Pointers and streams are
// Python ints; the Python package (python/reduce_tune) reads the array protocols and calls these.
// This file: the module, its bindings and the counters stats() reports. The reducers and their
// NVRTC: reducers.cpp; the eager torch call's entry: hot.cpp; user reductions: user.cpp; streams,
// pointers and memory: streams.cpp; DLPack: dlpack.cpp; the bench's timings: timing.cpp.
#include "python/src/ext.h"

#include "kernels/ops.h"
#include "runtime/counters.h"

#include <sqlite3.h>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace nb::literals;

namespace reduce_tune::pyext {

Stats g_stats;

namespace {

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

} // namespace

void count_store_statements() {
  sqlite3_auto_extension(reinterpret_cast<void (*)()>(&count_statements_of));
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

} // namespace reduce_tune::pyext

using namespace reduce_tune;
using namespace reduce_tune::pyext;

namespace {

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

} // namespace

NB_MODULE(_ext, m) {
  bind_reductions(m);
  m.doc() = "reduce-tune's C++ runtime (reduce_tune::Reducer), one per GPU. Private: use the "
            "reduce_tune package, which reads the array protocols and calls these.";
  m.attr("version") = RT_VERSION;
  m.attr("nvrtc_soname") = RT_DEFAULT_NVRTC;
  count_store_statements();

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
  m.def("record", &record_setting,
        "(Options::record as set_record left it, whether $REDUCE_TUNE_RECORD asks for recording).");
  m.def("set_autotune", &set_autotune, "on"_a,
        "Options::autotune for the reducers: those created from now on, and the existing ones "
        "replaced by new ones with it.");
  m.def("autotune", &autotune_setting,
        "(Options::autotune as set_autotune left it, whether $REDUCE_TUNE_AUTOTUNE asks for it).");
  m.def("problems", &names<Problem>, "(name, Problem value) of every problem kind.");
  m.def("item_size", [](int dtype) { return size_of(to_dtype(dtype)); }, "dtype"_a,
        "Bytes per element of a DType value.");
  m.def("set_shipped_path", &set_shipped_path, "path"_a,
        "The shipped tuning for reducers created from now on, unless $REDUCE_TUNE_SHIPPED_DB is "
        "set (the package calls it at import with its own copy).");
  m.def("shipped_path", &shipped_path, "The path set_shipped_path set ('' if none).");
  m.def("set_nvrtc_candidates", &set_nvrtc_candidates, "paths"_a,
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
    d["result_blocks"] = g_stats.result_blocks.load();
    return d;
  }, "Counts since import: Reducers created, SQLite statements of the library's connections "
     "(store lookups), allocations and stream waits of the extension, pointer queries of the "
     "extension and the library, asynchronous calls that took the library's full path (not "
     "the same call again on the same thread on pointers it checked before), and blocks of "
     "results the eager torch call had torch allocate (ResultPool).");
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
  add_hot(m);
  bind_results(m);
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
  m.def("stream_capturing", &stream_capturing, "device"_a, "stream"_a,
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
