// reduce-tune bench: cub::DeviceSegmentedReduce (Sum/Min/Max) for the segmented problems, the
// contestant reduce_bench_segmented times against the library (bench/segmented.cu).
//
// The installed CCCL (3.0.x with CUDA 13.0) has only the offsets overloads of
// DeviceSegmentedReduce (begin and end offset iterators); the fixed-segment-size overload of
// later CCCL versions is not there. So rows are timed twice: with an int64 offsets array in
// device memory (as a caller passes them; rows + 1 offsets are read) and with offsets computed by a
// counting iterator (i * cols, nothing read: the closest to a fixed-size call). Columns have no
// CUB call of their own: a gather iterator feeds column c's rows (element r*cols + c) as segment
// c to the same offsets overload.
#pragma once

#include "reduce_tune/config.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace rt_bench {

enum class CubKind {
  offsets,       ///< d_offsets[0..count]: segment i = [d_offsets[i], d_offsets[i+1])
  row_iterator,  ///< count = rows of a dense rows x cols matrix, offsets i * cols by iterator
  column_gather, ///< count = cols of a dense rows x cols matrix, element (r, c) by gather
};

/// The CUB call for `kind` on dt (int32, uint32, int64, float32, float64; bf16 and f16 through
/// Reduce with a float accumulator) and op; with
/// tmp == nullptr it sets `bytes` to the temporary storage needed. `count` results go to `out`.
cudaError_t cub_segmented(CubKind kind, reduce_tune::DType dt, reduce_tune::Op op, void* tmp,
                          std::size_t& bytes, const void* in, const std::int64_t* offsets,
                          std::uint64_t count, std::uint64_t rows, std::uint64_t cols, void* out,
                          cudaStream_t s);

/// "3.0.1": the CCCL the bench was built with.
const char* cccl_version();

} // namespace rt_bench
