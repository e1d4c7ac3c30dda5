// The eager torch call's entries, _ext.hot and _ext.hot_pooled (METH_FASTCALL functions of nine
// ints, the second with its result from a ResultPool: results.cpp), and the table of warm calls
// that they and the bindings share (ext.h).
#include "python/src/ext.h"

#include "kernels/ops.h"

namespace reduce_tune::pyext {

WarmCalls g_warm;

namespace {

/// The arguments _ext.hot and _ext.hot_pooled share (all but the 8th, the result or its pool),
/// converted; a failed conversion leaves the Python error set (PyErr_Occurred).
struct HotArgs {
  long long kind, dev, dtype, op;
  unsigned long long in, a, b, stream;
  explicit HotArgs(PyObject* const* args)
      : kind(PyLong_AsLongLong(args[0])), dev(PyLong_AsLongLong(args[1])),
        dtype(PyLong_AsLongLong(args[2])), op(PyLong_AsLongLong(args[3])),
        in(PyLong_AsUnsignedLongLong(args[4])), a(PyLong_AsUnsignedLongLong(args[5])),
        b(PyLong_AsUnsignedLongLong(args[6])), stream(PyLong_AsUnsignedLongLong(args[8])) {}
  /// Whether kind, device, dtype and op are in range; else ValueError is set.
  bool in_range() const {
    if (kind >= 0 && kind <= 2 && dev >= 0 && dev <= 0xffff && dtype >= 0 && dtype <= 0xff &&
        op >= 0 && op <= 0xff)
      return true;
    PyErr_SetString(PyExc_ValueError, "reduce_tune._ext.hot: kind, device, dtype or op out of range");
    return false;
  }
};

/// The library call of _ext.hot's arguments (in range) into `out`: Py_None, or nullptr with the
/// Python error set.
PyObject* run_hot(const HotArgs& h, unsigned long long out) {
  const int kind = int(h.kind), dev = int(h.dev), dtype = int(h.dtype), op = int(h.op);
  const unsigned long long in = h.in, a = h.a, b = h.b, stream = h.stream;
  try {
    Reducer& r = reducer(dev);
    const DType dt = to_dtype(dtype);
    const Op o = to_op(op);
    if (kind == kArray) {
      const DType rdt = result_dtype(o, dt);
      g_warm.run(WarmCalls::key(kArray, dev, dtype, op, a, 0, int(rdt)), [&] {
        r.reduce_async(dt, o, in_ptr(in), a, out_ptr(out), rdt, to_stream(stream));
      });
    } else if (kind == kRows) {
      g_warm.run(WarmCalls::key(kRows, dev, dtype, op, a, b, 0), [&] {
        r.reduce_rows(dt, o, in_ptr(in), a, b, out_ptr(out), to_stream(stream), b);
      });
    } else {
      g_warm.run(WarmCalls::key(kColumns, dev, dtype, op, a, b, 0), [&] {
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

/// _ext.hot(kind, device, dtype, op, d_in, a, b, d_out, stream): reduce_async of a = n elements
/// (kind 0; b unused), or reduce_rows (1) or reduce_columns (2) of a dense a x b matrix, results
/// of the op's result dtype (result_dtype). The eager torch call's entry (reduce_tune._torch_fast)
/// where it makes the result itself: a METH_FASTCALL function of nine ints, with no more parsing
/// than their conversion (nanobind's dispatch of the same call costs more). Errors as nanobind
/// gives them: ValueError for InvalidArgument and other std::invalid_argument, RuntimeError for
/// the rest.
PyObject* hot(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 9) {
    PyErr_SetString(PyExc_TypeError, "reduce_tune._ext.hot takes 9 ints: kind, device, dtype, op, "
                                     "d_in, a, b, d_out, stream");
    return nullptr;
  }
  const HotArgs h(args);
  const unsigned long long out = PyLong_AsUnsignedLongLong(args[7]);
  if (PyErr_Occurred()) return nullptr; // a conversion failed: TypeError or OverflowError set
  if (!h.in_range()) return nullptr;
  return run_hot(h, out);
}

/// _ext.hot_pooled(kind, device, dtype, op, d_in, a, b, pool, stream): the call of hot with its
/// result a new tensor of `pool` (a ResultPool), returned; None, with nothing done, while `stream`
/// is being captured into a CUDA graph (a result made then must come from the graph's memory pool:
/// the caller makes it with torch and calls hot).
PyObject* hot_pooled(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 9) {
    PyErr_SetString(PyExc_TypeError, "reduce_tune._ext.hot_pooled takes kind, device, dtype, op, "
                                     "d_in, a, b, pool, stream");
    return nullptr;
  }
  if (!nb::isinstance<ResultPool>(nb::handle(args[7]))) {
    PyErr_SetString(PyExc_TypeError, "reduce_tune._ext.hot_pooled: pool must be a ResultPool");
    return nullptr;
  }
  ResultPool& pool = *nb::inst_ptr<ResultPool>(nb::handle(args[7]));
  const HotArgs h(args);
  if (PyErr_Occurred() || !h.in_range()) return nullptr;
  try {
    if (stream_capturing(int(h.dev), Ptr(h.stream))) Py_RETURN_NONE;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  std::uintptr_t out = 0;
  PyObject* result = pool.take(h.stream, &out);
  if (!result) return nullptr;
  PyObject* done = run_hot(h, out);
  if (!done) {
    Py_DECREF(result);
    return nullptr;
  }
  Py_DECREF(done);
  return result;
}

PyMethodDef g_hot_pooled_def = {
    "hot_pooled", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&hot_pooled)),
    METH_FASTCALL,
    "hot_pooled(kind, device, dtype, op, d_in, a, b, pool, stream): hot's call into a new result "
    "of the ResultPool `pool`, returned; None while the stream is being captured."};

PyMethodDef g_hot_def = {"hot", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&hot)),
                         METH_FASTCALL,
                         "hot(kind, device, dtype, op, d_in, a, b, d_out, stream): reduce_async "
                         "(kind 0: a = n), reduce_rows (1) or reduce_columns (2) of a dense a x b "
                         "matrix; the eager torch call's entry."};

} // namespace

void add_hot(nb::module_& m) {
  PyObject* hot_function = PyCFunction_NewEx(&g_hot_def, nullptr, nullptr);
  if (!hot_function) throw nb::python_error();
  m.attr("hot") = nb::steal(hot_function);
  PyObject* pooled = PyCFunction_NewEx(&g_hot_pooled_def, nullptr, nullptr);
  if (!pooled) throw nb::python_error();
  m.attr("hot_pooled") = nb::steal(pooled);
}

} // namespace reduce_tune::pyext
