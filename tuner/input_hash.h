// reduce-tune: the sweeps' input check by hash. After an input has served its shapes the sweep
// checks that no kernel wrote into it; reading a 1 GiB input back and comparing it took most of a
// second. Instead the device hashes its copy (templates/check/hash.cu) and the host compares that
// word with the hash it computed of the data it uploaded, on the cores that made the input; only
// where they differ is the input read back, and the check reports what changed as before.
#pragma once

#include "kernels/driver.h"
#include "kernels/nvrtc.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace reduce_tune {

/// The hash of `bytes` bytes at `data`: the sum mod 2^64 of mix(w_k ^ k K) over their 8-byte
/// little-endian words w_k, the last one padded with zeros. Any change within one word changes it
/// (mix is a bijection and the other terms stay); the same value on any number of `threads` (a
/// sum of terms that each depend on one word and its index).
std::uint64_t input_hash(const void* data, std::size_t bytes, unsigned threads);
/// The same on one thread a core, from 2^20 words on.
std::uint64_t input_hash(const void* data, std::size_t bytes);

/// input_hash of device memory, on the device: compiled with `nvrtc` for `target` through `cache`
/// (as the sweep's kernels) and loaded into the current context on first use.
class DeviceHash {
public:
  DeviceHash(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target);
  ~DeviceHash();
  /// The hash of `bytes` bytes at `data` (the start of an allocation), computed on `s` and waited for.
  std::uint64_t operator()(CUdeviceptr data, std::size_t bytes, CUstream s);

private:
  const Nvrtc& nvrtc_;
  CompileCache& cache_;
  ArchTarget target_;
  std::unique_ptr<cuda::Module> module_;
  cuda::Buffer out_;
};

} // namespace reduce_tune
