// reduce-tune bench: CUB's argmax, 1-D and per segment, with its CPU checks (cub_argmax.h).
#include "bench/cub_argmax.h"

#include "bench/cuda_types.h"
#include "bench/data.h"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/std/utility>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <climits>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>

// DeviceSegmentedReduce::ArgMax(..., num_segments, segment_size, stream): CCCL 3.2.
#define RT_BENCH_CUB_FIXED_SIZE (CCCL_VERSION >= 3002000)

namespace rt_bench {
namespace {

using reduce_tune::DType;

/// i -> i * step: row starts of a dense matrix.
struct Stride {
  std::int64_t step;
  __host__ __device__ std::int64_t operator()(std::int64_t i) const { return i * step; }
};

template <typename T> using FixedOut = cuda::std::pair<int, T>;
template <typename T> using OffsetsOut = cub::KeyValuePair<int, T>;
/// Where the value sits in either result: after the int key, at the value's alignment.
template <typename T> constexpr std::size_t value_at = alignof(T) > 4 ? alignof(T) : 4;
template <typename T> constexpr std::size_t pair_bytes = value_at<T> + (sizeof(T) > 4 ? sizeof(T) : 4);

template <typename T>
cudaError_t typed_segmented(CubKind kind, void* tmp, std::size_t& bytes, const T* in,
                            const std::int64_t* offsets, std::int64_t count, std::int64_t cols,
                            void* out, cudaStream_t s) {
  static_assert(sizeof(FixedOut<T>) == pair_bytes<T> && sizeof(OffsetsOut<T>) == pair_bytes<T>,
                "an argmax result's layout differs from what the check decodes");
  switch (kind) {
  case CubKind::row_fixed:
#if RT_BENCH_CUB_FIXED_SIZE
    if (cols > INT_MAX) return cudaErrorInvalidValue;
    return cub::DeviceSegmentedReduce::ArgMax(tmp, bytes, in, static_cast<FixedOut<T>*>(out), count,
                                              int(cols), s);
#else
    return cudaErrorNotSupported; // not in this CCCL
#endif
  case CubKind::row_iterator: {
    const auto starts = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), Stride{cols});
    return cub::DeviceSegmentedReduce::ArgMax(tmp, bytes, in, static_cast<OffsetsOut<T>*>(out), count,
                                              starts, starts + 1, s);
  }
  case CubKind::offsets:
    return cub::DeviceSegmentedReduce::ArgMax(tmp, bytes, in, static_cast<OffsetsOut<T>*>(out), count,
                                              offsets, offsets + 1, s);
  case CubKind::column_gather:
  case CubKind::column_fixed: break;
  }
  return cudaErrorInvalidValue;
}

/// a > b on the host element type (2-byte floats by value).
template <typename H> bool greater(H a, H b) {
  if constexpr (reduce_tune::is_half_float_v<H>) return double(a) > double(b);
  else return a > b;
}

template <typename H> std::string show(H v) {
  std::ostringstream s;
  s.precision(std::numeric_limits<H>::max_digits10);
  if constexpr (reduce_tune::is_half_float_v<H>) s << double(v);
  else s << +v;
  return s.str();
}

/// CUB's argmax of x[b, e): the first maximum under `>` (a later equal value does not replace
/// it) and its index from b; an empty range gives (1, lowest).
template <typename H> std::pair<std::int64_t, H> first_max(const H* x, std::int64_t b, std::int64_t e) {
  if (b >= e) return {1, std::numeric_limits<H>::lowest()};
  std::int64_t at = b;
  for (std::int64_t i = b + 1; i < e; ++i)
    if (greater(x[i], x[at])) at = i;
  return {at - b, x[at]};
}

/// Empty when (index, value) is the expected pair; else what differs.
template <typename H>
std::string compare(std::int64_t index, const void* value, std::pair<std::int64_t, H> want) {
  H got;
  std::memcpy(&got, value, sizeof(H));
  if (index == want.first && std::memcmp(&got, &want.second, sizeof(H)) == 0) return {};
  return "got (" + std::to_string(index) + ", " + show(got) + "), expected (" +
         std::to_string(want.first) + ", " + show(want.second) + ")";
}

} // namespace

cudaError_t cub_argmax(DType dt, void* tmp, std::size_t& bytes, const void* in, void* value_out,
                       std::int64_t* index_out, std::uint64_t n, cudaStream_t s) {
  return visit(dt, [&](auto t) {
    using T = typename CudaType<decltype(t)>::type;
    // CCCL 3.0 takes a stream last; CCCL 3.6 an execution environment, of which a cudaStream_t is
    // one (cuda::get_stream): the call runs on `s` with either.
    return cub::DeviceReduce::ArgMax(tmp, bytes, static_cast<const T*>(in), static_cast<T*>(value_out),
                                     index_out, std::int64_t(n), s);
  });
}

cudaError_t cub_segmented_argmax(CubKind kind, DType dt, void* tmp, std::size_t& bytes, const void* in,
                                 const std::int64_t* offsets, std::uint64_t count, std::uint64_t cols,
                                 void* out, cudaStream_t s) {
  return visit(dt, [&](auto t) {
    using T = typename CudaType<decltype(t)>::type;
    return typed_segmented<T>(kind, tmp, bytes, static_cast<const T*>(in), offsets, std::int64_t(count),
                              std::int64_t(cols), out, s);
  });
}

std::size_t cub_arg_pair_bytes(DType dt) {
  return visit(dt, [](auto t) { return pair_bytes<typename CudaType<decltype(t)>::type>; });
}

std::string check_cub_argmax(DType dt, const void* host, std::uint64_t n, const void* value,
                             std::int64_t index) {
  return visit(dt, [&](auto t) {
    using H = decltype(t);
    return compare(index, value, first_max(static_cast<const H*>(host), 0, std::int64_t(n)));
  });
}

std::string check_cub_segmented_argmax(DType dt, const void* host, const std::int64_t* offsets,
                                       std::uint64_t count, std::uint64_t cols, const void* got) {
  return visit(dt, [&](auto t) -> std::string {
    using H = decltype(t);
    constexpr std::size_t at = value_at<typename CudaType<H>::type>;
    constexpr std::size_t step = pair_bytes<typename CudaType<H>::type>;
    const auto* x = static_cast<const H*>(host);
    const auto* g = static_cast<const unsigned char*>(got);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::int64_t b = offsets ? offsets[i] : std::int64_t(i * cols);
      const std::int64_t e = offsets ? offsets[i + 1] : std::int64_t((i + 1) * cols);
      int key;
      std::memcpy(&key, g + i * step, sizeof key);
      if (std::string e_ = compare(key, g + i * step + at, first_max(x, b, e)); !e_.empty())
        return "segment " + std::to_string(i) + ": " + e_;
    }
    return {};
  });
}

} // namespace rt_bench
