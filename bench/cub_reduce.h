// reduce-tune bench: cub::DeviceReduce, the contestant reduce_bench times against the library.
#pragma once

#include "reduce_tune/config.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace rt_bench {

/// cub::DeviceReduce::{Sum, Min, Max} of n elements of dt (int32, uint32, int64, float32,
/// float64; bf16 and f16 through DeviceReduce::Reduce with a float accumulator, as reduce-tune
/// accumulates) into out[0]; with tmp == nullptr it sets `bytes` to the temporary storage needed.
/// n is passed as int when it fits (what callers do; CUB then uses 32-bit offsets).
/// `float_result` (bf16 and f16): `out` is a float and receives the float accumulator, unrounded.
cudaError_t cub_dispatch(reduce_tune::DType dt, reduce_tune::Op op, void* tmp, std::size_t& bytes,
                         const void* in, void* out, std::uint64_t n, cudaStream_t s,
                         bool float_result = false);

} // namespace rt_bench
