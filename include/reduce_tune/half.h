// reduce-tune: CUDA's 2-byte floats with their DTypes in one include: <cuda_bf16.h> and
// <cuda_fp16.h> (the toolkit's include directory), and reduce_tune/element.h, which names
// __nv_bfloat16 (DType::bf16) and __half (DType::f16). The typed helpers of reduce_tune/reducer.h
// take both types without this header, in any include order (element.h says why). Sums accumulate
// in float32 and return the element type (see Reducer::sum).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "reduce_tune/element.h"
