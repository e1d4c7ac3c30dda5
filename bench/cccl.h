// reduce-tune bench: the CCCL (CUB) the benches were built with, as they print it.
#pragma once

#include <string>

namespace rt_bench {

/// "3.6.0": CCCL_MAJOR/MINOR/PATCH_VERSION of the headers the benches were compiled with.
const char* cccl_version();
/// CUB_VERSION (MMMmmmpp, 300600 for CCCL 3.6.0).
int cub_version();
/// "CCCL 3.6.0 (CUB_VERSION 300600), headers from REDUCE_TUNE_CCCL_INCLUDE": the header line of
/// every bench. "from the CUDA toolkit" when no newer CCCL was given at configure time.
std::string cub_line();
/// Whether this CCCL has DeviceSegmentedReduce's fixed-size overloads (num_segments,
/// segment_size; CCCL 3.2 and later): the segmented bench's rows and columns use them.
bool cub_fixed_size_segments();

} // namespace rt_bench
