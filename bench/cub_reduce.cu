// reduce-tune bench: cub::DeviceReduce (Sum/Min/Max; bf16 and f16 through Reduce with a float
// accumulator), the contestant reduce_bench times against the library (bench/bench.cu).
#include "bench/cub_reduce.h"
#include "bench/cuda_types.h"
#include "bench/data.h"

#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>

#include <climits>

namespace rt_bench {
namespace {

using reduce_tune::DType;
using reduce_tune::Op;

/// cub::DeviceReduce::{Sum, Min, Max}; with tmp == nullptr it sets `bytes` to the temp size.
/// n is passed as int when it fits (what callers do; CUB then uses 32-bit offsets).
template <typename T, typename N>
cudaError_t cub_reduce_n(Op op, void* tmp, std::size_t& bytes, const T* in, T* out, N n,
                         cudaStream_t s) {
  switch (op) {
  case Op::sum: return cub::DeviceReduce::Sum(tmp, bytes, in, out, n, s);
  case Op::min: return cub::DeviceReduce::Min(tmp, bytes, in, out, n, s);
  case Op::max: return cub::DeviceReduce::Max(tmp, bytes, in, out, n, s);
  }
  return cudaErrorInvalidValue;
}

/// bf16 and f16 (H = __nv_bfloat16 or __half): cub::DeviceReduce::Reduce with a float
/// accumulator (the operator and the initial value are float, so CUB combines in float and writes
/// the result once as O: H, or float for the float result), as reduce-tune does. Sum:
/// cuda::std::plus<float> from 0; min/max: cuda::minimum<float> / cuda::maximum<float> from
/// +-infinity (exact either way).
template <typename H, typename O, typename N>
cudaError_t cub_reduce_half_n(Op op, void* tmp, std::size_t& bytes, const H* in, O* out, N n,
                              cudaStream_t s) {
  constexpr float inf = cuda::std::numeric_limits<float>::infinity();
  switch (op) {
  case Op::sum: return cub::DeviceReduce::Reduce(tmp, bytes, in, out, n, cuda::std::plus<float>{}, 0.0f, s);
  case Op::min: return cub::DeviceReduce::Reduce(tmp, bytes, in, out, n, cuda::minimum<float>{}, inf, s);
  case Op::max: return cub::DeviceReduce::Reduce(tmp, bytes, in, out, n, cuda::maximum<float>{}, -inf, s);
  }
  return cudaErrorInvalidValue;
}

template <typename H, typename O>
cudaError_t cub_reduce_half(Op op, void* tmp, std::size_t& bytes, const H* in, O* out,
                            std::uint64_t n, cudaStream_t s) {
  if (n <= std::uint64_t(INT_MAX)) return cub_reduce_half_n(op, tmp, bytes, in, out, int(n), s);
  return cub_reduce_half_n(op, tmp, bytes, in, out, std::int64_t(n), s);
}

template <typename T>
cudaError_t cub_reduce(Op op, void* tmp, std::size_t& bytes, const void* in, void* out,
                       std::uint64_t n, cudaStream_t s, bool float_result) {
  if constexpr (reduce_tune::is_half_float_v<T>) {
    using H = typename rt_bench::CudaType<T>::type;
    const H* i = static_cast<const H*>(in);
    if (float_result) return cub_reduce_half(op, tmp, bytes, i, static_cast<float*>(out), n, s);
    return cub_reduce_half(op, tmp, bytes, i, static_cast<H*>(out), n, s);
  } else {
    if (float_result) return cudaErrorInvalidValue; // only bf16 and f16 have a wider result
    const T* i = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    if (n <= std::uint64_t(INT_MAX)) return cub_reduce_n(op, tmp, bytes, i, o, int(n), s);
    return cub_reduce_n(op, tmp, bytes, i, o, std::int64_t(n), s);
  }
}

} // namespace

cudaError_t cub_dispatch(DType dt, Op op, void* tmp, std::size_t& bytes, const void* in, void* out,
                         std::uint64_t n, cudaStream_t s, bool float_result) {
  return rt_bench::visit(dt, [&](auto t) {
    return cub_reduce<decltype(t)>(op, tmp, bytes, in, out, n, s, float_result);
  });
}

} // namespace rt_bench
