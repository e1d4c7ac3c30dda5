// User reductions (reduce_tune::Reduction) from the package's Reduction: their names, text and
// compile check, their calls and lookups, on either reducer of a GPU (ext.h).
#include "python/src/ext.h"

#include "kernels/user_op.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>

using namespace nb::literals;

namespace reduce_tune::pyext {

namespace {

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

} // namespace

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
    const std::string path = reducers_nvrtc_path();
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

} // namespace reduce_tune::pyext
