// The staged upload on the GPU (tuner/upload.h): what lands on the device is the host's bytes for
// sizes from 1 byte to 300 MiB (whole chunks, a tail, an odd destination, growing buffers), after
// the work queued on the stream it is told to follow, staged from kStageMinBytes on; and a sweep
// whose inputs go through it passes its checks.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"
#include "db/store.h"
#include "tuner/sweep.h"
#include "tuner/upload.h"

#include <unistd.h>

#include <filesystem>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

/// Bytes that differ from chunk to chunk and from their neighbours (a chunk sent twice or to the
/// wrong place shows).
std::vector<unsigned char> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v[i] = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

std::vector<unsigned char> download(CUdeviceptr p, std::size_t n) {
  std::vector<unsigned char> v(n);
  if (n) RT_CU(cuMemcpyDtoH(v.data(), p, n));
  return v;
}

} // namespace

TEST_CASE("upload: the device holds the host's bytes, 1 byte to 300 MiB", "[gpu][upload]") {
  gpu(); // the context
  StagedUpload up(kStageChunkBytes, kStageSlots, 0); // every size staged; the buffers grow with them
  std::uint64_t sent = 0;
  const std::size_t MiB = std::size_t(1) << 20;
  for (std::size_t n : {std::size_t(1), std::size_t(4099), kStageChunkBytes, 64 * MiB + 3, 300 * MiB}) {
    for (std::size_t at : {std::size_t(0), std::size_t(1)}) { // at 1: a destination off its alignment
      if (at && n > 64 * MiB + 3) continue; // the largest once: its pattern takes most of the test
      INFO(n << " bytes at offset " << at);
      const std::vector<unsigned char> host = pattern(n, n + at);
      cuda::Buffer b(n + at);
      up(b.get() + at, host.data(), n);
      sent += n;
      CHECK(download(b.get() + at, n) == host);
    }
  }
  CHECK(up.staged_bytes() == sent);
  CHECK(up.bytes() == sent);
  CHECK(up.seconds() > 0);
  up(0, nullptr, 0); // nothing to copy: no call at all
  CHECK(up.bytes() == sent);
}

TEST_CASE("upload: below kStageMinBytes straight from pageable memory, from it on staged", "[gpu][upload]") {
  gpu();
  StagedUpload up;
  for (std::size_t n : {std::size_t(1000), kStageMinBytes - 1, kStageMinBytes, 3 * kStageMinBytes + 1}) {
    INFO(n << " bytes");
    const std::vector<unsigned char> host = pattern(n, 3 * n);
    cuda::Buffer b(n);
    const std::uint64_t staged = up.staged_bytes();
    up(b.get(), host.data(), n);
    CHECK(download(b.get(), n) == host);
    CHECK(up.staged_bytes() - staged == (n >= kStageMinBytes ? n : 0));
  }
}

TEST_CASE("upload: many small chunks through two slots, after the work queued on a stream", "[gpu][upload]") {
  Gpu& g = gpu();
  StagedUpload up(4096, 2, 0); // 257 chunks: every slot reused many times
  const std::size_t n = 256 * 4096 + 5;
  const std::vector<unsigned char> host = pattern(n, 7);
  cuda::Buffer b(n);
  // A fill queued on the stream first: the upload must land after it, not under it.
  RT_CU(cuMemsetD8Async(b.get(), 0xAB, n, g.stream.get()));
  up(b.get(), host.data(), n, g.stream.get());
  g.stream.synchronize();
  CHECK(download(b.get(), n) == host);
}

TEST_CASE("upload: a sweep's inputs uploaded through the staging buffers pass their checks", "[gpu][upload]") {
  std::string dir = (std::filesystem::temp_directory_path() / "rt-upload-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  SweepOptions o;
  o.dtypes = {DType::f32};
  o.ops = {Op::sum, Op::max};
  // One chunk, then two chunks and a tail (64 MiB + 12 bytes of float32).
  o.sizes = {1000, (std::uint64_t(1) << 24) + 3};
  o.reps = 3;
  o.search = Strategy::guided;
  o.budget = *parse_budget("4");
  o.db_path = dir + "/upload.db";
  const SweepResult r = sweep(o);
  REQUIRE_FALSE(r.interrupted);
  REQUIRE_FALSE(r.measurements.empty());
  for (const auto& m : r.measurements) {
    INFO(m.key << " n=" << m.n << ": " << m.error);
    CHECK(m.valid); // every result matched its CPU reference
  }
  CHECK(r.times.inputs == 2);
  CHECK(r.times.upload_bytes == (1000 + (std::uint64_t(1) << 24) + 3) * 4);
  CHECK(r.times.upload_staged_bytes == ((std::uint64_t(1) << 24) + 3) * 4); // 1000 elements: directly
  // Both parts of the input phase, not beside it.
  CHECK(r.times.upload_s > 0);
  CHECK(r.times.upload_s + r.times.input_wait_s <= r.times.input_s);
  CHECK(r.times.inputs_hashed == 2); // each input's hash on the device is the host's
  std::filesystem::remove_all(dir);
}
