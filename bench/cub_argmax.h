// reduce-tune bench: CUB's argmax, the contestant for the library's argmax op: the index of the
// maximum (the first on ties) and the maximum, on the 1-D problem and per row or segment.
//
//   1-D:      cub::DeviceReduce::ArgMax(tmp, bytes, in, d_max_out, d_index_out, n, stream):
//             the maximum to `value_out` (dt), its int64 index to `index_out`.
//   rows:     from CCCL 3.2, the fixed-size cub::DeviceSegmentedReduce::ArgMax(tmp, bytes, in,
//             out, num_segments = rows, segment_size = cols, stream), out[i] a
//             cuda::std::pair<int, T> (in-row index, maximum); with an older CCCL the offsets
//             overload with counting-iterator offsets i * cols.
//   segments: the offsets overload, out[i] a cub::KeyValuePair<int, T> (in-segment index,
//             maximum); an empty segment gives (1, lowest value of T).
// NaN: CUB compares with `>`, so a NaN never replaces a maximum (torch's argmax returns the NaN);
// the CPU checks below follow CUB and are meant for NaN-free data, as the benches generate.
#pragma once

#include "bench/segmented_cub.h"
#include "reduce_tune/config.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rt_bench {

/// cub::DeviceReduce::ArgMax over n elements of dt (every DType); tmp == nullptr: sets `bytes`.
cudaError_t cub_argmax(reduce_tune::DType dt, void* tmp, std::size_t& bytes, const void* in,
                       void* value_out, std::int64_t* index_out, std::uint64_t n, cudaStream_t s);

/// The per-segment argmax for `kind` (CubKind::row_fixed, row_iterator or offsets; count results
/// of cub_arg_pair_bytes(dt) bytes each to `out`); tmp == nullptr: sets `bytes`.
cudaError_t cub_segmented_argmax(CubKind kind, reduce_tune::DType dt, void* tmp, std::size_t& bytes,
                                 const void* in, const std::int64_t* offsets, std::uint64_t count,
                                 std::uint64_t cols, void* out, cudaStream_t s);

/// Bytes of one (int index, value) result of cub_segmented_argmax for dt.
std::size_t cub_arg_pair_bytes(reduce_tune::DType dt);

/// CPU check of a 1-D result: `value` (dt's bytes) and `index` against the first maximum of
/// host[0, n). Empty string: right; else what was got and expected.
std::string check_cub_argmax(reduce_tune::DType dt, const void* host, std::uint64_t n,
                             const void* value, std::int64_t index);

/// CPU check of count per-segment results `got` (copied from the device): segment i is
/// [offsets[i], offsets[i + 1]) when offsets is given, else [i * cols, (i + 1) * cols).
/// Empty string: all right; else the first wrong segment.
std::string check_cub_segmented_argmax(reduce_tune::DType dt, const void* host,
                                       const std::int64_t* offsets, std::uint64_t count,
                                       std::uint64_t cols, const void* got);

} // namespace rt_bench
