// The input check on the device (tuner/input_hash.h, templates/check/hash.cu): the device's hash
// of an input equals the host's for whole and partial words; a byte written on the device changes
// it; and the sweeps' InputCheck passes an intact input by its hash without reading it back, and
// reads a changed one back and reports it as before.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"
#include "tuner/input_hash.h"
#include "tuner/measure.h"

#include <stdexcept>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

TEST_CASE("input hash on the GPU: the device's hash is the host's; a changed byte changes it",
          "[gpu][input_hash]") {
  Gpu& g = gpu();
  DeviceHash hash(g.nvrtc, g.cache, g.loader.target());
  for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(3), std::uint64_t(1000), std::uint64_t(1) << 20,
                          (std::uint64_t(1) << 24) + 1}) {
    for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
      INFO(n << " " << name(d));
      const HostArray a = make_input(d, n, 21);
      cuda::Buffer b(std::max<std::size_t>(a.bytes.size(), 16));
      cuda::upload_sync(b.get(), a.bytes.data(), a.bytes.size());
      const std::uint64_t host = input_hash(a.bytes.data(), a.bytes.size());
      CHECK(hash(b.get(), a.bytes.size(), g.stream.get()) == host);
      // The last byte (in a partial word where the size is not a multiple of 8), then the first.
      for (std::size_t at : {a.bytes.size() - 1, std::size_t(0)}) {
        RT_CU(cuMemsetD8Async(b.get() + at, static_cast<unsigned char>(a.bytes[at] ^ 0x10), 1, g.stream.get()));
        CHECK(hash(b.get(), a.bytes.size(), g.stream.get()) != host);
        RT_CU(cuMemsetD8Async(b.get() + at, a.bytes[at], 1, g.stream.get()));
      }
      CHECK(hash(b.get(), a.bytes.size(), g.stream.get()) == host);
    }
  }
}

TEST_CASE("input hash on the GPU: the input check passes an intact input by its hash and reads a changed "
          "one back",
          "[gpu][input_hash]") {
  Gpu& g = gpu();
  InputCheck check(g.nvrtc, g.cache, g.loader.target(), g.stream.get());
  const HostArray a = make_input(DType::f32, (1 << 20) + 3, 2);
  const std::uint64_t host = input_hash(a.bytes.data(), a.bytes.size());
  cuda::Buffer b(a.bytes.size());
  cuda::upload_sync(b.get(), a.bytes.data(), a.bytes.size());
  check(b.get(), a, "f32 intact", host);
  CHECK(check.count() == 1);
  CHECK(check.hashed() == 1);
  // Without a host hash: read back.
  check(b.get(), a, "f32 intact", std::nullopt);
  CHECK(check.count() == 2);
  CHECK(check.hashed() == 1);
  // A kernel wrote into it: the hash differs, the read-back finds it and says so.
  RT_CU(cuMemsetD8Async(b.get() + 4 * 12345 + 2, 0x7f, 1, g.stream.get())); // ordered before the hash
  CHECK_THROWS_WITH(check(b.get(), a, "f32 changed", host),
                    Catch::Contains("the input buffer was modified during the sweep of f32 changed"));
  CHECK(check.hashed() == 1);
}
