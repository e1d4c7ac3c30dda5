// reduce-tune: CUDA's 2-byte floats in the typed helpers of reduce_tune/reducer.h: __nv_bfloat16
// (DType::bf16) and __half (DType::f16). Needs CUDA's cuda_bf16.h and cuda_fp16.h (the toolkit's
// include directory); reducer.h includes this header itself when either was included before it.
// Sums accumulate in float32 and return the element type (see Reducer::sum).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "reduce_tune/reducer.h"

namespace reduce_tune {

template <> struct element_dtype<__nv_bfloat16> {
  static constexpr bool defined = true;
  static constexpr DType value = DType::bf16;
};
template <> struct element_dtype<__half> {
  static constexpr bool defined = true;
  static constexpr DType value = DType::f16;
};

} // namespace reduce_tune
