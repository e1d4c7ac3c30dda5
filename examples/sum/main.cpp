// reduce-tune example: sums device arrays with the tuned reduction and shows the configuration
// that was chosen for the size. Exit status: 0 when the sums match the CPU's, 1 when they do not
// (or on an error), 77 when this machine has no GPU (nothing to run: skipped).
#include <reduce_tune/reducer.h>

#include <cuda_runtime.h>

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

/// Copies `host` to new device memory (the caller's own allocation, as in any CUDA program).
template <typename T> T* to_device(const std::vector<T>& host) {
  T* d = nullptr;
  if (cudaMalloc(&d, host.size() * sizeof(T)) != cudaSuccess ||
      cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess)
    throw std::runtime_error("cudaMalloc/cudaMemcpy failed");
  return d;
}

void show(const char* what, const reduce_tune::Choice& c) {
  std::printf("  %s: %s, %s match", what, reduce_tune::key(c.config).c_str(),
              std::string(reduce_tune::name(c.match)).c_str());
  if (c.match != reduce_tune::Match::builtin)
    std::printf(" (tuned at n = %" PRIu64 " on %s: %.1f us, %.0f GB/s)", c.tuned_n,
                c.device_name.c_str(), c.median_us, c.gbps);
  std::printf("\n");
  if (!c.note.empty()) std::printf("    %s\n", c.note.c_str());
}

} // namespace

int main() {
  std::string why;
  if (!reduce_tune::gpu_available(&why)) {
    std::printf("no GPU: skipped (%s)\n", why.c_str());
    return 77;
  }
  try {
    const std::uint64_t n = 3 * (1u << 20) + 17; // between the sizes a sweep tunes at
    std::mt19937 gen(2024);
    std::vector<float> x(n);
    std::vector<std::int32_t> k(n);
    std::uniform_real_distribution<float> real(0.0f, 1.0f);
    std::uniform_int_distribution<std::int32_t> integer(-1000, 1000);
    double x_sum = 0;
    std::int64_t k_sum = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      x[i] = real(gen), x_sum += x[i];
      k[i] = integer(gen), k_sum += k[i];
    }
    float* d_x = to_device(x);
    std::int32_t* d_k = to_device(k);

    // The library: a reducer for GPU 0 with the default tuning store; device pointers in.
    reduce_tune::Reducer reducer;
    const float got_x = reducer.sum(d_x, n);
    const std::int32_t got_k = reducer.sum(d_k, n);
    const reduce_tune::Choice chosen = reducer.config_for(reduce_tune::DType::f32,
                                                          reduce_tune::Op::sum, n);

    std::printf("%s, n = %" PRIu64 "\n", reducer.device_name().c_str(), n);
    std::printf("float32 sum %.6g (CPU %.6g), int32 sum %d (CPU %" PRId64 ")\n", got_x, x_sum,
                got_k, k_sum);
    show("float32 sum", chosen);
    show("int32 sum", reducer.config_for(reduce_tune::DType::i32, reduce_tune::Op::sum, n));
    cudaFree(d_x);
    cudaFree(d_k);
    // A float32 sum of n values in [0, 1) is good to far better than 1e-4 relative whatever the
    // order; the integers are exact (and small enough not to wrap).
    const bool ok = std::fabs(got_x - x_sum) <= 1e-4 * x_sum && got_k == k_sum;
    std::printf("%s\n", ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
