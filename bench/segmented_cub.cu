// reduce-tune bench: cub::DeviceSegmentedReduce for the segmented problems (segmented_cub.h).
#include "bench/segmented_cub.h"

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

#include <cstdio>
#include <type_traits>

namespace rt_bench {
namespace {

using reduce_tune::DType;
using reduce_tune::Op;

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

template <typename In, typename T, typename B, typename E>
cudaError_t call(Op op, void* tmp, std::size_t& bytes, In in, T* out, std::int64_t count, B begin,
                 E end, cudaStream_t s) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>) {
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

template <typename T>
cudaError_t typed(CubKind kind, Op op, void* tmp, std::size_t& bytes, const T* in,
                  const std::int64_t* offsets, std::int64_t count, std::int64_t rows,
                  std::int64_t cols, T* out, cudaStream_t s) {
  const thrust::counting_iterator<std::int64_t> zero(0);
  switch (kind) {
  case CubKind::offsets: return call(op, tmp, bytes, in, out, count, offsets, offsets + 1, s);
  case CubKind::row_iterator: {
    const auto starts = thrust::make_transform_iterator(zero, Times{cols});
    return call(op, tmp, bytes, in, out, count, starts, starts + 1, s);
  }
  case CubKind::column_gather: {
    const auto seq = thrust::make_transform_iterator(zero, Gather<T>{in, rows, cols});
    const auto starts = thrust::make_transform_iterator(zero, Times{rows});
    return call(op, tmp, bytes, seq, out, count, starts, starts + 1, s);
  }
  }
  return cudaErrorInvalidValue;
}

} // namespace

cudaError_t cub_segmented(CubKind kind, DType dt, Op op, void* tmp, std::size_t& bytes,
                          const void* in, const std::int64_t* offsets, std::uint64_t count,
                          std::uint64_t rows, std::uint64_t cols, void* out, cudaStream_t s) {
  return visit(dt, [&](auto t) {
    using T = typename CudaType<decltype(t)>::type;
    return typed<T>(kind, op, tmp, bytes, static_cast<const T*>(in), offsets, std::int64_t(count),
                    std::int64_t(rows), std::int64_t(cols), static_cast<T*>(out), s);
  });
}

const char* cccl_version() {
  static char buf[32];
  std::snprintf(buf, sizeof buf, "%d.%d.%d", CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
  return buf;
}

} // namespace rt_bench
