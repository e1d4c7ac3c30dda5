// reduce-tune bench: cub::DeviceSegmentedReduce for the segmented problems (segmented_cub.h).
#include "bench/segmented_cub.h"

#include "bench/cccl.h"
#include "bench/cuda_types.h"
#include "bench/data.h"

#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <climits>
#include <type_traits>

// DeviceSegmentedReduce::Sum/Min/Max/Reduce(..., num_segments, segment_size, ...): CCCL 3.2.
#define RT_BENCH_CUB_FIXED_SIZE (CCCL_VERSION >= 3002000)

namespace rt_bench {
namespace {

using reduce_tune::DType;
using reduce_tune::Op;
using reduce_tune::Problem;

/// i -> i * step: segment starts of a dense matrix's rows (step = cols) or of the gathered
/// columns (step = rows).
struct Times {
  std::int64_t step;
  __host__ __device__ std::int64_t operator()(std::int64_t i) const { return i * step; }
};

/// k -> in[(k % rows) * cols + k / rows]: the matrix in column-major order, so column c is the
/// contiguous range [c * rows, (c + 1) * rows) of the sequence.
template <typename T> struct Gather {
  const T* in;
  std::int64_t rows, cols;
  __host__ __device__ T operator()(std::int64_t k) const { return in[(k % rows) * cols + k / rows]; }
};

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;

/// The offsets overloads: segment i = [begin[i], end[i]).
template <typename In, typename T, typename B, typename E>
cudaError_t call(Op op, void* tmp, std::size_t& bytes, In in, T* out, std::int64_t count, B begin,
                 E end, cudaStream_t s) {
  if constexpr (is_half_v<T>) {
    // bf16 and f16: Reduce with a float accumulator, as reduce_bench's CUB contestant.
    constexpr float inf = cuda::std::numeric_limits<float>::infinity();
    switch (op) {
    case Op::sum:
      return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, count, begin, end, cuda::std::plus<float>{}, 0.0f, s);
    case Op::min:
      return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, count, begin, end, cuda::minimum<float>{}, inf, s);
    case Op::max:
      return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, count, begin, end, cuda::maximum<float>{}, -inf, s);
    }
  } else {
    switch (op) {
    case Op::sum: return cub::DeviceSegmentedReduce::Sum(tmp, bytes, in, out, count, begin, end, s);
    case Op::min: return cub::DeviceSegmentedReduce::Min(tmp, bytes, in, out, count, begin, end, s);
    case Op::max: return cub::DeviceSegmentedReduce::Max(tmp, bytes, in, out, count, begin, end, s);
    }
  }
  return cudaErrorInvalidValue;
}

#if RT_BENCH_CUB_FIXED_SIZE
/// The fixed-size overloads: segment i = [i * size, (i + 1) * size).
template <typename In, typename T>
cudaError_t call_fixed(Op op, void* tmp, std::size_t& bytes, In in, T* out, std::int64_t count,
                       int size, cudaStream_t s) {
  if constexpr (is_half_v<T>) {
    constexpr float inf = cuda::std::numeric_limits<float>::infinity();
    switch (op) {
    case Op::sum:
      return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, count, size, cuda::std::plus<float>{}, 0.0f, s);
    case Op::min:
      return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, count, size, cuda::minimum<float>{}, inf, s);
    case Op::max:
      return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, count, size, cuda::maximum<float>{}, -inf, s);
    }
  } else {
    switch (op) {
    case Op::sum: return cub::DeviceSegmentedReduce::Sum(tmp, bytes, in, out, count, size, s);
    case Op::min: return cub::DeviceSegmentedReduce::Min(tmp, bytes, in, out, count, size, s);
    case Op::max: return cub::DeviceSegmentedReduce::Max(tmp, bytes, in, out, count, size, s);
    }
  }
  return cudaErrorInvalidValue;
}
#endif

template <typename T>
cudaError_t typed(CubKind kind, Op op, void* tmp, std::size_t& bytes, const T* in,
                  const std::int64_t* offsets, std::int64_t count, std::int64_t rows,
                  std::int64_t cols, T* out, cudaStream_t s) {
  const thrust::counting_iterator<std::int64_t> zero(0);
  const auto gathered = thrust::make_transform_iterator(zero, Gather<T>{in, rows, cols});
  switch (kind) {
  case CubKind::offsets: return call(op, tmp, bytes, in, out, count, offsets, offsets + 1, s);
  case CubKind::row_iterator: {
    const auto starts = thrust::make_transform_iterator(zero, Times{cols});
    return call(op, tmp, bytes, in, out, count, starts, starts + 1, s);
  }
  case CubKind::column_gather: {
    const auto starts = thrust::make_transform_iterator(zero, Times{rows});
    return call(op, tmp, bytes, gathered, out, count, starts, starts + 1, s);
  }
#if RT_BENCH_CUB_FIXED_SIZE
  case CubKind::row_fixed:
    if (cols > INT_MAX) return cudaErrorInvalidValue; // cub_kind() does not choose it then
    return call_fixed(op, tmp, bytes, in, out, count, int(cols), s);
  case CubKind::column_fixed:
    if (rows > INT_MAX) return cudaErrorInvalidValue;
    return call_fixed(op, tmp, bytes, gathered, out, count, int(rows), s);
#else
  case CubKind::row_fixed:
  case CubKind::column_fixed: return cudaErrorNotSupported; // not in this CCCL
#endif
  }
  return cudaErrorInvalidValue;
}

} // namespace

CubKind cub_kind(Problem p, bool iter, std::uint64_t rows, std::uint64_t cols) {
  const bool fixed = cub_fixed_size_segments();
  switch (p) {
  case Problem::rows:
    if (iter) return CubKind::row_iterator;
    return fixed && cols <= INT_MAX ? CubKind::row_fixed : CubKind::offsets;
  case Problem::columns:
    return fixed && rows <= INT_MAX ? CubKind::column_fixed : CubKind::column_gather;
  case Problem::array:
  case Problem::segments: break;
  }
  return CubKind::offsets;
}

cudaError_t cub_segmented(CubKind kind, DType dt, Op op, void* tmp, std::size_t& bytes,
                          const void* in, const std::int64_t* offsets, std::uint64_t count,
                          std::uint64_t rows, std::uint64_t cols, void* out, cudaStream_t s) {
  return visit(dt, [&](auto t) {
    using T = typename CudaType<decltype(t)>::type;
    return typed<T>(kind, op, tmp, bytes, static_cast<const T*>(in), offsets, std::int64_t(count),
                    std::int64_t(rows), std::int64_t(cols), static_cast<T*>(out), s);
  });
}

std::string cub_method() {
  const std::string name = "`cub::DeviceSegmentedReduce::Sum/Min/Max` (bfloat16/float16: `Reduce` "
                           "with a float accumulator; CCCL " + std::string(cccl_version()) +
                           ", temp storage allocated beforehand)";
  const std::string iter = "CUB-iter (rows) = the offsets overload with counting-iterator offsets "
                           "i * cols (no offsets read)";
  if (cub_fixed_size_segments())
    return name + ": rows = the fixed-size overload (num_segments = rows, segment_size = cols); "
                  "columns = the fixed-size overload (segment_size = rows) on a gather iterator "
                  "(element (r, c) at position c * rows + r); segments = the offsets overload with "
                  "the problem's int64 offsets; " + iter + ".";
  return name + ": rows = the offsets overload with int64 offsets in device memory; columns = "
                "the offsets overload on a gather iterator (element (r, c) at position c * rows + "
                "r) with counting-iterator offsets; segments = the offsets overload with the "
                "problem's int64 offsets; " + iter + ". This CCCL has no fixed-size overload "
                "(CCCL 3.2 and later), so CUB-iter stands in for it.";
}

} // namespace rt_bench
