// The sweeps' inputs on the host's cores: make_input and skewed_offsets give the same data on any
// number of threads (so a store's seed names the same input on a 2-core and a 16-core host), and
// skewed_offsets is the serial layout it replaced, bit for bit.
#include <catch2/catch.hpp>

#include "tuner/mix.h"
#include "tuner/reference.h"

#include <algorithm>
#include <cmath>

using namespace reduce_tune;

namespace {

// skewed_offsets as it was made on one thread, element by element.
std::vector<std::int64_t> serial_offsets(std::uint64_t segments, std::uint64_t total, std::uint64_t seed) {
  std::vector<std::int64_t> off(segments + 1, 0);
  if (segments == 0) return off;
  std::vector<double> len(segments);
  double sum = 0;
  for (std::uint64_t i = 0; i < segments; ++i) {
    const double u = double((mix(seed * 0x2545f4914f6cdd1dull + i) >> 11) + 1) / double(1ull << 53);
    len[i] = std::pow(u, -1 / 1.2) - 1;
    sum += len[i];
  }
  const double scale = sum > 0 ? double(total) / sum : 0;
  std::uint64_t at = 0;
  for (std::uint64_t i = 0; i < segments; ++i) {
    at = std::min<std::uint64_t>(total, at + std::uint64_t(len[i] * scale));
    off[i + 1] = std::int64_t(at);
  }
  off[segments] = std::int64_t(total);
  return off;
}

} // namespace

TEST_CASE("parallel inputs: the same seed gives the same input on 1, 2, 3 and 16 threads", "[reference][parallel_inputs]") {
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::f64, DType::i64}) {
    const std::uint64_t n = (std::uint64_t(1) << 20) + 3;
    INFO(name(d));
    const HostArray one = make_input(d, n, 99, 1);
    for (unsigned t : {2u, 3u, 16u}) CHECK(make_input(d, n, 99, t).bytes == one.bytes);
    CHECK(make_input(d, n, 99).bytes == one.bytes);
    // Random, and no element zero.
    CHECK(make_input(d, n, 100, 2).bytes != one.bytes);
    visit(d, [&](auto tag) {
      using T = decltype(tag);
      const T* x = one.data<T>();
      CHECK(std::none_of(x, x + n, [](T v) { return double(widen(v)) == 0; }));
    });
  }
}

TEST_CASE("parallel inputs: skewed offsets are the serial layout on any number of threads", "[reference][parallel_inputs]") {
  const struct {
    std::uint64_t segments, total;
  } shapes[] = {{1, 100}, {7, 3}, {1000, 1 << 16}, {1 << 18, 1 << 20}, {1 << 20, 1 << 19}, {(1 << 17) + 5, 1 << 24}};
  for (const auto& s : shapes)
    for (std::uint64_t seed : {std::uint64_t(1), std::uint64_t(0x9e3779b97f4a7c15)}) {
      INFO(s.segments << " segments over " << s.total << ", seed " << seed);
      const std::vector<std::int64_t> serial = serial_offsets(s.segments, s.total, seed);
      for (unsigned t : {1u, 2u, 3u, 16u}) CHECK(skewed_offsets(s.segments, s.total, seed, t) == serial);
      const std::vector<std::int64_t> off = skewed_offsets(s.segments, s.total, seed);
      CHECK(off == serial);
      REQUIRE(off.size() == s.segments + 1);
      CHECK(off.front() == 0);
      CHECK(std::uint64_t(off.back()) == s.total);
      CHECK(std::is_sorted(off.begin(), off.end()));
    }
}
