// reduce-tune bench: CUDA's element types for the library's host ones.
#pragma once

#include "kernels/half.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace rt_bench {

/// CUDA's type for the library's host bf16_t / f16_t (the same bits); other types unchanged.
template <typename T> struct CudaType { using type = T; };
template <> struct CudaType<reduce_tune::bf16_t> { using type = __nv_bfloat16; };
template <> struct CudaType<reduce_tune::f16_t> { using type = __half; };

} // namespace rt_bench
