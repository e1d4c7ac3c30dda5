// The sweeps' inputs on the host's cores: make_input and skewed_offsets give the same data on any
// number of threads (so a store's seed names the same input on a 2-core and a 16-core host), and
// skewed_offsets is the serial layout it replaced, bit for bit; a layout drawn ahead is the one
// drawn in line; buffers that are not zeroed first are written in full.
#include <catch2/catch.hpp>

#include "tuner/mix.h"
#include "tuner/offsets_seed.h"
#include "tuner/reference.h"
#include "tuner/sum_prefix.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

TEST_CASE("parallel inputs: the longest segment is the serial one's on any number of threads", "[reference][parallel_inputs]") {
  for (std::uint64_t segments : {std::uint64_t(0), std::uint64_t(1), std::uint64_t(5000), (std::uint64_t(1) << 21) + 7}) {
    INFO(segments << " segments");
    const std::vector<std::int64_t> off = skewed_offsets(segments, segments * 3 + 1, 11);
    std::int64_t serial = 0;
    for (std::size_t i = 0; i + 1 < off.size(); ++i) serial = std::max(serial, off[i + 1] - off[i]);
    CHECK(longest_segment(off) == std::uint64_t(serial));
  }
  CHECK(longest_segment({}) == 0);
  CHECK(longest_segment({0, 3, 3, 10, 12}) == 7);
}

TEST_CASE("parallel inputs: a small offsets shape is drawn from the heaviest of its draws", "[reference][parallel_inputs]") {
  const Shape small{1 << 9, 1 << 7}, large{1 << 10, 1 << 10}; // 2^16 and 2^20 elements
  const std::uint64_t seed = 77;
  std::uint64_t heaviest = 0;
  for (int k = 0; k < 8; ++k)
    heaviest = std::max(heaviest, longest_segment(skewed_offsets(small.count, small.elements(),
                                                                 seed + std::uint64_t(k) * 0x9e3779b97f4a7c15ull)));
  CHECK(longest_segment(skewed_offsets(small.count, small.elements(), shape_seed(Problem::segments, small, seed))) ==
        heaviest);
  CHECK(shape_seed(Problem::rows, small, seed) == seed); // rows and columns: the seed as given
  CHECK(shape_seed(Problem::segments, large, seed) == seed); // 2^20 elements and more: one draw
}

TEST_CASE("parallel inputs: inputs and prefix sums write every byte of buffers not zeroed first", "[reference][parallel_inputs]") {
  // HostBytes (and the prefix sums' vectors) keep what the heap held where they are resized; made
  // over memory dirtied with one pattern and then another, an unwritten byte would differ.
  const auto dirty = [](std::size_t bytes, unsigned char fill) {
    HostBytes dirt(bytes);
    std::memset(dirt.data(), fill, dirt.size());
  };
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::f64}) {
    for (std::uint64_t n : {std::uint64_t(3), std::uint64_t(1000), std::uint64_t(4099), std::uint64_t(100003)}) {
      INFO(name(d) << ", " << n << " elements");
      const auto over = [&](unsigned char fill) {
        dirty(n * size_of(d), fill);
        return make_input(d, n, 5, 2).bytes;
      };
      const HostBytes a = over(0xA5), b = over(0x5A);
      CHECK(a == b);
      CHECK(a == make_input(d, n, 5, 1).bytes);
      if (d != DType::f32 && d != DType::i32) continue;
      // The prefix sums (16 bytes an element): every segment's sum is the element-by-element one.
      const HostArray x = make_input(d, n, 5);
      Segmentation seg;
      seg.problem = Problem::segments;
      seg.offsets = skewed_offsets(7, n, 3);
      seg.shape = {7, std::max<std::uint64_t>(1, n / 7)};
      const std::vector<Reference> want = segmented_reference(x, seg, Op::sum);
      for (unsigned char fill : {0xA5, 0x5A}) {
        dirty((n + 1) * 8, fill);
        const SumPrefix prefix(x);
        REQUIRE(prefix.serves(seg, Op::sum));
        std::vector<Reference> got;
        prefix.reference(seg, got);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
          CHECK(got[i].value == want[i].value);
          CHECK(got[i].exact == want[i].exact);
        }
      }
    }
  }
}
