// reduce-tune: the input check's hash, on the host and the device (tuner/input_hash.h).
#include "tuner/input_hash.h"

#include "tuner/fast_check.h"
#include "tuner/mix.h"
#include "tuner/parallel.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace reduce_tune {
namespace {

// templates/check/hash.cu's word key (and its rt_mix is tuner/mix.h's mix).
constexpr std::uint64_t kWordKey = 0xd6e8feb86659fd93ull;

} // namespace

std::uint64_t input_hash(const void* data, std::size_t bytes, unsigned threads) {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::uint64_t words = (bytes + 7) / 8;
  std::vector<std::uint64_t> part(std::max(1u, threads), 0);
  parallel_ranges(words, unsigned(part.size()), [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    std::uint64_t sum = 0;
    for (std::uint64_t k = lo; k < hi; ++k) {
      std::uint64_t w = 0;
      std::memcpy(&w, p + 8 * k, std::min<std::size_t>(8, bytes - 8 * k)); // little-endian hosts
      sum += mix(w ^ (k * kWordKey));
    }
    part[t] = sum;
  });
  std::uint64_t h = 0;
  for (std::uint64_t s : part) h += s;
  return h;
}

std::uint64_t input_hash(const void* data, std::size_t bytes) {
  const std::uint64_t words = (bytes + 7) / 8;
  return input_hash(data, bytes, unsigned(std::clamp<std::uint64_t>(words >> 20, 1, host_cores())));
}

DeviceHash::DeviceHash(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target)
    : nvrtc_(nvrtc), cache_(cache), target_(std::move(target)) {}

DeviceHash::~DeviceHash() = default;

std::uint64_t DeviceHash::operator()(CUdeviceptr data, std::size_t bytes, CUstream s) {
  if (!module_) {
    const std::string source = "// reduce-tune: input hash\n" + std::string(check_template_source("check/hash.cu"));
    module_ = std::make_unique<cuda::Module>(cache_.get(nvrtc_, source, target_).image);
  }
  if (!out_.get()) out_ = cuda::Buffer(sizeof(std::uint64_t));
  RT_CU(cuMemsetD32Async(out_.get(), 0, 2, s));
  CUdeviceptr out = out_.get();
  std::uint64_t n = bytes;
  constexpr unsigned kBlock = 256;
  const std::uint64_t words = (bytes + 7) / 8;
  const auto grid = unsigned(std::clamp<std::uint64_t>((words + kBlock - 1) / kBlock, 1, 2048));
  void* args[] = {&data, &n, &out};
  cuda::launch(module_->function("rt_input_hash"), grid, kBlock, 0, s, args);
  std::uint64_t h = 0;
  RT_CU(cuMemcpyDtoHAsync(&h, out, sizeof h, s));
  RT_CU(cuStreamSynchronize(s));
  return h;
}

} // namespace reduce_tune
