// reduce-tune bench: the streaming-read ceiling kernel and the device-side reduction helpers it
// is built from (identity, combine, warp and atomic finishes), shared by reduce_bench and
// reduce_bench_segmented. Header-only: templates, each instantiated where used.
#pragma once

#include "bench/cuda_types.h"
#include "bench/data.h"
#include "bench/timer.cuh"
#include "kernels/driver.h"
#include "tuner/reference.h"

#include <cuda/std/limits>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace rt_bench {

using reduce_tune::DType;
using reduce_tune::Op;

/// The 16-byte vector of T: 4 elements of the 4-byte types, 2 of the 8-byte ones.
template <typename T> struct Vec16;
template <> struct Vec16<int> { using type = int4; };
template <> struct Vec16<unsigned> { using type = uint4; };
template <> struct Vec16<long long> { using type = longlong2; };
template <> struct Vec16<float> { using type = float4; };
template <> struct Vec16<double> { using type = double2; };

template <Op O, typename T> __device__ __forceinline__ T identity() {
  using L = cuda::std::numeric_limits<T>;
  if constexpr (O == Op::sum) return T(0);
  else if constexpr (L::has_infinity) return O == Op::min ? L::infinity() : -L::infinity();
  else return O == Op::min ? L::max() : L::lowest();
}

/// Integer sums wrap (added as unsigned: signed overflow is undefined); float min/max are
/// fmin/fmax, as before.
template <Op O, typename T> __device__ __forceinline__ T combine(T a, T b) {
  if constexpr (O == Op::sum && std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(a) + U(b));
  } else if constexpr (O == Op::sum) return a + b;
  else if constexpr (std::is_same_v<T, float>) return O == Op::min ? fminf(a, b) : fmaxf(a, b);
  else if constexpr (std::is_same_v<T, double>) return O == Op::min ? fmin(a, b) : fmax(a, b);
  else return O == Op::min ? (a < b ? a : b) : (a < b ? b : a);
}

template <Op O, typename V> __device__ __forceinline__ auto combine_vec(V v) {
  if constexpr (sizeof(V) == 4 * sizeof(v.x))
    return combine<O>(combine<O>(v.x, v.y), combine<O>(v.z, v.w));
  else
    return combine<O>(v.x, v.y);
}

template <Op O, typename T> __device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v = combine<O>(v, __shfl_down_sync(0xffffffffu, v, d));
  return v;
}

/// Float min/max through integer atomics (any data without NaN): non-negative floats order like
/// their bits as signed integers, negative ones inversely to their bits as unsigned integers.
template <Op O, typename T> __device__ __forceinline__ void atomic_minmax_float(T* out, T v) {
  using S = std::conditional_t<sizeof(T) == 4, int, long long>;
  using U = std::make_unsigned_t<S>;
  S s;
  memcpy(&s, &v, sizeof v);
  if (s >= 0) {
    if constexpr (O == Op::min) atomicMin(reinterpret_cast<S*>(out), s);
    else atomicMax(reinterpret_cast<S*>(out), s);
  } else {
    if constexpr (O == Op::min) atomicMax(reinterpret_cast<U*>(out), U(s));
    else atomicMin(reinterpret_cast<U*>(out), U(s));
  }
}

/// One block's result into *out: native atomicAdd/Min/Max for int, unsigned and long long
/// (64-bit min/max: sm_35+), the long long sum as the unsigned long long atomicAdd (the same
/// bits in two's complement), atomicAdd for float and double (double: sm_60+), float and double
/// min/max through atomic_minmax_float.
template <Op O, typename T> __device__ __forceinline__ void atomic_combine(T* out, T v) {
  if constexpr (O == Op::sum && std::is_same_v<T, long long>)
    atomicAdd(reinterpret_cast<unsigned long long*>(out), static_cast<unsigned long long>(v));
  else if constexpr (O == Op::sum) atomicAdd(out, v);
  else if constexpr (std::is_floating_point_v<T>) atomic_minmax_float<O>(out, v);
  else if constexpr (O == Op::min) atomicMin(out, v);
  else atomicMax(out, v);
}

constexpr int kCeilBlock = 256;
constexpr int kCeilUnroll = 4; // 16-byte loads in flight per thread

/// The streaming-read ceiling: 16-byte loads, plain or evict-first (`EvictFirst`: ld.global.cs;
/// each wins at some sizes, docs/PERFORMANCE.md), grid-stride with kCeilUnroll independent loads in
/// flight per thread, warp-shuffle block reduction, one atomic per block into `out` (which the
/// caller sets to the identity). cudaMalloc'd input is 256-byte aligned; n need not be a
/// multiple of the elements per vector (the last n % per elements are read as scalars).
template <bool EvictFirst, typename V> __device__ __forceinline__ V ceiling_load(const V* p) {
  if constexpr (EvictFirst) return __ldcs(p);
  else return __ldg(p);
}

/// The block's streaming read of in[0..n): grid-stride over 16-byte vectors V (`per` elements of
/// T each), kCeilUnroll loads in flight per thread, each vector combined into an accumulator A by
/// `vec`, the last n % per elements widened by `elem`; then the warps' values through shared
/// memory. Returns the block's value in thread 0 (the other threads' return value is unused).
template <Op O, typename A, bool EvictFirst, typename V, typename T, typename VecF, typename ElemF>
__device__ __forceinline__ A ceiling_block(const T* __restrict__ in, unsigned long long n, VecF vec,
                                           ElemF elem) {
  constexpr unsigned per = sizeof(V) / sizeof(T);
  const V* __restrict__ vin = reinterpret_cast<const V*>(in);
  const unsigned long long nv = n / per;
  const unsigned long long tid = (unsigned long long)blockIdx.x * kCeilBlock + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * kCeilBlock;
  A acc = identity<O, A>();
  unsigned long long i = tid;
  for (; i + (kCeilUnroll - 1) * stride < nv; i += kCeilUnroll * stride) {
    V v[kCeilUnroll];
#pragma unroll
    for (int u = 0; u < kCeilUnroll; ++u) v[u] = ceiling_load<EvictFirst>(vin + i + u * stride);
#pragma unroll
    for (int u = 0; u < kCeilUnroll; ++u) acc = combine<O>(acc, vec(v[u]));
  }
  for (; i < nv; i += stride) acc = combine<O>(acc, vec(ceiling_load<EvictFirst>(vin + i)));
  if (tid < n - nv * per) acc = combine<O>(acc, elem(in[nv * per + tid]));

  __shared__ A warp_part[kCeilBlock / 32];
  acc = warp_reduce<O>(acc);
  if ((threadIdx.x & 31) == 0) warp_part[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < kCeilBlock / 32 ? warp_part[threadIdx.x] : identity<O, A>();
    acc = warp_reduce<O>(acc);
  }
  return acc;
}

template <Op O, typename T, bool EvictFirst>
__global__ void __launch_bounds__(kCeilBlock)
    ceiling_kernel(const T* __restrict__ in, unsigned long long n, T* __restrict__ out) {
  const T acc = ceiling_block<O, T, EvictFirst, typename Vec16<T>::type>(
      in, n, [](auto v) { return combine_vec<O>(v); }, [](T x) { return x; });
  if (threadIdx.x == 0) atomic_combine<O>(out, acc);
}

/// Blocks of `kernel` (kCeilBlock threads) resident on one SM, at least 1; asked once per kernel.
template <auto Kernel> int resident_blocks() {
  static const int per_sm = [] {
    int b = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, Kernel, kCeilBlock, 0));
    return std::max(b, 1);
  }();
  return per_sm;
}

/// Grid for a ceiling kernel reading `per` elements a load: every block resident at once
/// (occupancy x SMs), or fewer when the data gives each thread less than one round of loads.
template <auto Kernel> unsigned ceiling_grid(std::uint64_t n, unsigned per, int sm_count) {
  const std::uint64_t per_block = std::uint64_t(kCeilBlock) * kCeilUnroll * per;
  const std::uint64_t data = (n + per_block - 1) / per_block;
  return unsigned(std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(data, std::uint64_t(resident_blocks<Kernel>()) * sm_count)));
}

/// Stores an 8-byte identity: cuMemsetD32 repeats one 32-bit pattern, which no 8-byte min/max
/// identity is.
template <typename W = unsigned long long> __global__ void store_kernel(W* out, W bits) { *out = bits; }

/// One ceiling call: the output set to the identity (it is part of any real call) by one small
/// operation, then the kernel. The operation is a memset, except for int64/float64 min/max: there
/// store_kernel, which costs about 0.6 us more (a memset added 0.7 us to a small kernel, a
/// one-thread kernel or an 8-byte device-to-device copy 1.3 us, two memsets 1.4 us; H200).
template <Op O, typename T, bool EvictFirst>
void ceiling_call(DType dt, const T* in, std::uint64_t n, T* out, int sm_count, cudaStream_t s) {
  const std::uint64_t bits = reduce_tune::identity(dt, O).bits;
  if constexpr (sizeof(T) == 4 || O == Op::sum) {
    RT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(out), unsigned(bits), sizeof(T) / 4, s));
  } else {
    store_kernel<<<1, 1, 0, s>>>(reinterpret_cast<unsigned long long*>(out), (unsigned long long)bits);
    CK(cudaGetLastError());
  }
  constexpr auto kernel = ceiling_kernel<O, T, EvictFirst>;
  kernel<<<ceiling_grid<kernel>(n, 16 / sizeof(T), sm_count), kCeilBlock, 0, s>>>(in, n, out);
  CK(cudaGetLastError());
}

// ---- the ceiling for bf16 and f16 ----------------------------------------------------------

__device__ __forceinline__ float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
__device__ __forceinline__ float to_float(__half h) { return __half2float(h); }
__device__ __forceinline__ void from_float(float v, __nv_bfloat16* out) { *out = __float2bfloat16_rn(v); }
__device__ __forceinline__ void from_float(float v, __half* out) { *out = __float2half_rn(v); }

/// The 8 elements of a 16-byte vector of H, combined in float as a pairwise tree.
template <Op O, typename H> __device__ __forceinline__ float combine8(const uint4& v) {
  const H* h = reinterpret_cast<const H*>(&v);
  float f[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = to_float(h[e]);
  return combine<O>(combine<O>(combine<O>(f[0], f[1]), combine<O>(f[2], f[3])),
                    combine<O>(combine<O>(f[4], f[5]), combine<O>(f[6], f[7])));
}

/// The ceiling of bf16 and f16 (H = __nv_bfloat16 or __half), as ceiling_kernel with 8 elements
/// a load, in float: each block's float is combined atomically into `acc` (set to the identity
/// by the call), and the last block to take a ticket rounds it once into `out` and resets the
/// ticket (an atomic into a 2-byte result would round at every block).
template <Op O, typename H, bool EvictFirst>
__global__ void __launch_bounds__(kCeilBlock)
    ceiling_half_kernel(const H* __restrict__ in, unsigned long long n, H* __restrict__ out,
                        float* acc_out, unsigned* ticket) {
  const float acc = ceiling_block<O, float, EvictFirst, uint4>(
      in, n, [](const uint4& v) { return combine8<O, H>(v); }, [](H x) { return to_float(x); });
  if (threadIdx.x == 0) {
    atomic_combine<O>(acc_out, acc);
    __threadfence();
    if (atomicAdd(ticket, 1u) == gridDim.x - 1) {
      __threadfence();
      from_float(*reinterpret_cast<volatile float*>(acc_out), out);
      *ticket = 0;
    }
  }
}

/// One bf16/f16 ceiling call: the float accumulator set to the identity by a memset (as the other
/// ceilings set their result), then the kernel. Its accumulator and ticket are one small buffer
/// per instantiation, the ticket zeroed once.
template <Op O, typename H, bool EvictFirst>
void ceiling_half_call(const H* in, std::uint64_t n, H* out, int sm_count, cudaStream_t s) {
  static unsigned* state = [] {
    unsigned* p = nullptr;
    CK(cudaMalloc(&p, 2 * sizeof(unsigned)));
    CK(cudaMemset(p, 0, 2 * sizeof(unsigned)));
    return p;
  }();
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float id = O == Op::sum ? 0.f : O == Op::min ? inf : -inf;
  unsigned bits = 0;
  std::memcpy(&bits, &id, 4);
  RT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(state), bits, 1, s));
  constexpr auto kernel = ceiling_half_kernel<O, H, EvictFirst>;
  kernel<<<ceiling_grid<kernel>(n, 8, sm_count), kCeilBlock, 0, s>>>(
      in, n, out, reinterpret_cast<float*>(state), state + 1);
  CK(cudaGetLastError());
}

template <bool EvictFirst>
void ceiling(DType dt, Op op, const void* in, std::uint64_t n, void* out, int sm_count,
             cudaStream_t s) {
  rt_bench::visit(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (reduce_tune::is_half_float_v<T>) {
      using H = typename CudaType<T>::type;
      const H* i = static_cast<const H*>(in);
      H* o = static_cast<H*>(out);
      switch (op) {
      case Op::sum: return ceiling_half_call<Op::sum, H, EvictFirst>(i, n, o, sm_count, s);
      case Op::min: return ceiling_half_call<Op::min, H, EvictFirst>(i, n, o, sm_count, s);
      case Op::max: return ceiling_half_call<Op::max, H, EvictFirst>(i, n, o, sm_count, s);
      }
    } else {
      const T* i = static_cast<const T*>(in);
      T* o = static_cast<T*>(out);
      switch (op) {
      case Op::sum: return ceiling_call<Op::sum, T, EvictFirst>(dt, i, n, o, sm_count, s);
      case Op::min: return ceiling_call<Op::min, T, EvictFirst>(dt, i, n, o, sm_count, s);
      case Op::max: return ceiling_call<Op::max, T, EvictFirst>(dt, i, n, o, sm_count, s);
      }
    }
  });
}

} // namespace rt_bench
