// reduce-tune bench: the shared GPU side (bench/timer.cuh).
#include "bench/timer.cuh"

#include <filesystem>

namespace rt_bench {

void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    throw CudaRuntimeError(std::filesystem::path(file).filename().string() + ":" +
                           std::to_string(line) + ": " + call + ": " + cudaGetErrorName(e) + " (" +
                           cudaGetErrorString(e) + ")");
}

namespace {

/// Spins for `ns` nanoseconds of the GPU's global timer: holds the stream while the host
/// enqueues the timed call, so the events measure the GPU's work, not the host's.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

} // namespace

void launch_spin(cudaStream_t s, unsigned long long ns) {
  spin_kernel<<<1, 32, 0, s>>>(ns);
  CK(cudaGetLastError());
}

Device open_device(int ordinal) {
  Device dev;
  dev.ordinal = ordinal;
  CK(cudaSetDevice(ordinal));
  CK(cudaFree(nullptr)); // creates the primary context and makes it current on this thread
  CK(cudaGetDeviceProperties(&dev.prop, ordinal));
  CK(cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, ordinal));
  CK(cudaDeviceGetAttribute(&dev.l2_bytes, cudaDevAttrL2CacheSize, ordinal));
  CK(cudaDeviceGetAttribute(&dev.mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  CK(cudaDeviceGetAttribute(&dev.bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal));
  dev.peak_gbps = 2.0 * dev.mem_clock_khz * 1e3 * dev.bus_bits / 8 / 1e9;
  CK(cudaDriverGetVersion(&dev.driver_version));
  CK(cudaRuntimeGetVersion(&dev.runtime_version));
  return dev;
}

Timer::Timer(const Device& dev, const TimerOptions& o) : o_(o) {
  CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CK(cudaEventCreate(&start_));
  CK(cudaEventCreate(&stop_));
  flush_bytes_ = std::size_t(2) * std::size_t(std::max(dev.l2_bytes, 1 << 20));
  CK(cudaMalloc(&flush_, flush_bytes_));
}

Timer::~Timer() {
  cudaFree(flush_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaStreamDestroy(stream_);
}

} // namespace rt_bench
