// reduce-tune example, the CUDA-language twin of main.cpp: a .cu file, compiled by nvcc with its
// default language standard, that has its own kernel fill the data and reduces it with the
// library on the program's stream. Exit status: 0 when every result matches the CPU's, 1 when
// one does not (or on an error), 77 when this machine has no GPU (nothing to run: skipped).
#include <reduce_tune/reducer.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

/// The data, the same on both sides: float x[i] in [-1, 1), and small integers.
__host__ __device__ float value(std::uint64_t i) {
  std::uint32_t h = std::uint32_t(i) * 2654435761u;
  h ^= h >> 15;
  return float(h & 0xffffff) / float(1 << 23) - 1.0f;
}
__host__ __device__ std::int32_t ivalue(std::uint64_t i) { return std::int32_t(value(i) * 1000.0f); }

__global__ void fill(float* x, std::int32_t* k, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    x[i] = value(i);
    k[i] = ivalue(i);
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

} // namespace

int main() {
  std::string why;
  if (!reduce_tune::gpu_available(&why)) {
    std::printf("no GPU: skipped (%s)\n", why.c_str());
    return 77;
  }
  try {
    const std::uint64_t n = 5 * (1u << 20) + 3;
    double x_sum = 0, x_abs = 0;
    float x_max = -INFINITY;
    std::int64_t k_sum = 0;
    std::int32_t k_min = INT32_MAX;
    for (std::uint64_t i = 0; i < n; ++i) {
      x_sum += value(i), x_abs += std::fabs(value(i)), x_max = std::fmax(x_max, value(i));
      k_sum += ivalue(i), k_min = std::min(k_min, ivalue(i));
    }

    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    float *d_x = nullptr, *d_max = nullptr;
    std::int32_t* d_k = nullptr;
    check(cudaMalloc(&d_x, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&d_k, n * sizeof(std::int32_t)), "cudaMalloc");
    check(cudaMalloc(&d_max, sizeof(float)), "cudaMalloc");
    fill<<<256, 256, 0, stream>>>(d_x, d_k, n);
    check(cudaGetLastError(), "fill");

    // The library, on the program's stream (a cudaStream_t is a CUstream): ordered after fill.
    reduce_tune::Reducer reducer;
    const float got_sum = reducer.sum(d_x, n, stream);
    const std::int32_t got_ksum = reducer.sum(d_k, n, stream);
    const std::int32_t got_kmin = reducer.min(d_k, n, stream);
    reducer.reduce_async(reduce_tune::DType::f32, reduce_tune::Op::max, d_x, n, d_max, stream);
    float got_max = 0;
    check(cudaMemcpyAsync(&got_max, d_max, sizeof got_max, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

    std::printf("%s, n = %" PRIu64 ", compiled as C++ %ld by nvcc\n", reducer.device_name().c_str(), n,
                long(__cplusplus));
    std::printf("float32 sum %.6g (CPU %.6g), max %.6g (CPU %.6g); int32 sum %d (CPU %" PRId64
                "), min %d (CPU %d)\n",
                got_sum, x_sum, got_max, x_max, got_ksum, k_sum, got_kmin, k_min);
    check(cudaFree(d_x), "cudaFree");
    check(cudaFree(d_k), "cudaFree");
    check(cudaFree(d_max), "cudaFree");
    check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    // In any of the library's summation orders an element meets fewer than 1000 dependent float
    // roundings (2^-24 each), so the error is below 1e-4 of the sum of magnitudes; the rest is
    // exact (integer sums wrap in both).
    const bool ok = std::fabs(got_sum - x_sum) <= 1e-4 * x_abs && got_max == x_max &&
                    got_ksum == std::int32_t(std::uint32_t(k_sum)) && got_kmin == k_min;
    std::printf("%s\n", ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
