// reduce-tune bench: cub::DeviceSegmentedReduce (Sum/Min/Max) for the segmented problems, the
// contestant reduce_bench_segmented times against the library (bench/segmented.cu).
//
// Which overload each problem uses depends on the CCCL the bench is built with (bench/cccl.h):
// from CCCL 3.2, DeviceSegmentedReduce has fixed-size overloads (num_segments, segment_size), so
// rows are one call with segment_size = cols, and columns the same call on a gather iterator
// (element (r, c) at position c * rows + r, segment_size = rows). With an older CCCL (3.0 in
// CUDA 13.0) rows take the offsets overload with an int64 offsets array in device memory, and
// columns the gather iterator with counting-iterator offsets. Segments always take the offsets
// overload with the problem's int64 offsets. CUB-iter (rows only) is the offsets overload with
// offsets i * cols from a counting iterator (nothing read), beside either.
#pragma once

#include "reduce_tune/config.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rt_bench {

enum class CubKind {
  offsets,       ///< d_offsets[0..count]: segment i = [d_offsets[i], d_offsets[i+1])
  row_iterator,  ///< count = rows of a dense rows x cols matrix, offsets i * cols by iterator
  column_gather, ///< count = cols of a dense rows x cols matrix, element (r, c) by gather
  row_fixed,     ///< count = rows, the fixed-size overload with segment_size = cols
  column_fixed,  ///< count = cols, the gather iterator, fixed-size with segment_size = rows
};

/// The CUB call the bench times for problem p as contestant CUB (iter == false) or CUB-iter
/// (iter == true, rows only): the fixed-size kinds where this CCCL has them and the segment
/// size fits an int.
CubKind cub_kind(reduce_tune::Problem p, bool iter, std::uint64_t rows, std::uint64_t cols);

/// The CUB call for `kind` on dt (int32, uint32, int64, float32, float64; bf16 and f16 through
/// Reduce with a float accumulator) and op; with
/// tmp == nullptr it sets `bytes` to the temporary storage needed. `count` results go to `out`.
/// `offsets`: the int64 offsets of CubKind::offsets, unused by the other kinds.
cudaError_t cub_segmented(CubKind kind, reduce_tune::DType dt, reduce_tune::Op op, void* tmp,
                          std::size_t& bytes, const void* in, const std::int64_t* offsets,
                          std::uint64_t count, std::uint64_t rows, std::uint64_t cols, void* out,
                          cudaStream_t s);

/// The overloads behind CUB and CUB-iter per problem, for the bench's Contestants line.
std::string cub_method();

} // namespace rt_bench
