// reduce-tune bench: the CCCL the benches were built with (cccl.h). A .cu file so that it sees
// the headers nvcc compiles the benches' CUB calls with (bench/CMakeLists.txt puts the chosen
// CCCL ahead of the toolkit's for every bench target).
#include "bench/cccl.h"

#include <cub/version.cuh>
#include <cuda/std/version>

#include <cstdio>

#ifndef RT_BENCH_CCCL_FROM
#define RT_BENCH_CCCL_FROM "the CUDA toolkit"
#endif

namespace rt_bench {

const char* cccl_version() {
  static char buf[32];
  std::snprintf(buf, sizeof buf, "%d.%d.%d", CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
  return buf;
}

int cub_version() { return CUB_VERSION; }

std::string cub_line() {
  return "CCCL " + std::string(cccl_version()) + " (CUB_VERSION " + std::to_string(CUB_VERSION) +
         "), headers from " + RT_BENCH_CCCL_FROM;
}

bool cub_fixed_size_segments() { return CCCL_VERSION >= 3002000; }

} // namespace rt_bench
