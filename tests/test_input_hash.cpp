// The input check's host hash (tuner/input_hash.h): the same on any number of threads, changed by
// any changed byte, and dependent on where a word lies. The device's is
// tests/test_gpu_input_hash.cpp.
#include <catch2/catch.hpp>

#include "kernels/nvrtc.h"
#include "tuner/fast_check.h"
#include "tuner/input_hash.h"
#include "tuner/reference.h"

#include <cstring>
#include <random>
#include <vector>

using namespace reduce_tune;

namespace {

std::vector<unsigned char> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> b(n);
  for (auto& c : b) c = static_cast<unsigned char>(rng());
  return b;
}

} // namespace

TEST_CASE("input hash: the same on any number of threads, whole words or not", "[input_hash]") {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(9),
                        std::size_t(1000003), std::size_t(1) << 23}) {
    INFO(n << " bytes");
    const std::vector<unsigned char> b = random_bytes(n, n);
    const std::uint64_t one = input_hash(b.data(), n, 1);
    for (unsigned t : {2u, 3u, 16u, 61u}) CHECK(input_hash(b.data(), n, t) == one);
    CHECK(input_hash(b.data(), n) == one);
  }
  // A sweep's input: the same data hash alike, other data not.
  const HostArray a = make_input(DType::f32, 1 << 20, 3), same = make_input(DType::f32, 1 << 20, 3);
  const HostArray other = make_input(DType::f32, 1 << 20, 4);
  CHECK(input_hash(a.bytes.data(), a.bytes.size()) == input_hash(same.bytes.data(), same.bytes.size(), 5));
  CHECK(input_hash(a.bytes.data(), a.bytes.size()) != input_hash(other.bytes.data(), other.bytes.size()));
}

TEST_CASE("input hash: any flipped bit changes it, and so does moving a word", "[input_hash]") {
  const std::size_t n = 4096 + 5; // a partial last word
  std::vector<unsigned char> b = random_bytes(n, 1);
  const std::uint64_t h = input_hash(b.data(), n, 4);
  std::size_t flips = 0;
  for (std::size_t at : {std::size_t(0), std::size_t(7), std::size_t(8), std::size_t(2049), n - 5, n - 1})
    for (int bit = 0; bit < 8; ++bit) {
      INFO("byte " << at << ", bit " << bit);
      b[at] ^= static_cast<unsigned char>(1u << bit);
      CHECK(input_hash(b.data(), n, 4) != h);
      b[at] ^= static_cast<unsigned char>(1u << bit);
      ++flips;
    }
  CHECK(input_hash(b.data(), n, 4) == h);
  CHECK(flips == 48);
  // Every byte in turn, one value each (a kernel that wrote anywhere).
  for (std::size_t at = 0; at < n; ++at) {
    b[at] = static_cast<unsigned char>(b[at] + 1);
    REQUIRE(input_hash(b.data(), n, 1) != h);
    b[at] = static_cast<unsigned char>(b[at] - 1);
  }
  // Two different words swapped: the same bytes elsewhere.
  REQUIRE(std::memcmp(b.data(), b.data() + 8, 8) != 0);
  std::vector<unsigned char> swapped = b;
  std::memcpy(swapped.data(), b.data() + 8, 8);
  std::memcpy(swapped.data() + 8, b.data(), 8);
  CHECK(input_hash(swapped.data(), n, 4) != h);
  // Zeros are not the empty input's hash alone: their length counts through the word index.
  const std::vector<unsigned char> z8(8, 0), z16(16, 0);
  CHECK(input_hash(z8.data(), 8, 1) != input_hash(z16.data(), 16, 1));
}

TEST_CASE("input hash: the device's hash kernel compiles with NVRTC", "[input_hash][nvrtc]") {
  Nvrtc nvrtc;
  const std::string source(check_template_source("check/hash.cu"));
  const Compiled ptx = nvrtc.compile(source, "hash.cu", nvrtc.parse_target("compute_90"));
  CHECK(ptx.image.find(".entry rt_input_hash") != std::string::npos);
  for (int cc : {75, 90}) CHECK_FALSE(nvrtc.compile(source, "hash.cu", nvrtc.target_for(cc)).image.empty());
}
