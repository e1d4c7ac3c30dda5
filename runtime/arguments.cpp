// reduce-tune: every check the Reducer makes of its arguments, and the Call they become.
#include "runtime/arguments.h"

#include "kernels/driver.h"
#include "runtime/counters.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

namespace reduce_tune::detail {
namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

/// An allocation of fewer elements stands in for a call's element count. The count-only lookup
/// takes a count's tuning at the middle of its totals from 2^20 up (2^20 and 2^24: 2^24, the tie's
/// larger), and an allocation of 2^22 elements or more finds that one too; a smaller one says the
/// call is smaller than that lookup assumes.
constexpr std::uint64_t kExtentStandsInBelow = std::uint64_t(1) << 22;

} // namespace

void check_problem(DType dtype, Op op) {
  if (static_cast<unsigned>(dtype) >= kDTypes)
    throw InvalidArgument("reduce_tune: unsupported dtype (enum value " +
                          std::to_string(static_cast<int>(dtype)) +
                          "): int32, uint32, int64, float32, float64, bfloat16 and float16 are supported");
  if (static_cast<unsigned>(op) >= kOps)
    throw InvalidArgument("reduce_tune: unsupported op (enum value " +
                          std::to_string(static_cast<int>(op)) +
                          "): sum, min, max, mean, sumsq, norm1, norm2, count_nonzero, any, all, "
                          "argmax, argmin, logsumexp, var, std, var_population, "
                          "std_population and dot are supported");
  if (auto why = op_unsupported(op, dtype)) throw InvalidArgument("reduce_tune: " + *why);
}

void check_inputs(Op op, bool two) {
  if (describe(op).traits.two_inputs == two) return;
  throw InvalidArgument(two ? "reduce_tune: the dot calls compute dot; " + std::string(name(op)) +
                                  " reads one input (reduce_async, reduce_rows, ...)"
                            : "reduce_tune: " + std::string(name(op)) +
                                  " reads two inputs: use the dot calls (dot, dot_async, dot_rows, "
                                  "dot_columns, dot_segments)");
}

void check_not_empty(Op op) {
  if (describe(op).traits.empty_error)
    throw InvalidArgument("reduce_tune: " + std::string(name(op)) +
                          " of no elements: the op has no identity (as torch's)");
}

void check_problem(Problem problem) {
  if (static_cast<unsigned>(problem) >= kProblems)
    throw InvalidArgument("reduce_tune: unsupported problem (enum value " +
                          std::to_string(static_cast<int>(problem)) +
                          "): array, rows, columns and segments are supported");
}

std::optional<std::uint64_t> judge_pointer(const char* what, CUdeviceptr ptr, std::uint64_t count,
                                           DType dtype, int ordinal, bool capturing,
                                           const PointerFacts& f) {
  const auto bad = [&](const std::string& problem) {
    return InvalidArgument(std::string("reduce_tune: ") + what + " (" + hex(ptr) + ") " + problem);
  };
  if (f.type == 0) {
    if (capturing) return std::nullopt; // a stream-ordered allocation of the capture (see header)
    throw bad("is not memory CUDA knows (a host pointer?): pass device memory");
  }
  // Managed memory may report either memory type and is accessible from any device.
  if (!f.managed) {
    if (f.type != CU_MEMORYTYPE_DEVICE) throw bad("is host memory (page-locked), not device memory");
    if (f.device != ordinal)
      throw bad("is memory of GPU " + std::to_string(f.device) + "; this reducer runs on GPU " +
                std::to_string(ordinal));
  }
  // The allocation's extent, where the driver knows it.
  if (f.size == 0 || ptr < f.start || ptr - f.start >= f.size) return std::nullopt;
  const std::size_t es = size_of(dtype);
  const std::uint64_t room = (f.size - (ptr - f.start)) / es;
  if (count > room)
    throw bad("has room for " + std::to_string(room) + " " + std::string(name(dtype)) +
              " (in an allocation of " + std::to_string(f.size) + " bytes at " + hex(f.start) +
              "), fewer than n = " + std::to_string(count));
  return room;
}

namespace {

/// The allocations of device memory that check_pointer accepted on this thread, most recent
/// first: a call whose pointers lie in them asks the driver nothing (checked_before). Constant-
/// initialised and trivially destructible: no guard on access, nothing to run at thread exit.
struct Checked {
  struct Range {
    CUdeviceptr start = 0, end = 0; // [start, end); end 0: empty
    int ordinal = -1;
  };
  static constexpr int kRanges = 8;
  Range ranges[kRanges] = {};
};
constinit thread_local Checked t_checked;

} // namespace

void remember_checked(CUdeviceptr start, std::size_t size, int ordinal) {
  const CUdeviceptr end = start + size;
  Checked::Range kept[Checked::kRanges];
  int k = 0;
  kept[k++] = {start, end, ordinal};
  // The others, less one, without any that overlaps the new range (its addresses say otherwise
  // now).
  for (const Checked::Range& r : t_checked.ranges)
    if (k < Checked::kRanges && r.end && (r.end <= start || r.start >= end)) kept[k++] = r;
  for (int i = 0; i < Checked::kRanges; ++i)
    t_checked.ranges[i] = i < k ? kept[i] : Checked::Range{};
}

bool checked_before(const void* p, std::uint64_t count, DType dtype, int ordinal) {
  const CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(p);
  const std::size_t es = size_of(dtype);
  if (!ptr || ptr % es || count > (~CUdeviceptr(0) - ptr) / es) return false;
  const CUdeviceptr end = ptr + count * es;
  for (const Checked::Range& r : t_checked.ranges)
    if (r.ordinal == ordinal && ptr >= r.start && end <= r.end) return true;
  return false;
}

std::optional<std::uint64_t> check_pointer(const char* what, const void* p, std::uint64_t count,
                                           DType dtype, int ordinal, bool capturing) {
  if (!p) throw InvalidArgument(std::string("reduce_tune: ") + what + " is null");
  const CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(p);
  const std::size_t es = size_of(dtype);
  if (ptr % es)
    throw InvalidArgument(std::string("reduce_tune: ") + what + " (" + hex(ptr) +
                          ") is not aligned to its " + std::to_string(es) + "-byte " +
                          std::string(name(dtype)) + " elements");
  // One driver call for everything: unlike cuPointerGetAttribute, cuPointerGetAttributes answers
  // for a pointer CUDA does not know with zeroed values instead of an error.
  PointerFacts f;
  unsigned long long managed = 0; // a boolean of unspecified width: read into a zeroed word
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* values[] = {&f.type, &managed, &f.device, &f.start, &f.size};
  counters.pointer_queries.fetch_add(1, std::memory_order_relaxed);
  RT_CU(cuPointerGetAttributes(5, attrs, values, ptr));
  f.managed = managed != 0;
  const std::optional<std::uint64_t> room =
      judge_pointer(what, ptr, count, dtype, ordinal, capturing, f);
  // What a later call may take on trust: memory the driver knows, with its extent.
  if (!capturing && f.type != 0 && room) remember_checked(f.start, f.size, ordinal);
  return room;
}

Result result_kind(DType dtype, Op op, DType result) {
  const DType own = result_dtype(op, dtype);
  if (result == own) return Result::device;
  const bool widens = is_half(dtype) && own == dtype;
  if (widens && result == DType::f32) return Result::wide;
  throw InvalidArgument("reduce_tune: a " + std::string(name(dtype)) + " " + std::string(name(op)) +
                        " cannot write a " + std::string(name(result)) + " result: " +
                        (widens ? "its result is " + std::string(name(dtype)) + " or float32"
                                : "its result is " + std::string(name(own))));
}

void refuse_capture(const capture::State& cap) {
  if (cap.active)
    throw InvalidArgument("reduce_tune: sum, min, max and reduce wait for their result, which a "
                          "stream being captured into a CUDA graph cannot do: use reduce_async");
}

Call array_call(DType dtype, Op op, const void* d_in, std::uint64_t n, void* d_out, Result result,
                int ordinal, bool capturing) {
  Call c;
  c.problem = Problem::array;
  c.dtype = dtype;
  c.op = op;
  c.result = result;
  c.args.shape = {1, n};
  if (result != Result::host) { // the result's pointer first: n = 0 writes it
    const DType out_dtype = result_dtype(op, dtype, result == Result::wide);
    check_pointer("d_out", d_out, 1, out_dtype, ordinal, capturing);
    c.args.out = reinterpret_cast<CUdeviceptr>(d_out);
    c.out_count = 1;
  }
  if (n == 0) {
    check_not_empty(op);
    c.work = Call::Work::identity;
    return c;
  }
  check_pointer("d_in", d_in, n, dtype, ordinal, capturing);
  c.args.in = reinterpret_cast<CUdeviceptr>(d_in);
  c.in_count = n;
  return c;
}

std::uint64_t matrix_stride(Problem problem, DType dtype, std::uint64_t rows, std::uint64_t cols,
                            std::uint64_t row_stride) {
  const char* what = problem == Problem::rows ? "reduce_rows" : "reduce_columns";
  const std::uint64_t stride = row_stride ? row_stride : cols;
  if (stride < cols)
    throw InvalidArgument(std::string("reduce_tune: ") + what + ": row_stride " +
                          std::to_string(stride) + " is below cols " + std::to_string(cols));
  const std::uint64_t max = ~std::uint64_t(0) / size_of(dtype);
  if (rows > 0 && (stride > (max - cols) / rows))
    throw InvalidArgument(std::string("reduce_tune: ") + what + ": " + std::to_string(rows) +
                          " rows of stride " + std::to_string(stride) +
                          " overflow a 64-bit byte count");
  return stride;
}

Call matrix_layout(Problem problem, DType dtype, DType result, const void* d_in,
                   std::uint64_t rows, std::uint64_t cols, void* d_out, std::uint64_t stride,
                   int ordinal, bool capturing) {
  const std::uint64_t elements = rows == 0 ? 0 : (rows - 1) * stride + cols;
  const std::uint64_t results = problem == Problem::rows ? rows : cols;
  check_pointer("d_in", d_in, elements, dtype, ordinal, capturing);
  check_pointer("d_out", d_out, results, result, ordinal, capturing);
  Call c;
  c.in_count = elements;
  c.out_count = results;
  c.problem = problem;
  c.dtype = dtype;
  c.args.in = reinterpret_cast<CUdeviceptr>(d_in);
  c.args.out = reinterpret_cast<CUdeviceptr>(d_out);
  c.args.shape = problem == Problem::rows ? Shape{rows, cols} : Shape{cols, rows};
  c.args.stride = stride;
  return c;
}

Call matrix_call(Problem problem, DType dtype, Op op, const void* d_in, std::uint64_t rows,
                 std::uint64_t cols, void* d_out, std::uint64_t row_stride, int ordinal,
                 bool capturing) {
  const std::uint64_t stride = matrix_stride(problem, dtype, rows, cols, row_stride);
  const std::uint64_t results = problem == Problem::rows ? rows : cols;
  if (results > 0 && (problem == Problem::rows ? cols : rows) == 0) check_not_empty(op);
  Call c = matrix_layout(problem, dtype, result_dtype(op, dtype), d_in, rows, cols, d_out, stride,
                         ordinal, capturing);
  c.op = op;
  // Shapes that are another problem in disguise take that problem's faster path (see the header).
  const bool dense = stride == cols || rows == 1;
  const std::uint64_t per_result = c.args.shape.length;
  // One element per result is a copy where the op's result of one element is that element.
  const OpTraits& traits = describe(op).traits;
  const bool copies = traits.plain_map && traits.plain_post && result_dtype(op, dtype) == dtype;
  if (per_result == 1 && copies && (problem == Problem::columns || dense)) {
    c.work = Call::Work::copy;
  } else if (results == 1 && dense) {
    c.problem = Problem::array;
    c.args.shape = {1, per_result};
    c.args.stride = 0;
  }
  return c;
}

Shape segments_shape(DType dtype, const void* d_in, std::uint64_t segments, std::uint64_t elements,
                     int ordinal, bool capturing) {
  if (segments >= (std::uint64_t(1) << 40))
    throw InvalidArgument("reduce_tune: reduce_segments: " + std::to_string(segments) +
                          " segments: at most 2^40 are supported");
  // The lengths are in device memory: the input's extent is checked against `elements` only.
  const std::optional<std::uint64_t> room =
      check_pointer("d_in", d_in, elements, dtype, ordinal, capturing);
  if (!elements && room && *room < kExtentStandsInBelow) elements = *room;
  // The mean length, at least 1 (fewer elements than segments: the shortest tuned mean).
  return {segments, elements ? std::max<std::uint64_t>(elements / segments, 1) : 0};
}

void add_second_input(Call& c, const void* d_in2, int ordinal, bool capturing) {
  if (c.work == Call::Work::identity) return;
  check_pointer("d_y", d_in2, c.in_count, c.dtype, ordinal, capturing);
  c.args.in2 = reinterpret_cast<CUdeviceptr>(d_in2);
}

Call segments_layout(DType dtype, DType result, const void* d_in, const std::int64_t* d_offsets,
                     std::uint64_t segments, void* d_out, std::uint64_t elements, int ordinal,
                     bool capturing) {
  Call c;
  c.problem = Problem::segments;
  c.dtype = dtype;
  c.args.shape = segments_shape(dtype, d_in, segments, elements, ordinal, capturing);
  check_pointer("d_offsets", d_offsets, segments + 1, DType::i64, ordinal, capturing);
  check_pointer("d_out", d_out, segments, result, ordinal, capturing);
  c.in_count = elements;
  c.out_count = segments;
  c.args.in = reinterpret_cast<CUdeviceptr>(d_in);
  c.args.offsets = reinterpret_cast<CUdeviceptr>(d_offsets);
  c.args.out = reinterpret_cast<CUdeviceptr>(d_out);
  return c;
}

Call segments_call(DType dtype, Op op, const void* d_in, const std::int64_t* d_offsets,
                   std::uint64_t segments, void* d_out, std::uint64_t elements, int ordinal,
                   bool capturing) {
  Call c = segments_layout(dtype, result_dtype(op, dtype), d_in, d_offsets, segments, d_out,
                           elements, ordinal, capturing);
  c.op = op;
  return c;
}

} // namespace reduce_tune::detail
