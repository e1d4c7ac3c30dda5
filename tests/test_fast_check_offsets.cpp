// The GPU fast pass's bounds for offsets segments, on the CPU: each distinct segment length gets
// the bound of its own depth and count (tuner/length_classes.h, fast_bounds), and for every
// segment, empty ones and ones of one element included, that bound is never looser than the CPU
// check's, so a result the fast pass passes the CPU check passes. The device side is
// tests/test_gpu_fast_check_offsets.cpp.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "tests/offsets_edges.h"
#include "tests/result_values.h"
#include "tuner/fast_bound.h"
#include "tuner/length_classes.h"
#include "tuner/measure.h"

#include <chrono>
#include <cmath>
#include <thread>

using namespace reduce_tune;
using testing::as_dtype;
using testing::offsets_with_edges;

namespace {


// Each class's length is its results' length, the lengths are distinct and ascending.
void check_classes(const LengthClasses& c, const Segmentation& s) {
  REQUIRE(c.of.size() == s.shape.count);
  for (std::size_t k = 1; k < c.lengths.size(); ++k) REQUIRE(c.lengths[k - 1] < c.lengths[k]);
  for (std::uint64_t i = 0; i < s.shape.count; ++i) {
    REQUIRE(c.of[i] < c.lengths.size());
    REQUIRE(c.lengths[c.of[i]] == s.length(i));
  }
}

// A depth that is no function of the length's magnitude alone: the bounds must follow each length.
std::uint64_t odd_depth(std::uint64_t len) { return 2 + (len * 7) % 11 + len / 5; }

} // namespace

TEST_CASE("fast check offsets: each result's class is its segment's length, by table or by map",
          "[fast_check]") {
  const Segmentation s = offsets_with_edges(3000, 12000, 4);
  const std::optional<LengthClasses> c = length_classes(s, s.shape.count);
  REQUIRE(c);
  check_classes(*c, s);
  CHECK(c->lengths.front() == 0); // empty segments
  CHECK(c->lengths[1] == 1);
  CHECK(c->lengths.size() < s.shape.count / 4); // skewed lengths repeat
  // Too many distinct lengths: none.
  CHECK_FALSE(length_classes(s, c->lengths.size() - 1));
  CHECK(length_classes(s, c->lengths.size()));
  // Few segments over many elements (a map of the lengths, not a table by length).
  const Segmentation few = offsets_with_edges(40, std::uint64_t(1) << 22, 5);
  REQUIRE(s.length(0) == 0);
  const std::optional<LengthClasses> m = length_classes(few, few.shape.count);
  REQUIRE(m);
  check_classes(*m, few);
  CHECK(m->lengths.front() == 0);
  // Rows: one class.
  Segmentation rows;
  rows.problem = Problem::rows;
  rows.shape = {10, 7};
  rows.stride = 7;
  const std::optional<LengthClasses> r = length_classes(rows, 1);
  REQUIRE(r);
  CHECK(r->lengths == std::vector<std::uint64_t>{7});
}

TEST_CASE("fast check offsets: every segment's GPU bound is below the CPU check's, empty segments and "
          "segments of one element included",
          "[fast_check]") {
  const Segmentation s = offsets_with_edges(2000, 9000, 6);
  const std::optional<LengthClasses> c = length_classes(s, s.shape.count);
  REQUIRE(c);
  constexpr Op kBounded[] = {Op::sum,       Op::norm1, Op::mean, Op::sumsq,          Op::dot,  Op::norm2,
                             Op::logsumexp, Op::var,   Op::std_, Op::var_population, Op::std_population};
  std::size_t compared = 0, empty = 0, single = 0, passed = 0;
  for (Op op : kBounded)
    for (DType e : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32}) {
      if (op_unsupported(op, e)) continue;
      const DType d = result_dtype(op, e);
      if (!is_float(d)) continue;
      INFO(name(op) << " on " << name(e));
      const HostArray x = make_input(e, s.input_elements(), 17);
      const std::vector<Reference> refs =
          describe(op).traits.two_inputs
              ? segmented_reference(x, make_input(e, s.input_elements(), second_input_seed(17)), s, op)
              : segmented_reference(x, s, op);
      const std::optional<std::vector<FastBound>> bounds = fast_bounds(op, d, c->lengths, odd_depth);
      REQUIRE(bounds);
      REQUIRE(bounds->size() == c->lengths.size());
      for (std::uint64_t i = 0; i < s.shape.count; ++i) {
        const Reference& r = refs[i];
        const std::uint64_t len = s.length(i), depth = odd_depth(len);
        REQUIRE(r.count == double(len));
        // NaN and infinite references are decided alike by both (NaN only for NaN): no bound.
        if (!std::isfinite(r.exact) || !std::isfinite(r.value.to_double())) continue;
        INFO("result " << i << ": " << len << " elements, exact " << r.exact);
        const FastBound& b = (*bounds)[c->of[i]];
        const float scale = scale_down(fast_scale(op, r));
        const double fast = fast_limit(b, fast_want(r), scale);
        const double cpu = check(r, as_dtype(r.exact * (1 + 1e-3) + 1e-3, d), op, depth).bound;
        REQUIRE(fast <= cpu);
        // Results on both sides of the fast bound: what it passes, the CPU check passes.
        for (double t : {0.0, 0.999999, 1.000001})
          for (double sign : {-1.0, 1.0}) {
            const Scalar got = as_dtype(r.exact + sign * t * fast, d);
            if (!fast_within(got.to_double(), fast_want(r), scale, b)) continue;
            REQUIRE(check(r, got, op, depth).ok);
            ++passed;
          }
        ++compared, empty += len == 0, single += len == 1;
      }
    }
  CHECK(compared > 50000);
  CHECK(empty > 100);
  CHECK(single > 100);
  CHECK(passed > compared);
}

// Not a test (hidden; run it by its tag): what the fast pass costs the host for an offsets point
// (its length classes, once a point) and for each measurement (a depth and a bound a distinct
// length), at the offsets sweep's large shapes.
TEST_CASE("fast check offsets: the host's share of the fast pass at 2^20 and 2^24 segments",
          "[.][fast_check_timing]") {
  const std::optional<Config> c = parse_key("segments_binned.b256.w32.u2.v4.g4.atomic");
  REQUIRE(c);
  Target t; // float32 sums on an H100's 132 SMs
  t.problem = Problem::segments;
  for (int e : {16, 20, 24}) {
    Segmentation s;
    s.problem = Problem::segments;
    s.offsets = skewed_offsets(std::uint64_t(1) << e, std::uint64_t(1) << 24, 1);
    s.shape = {std::uint64_t(1) << e, std::uint64_t(1) << (24 - e)};
    const auto tl = std::chrono::steady_clock::now(); // a baseline: one pass over the offsets
    const std::uint64_t longest = longest_segment(s.offsets);
    const double pass_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tl).count();
    const auto t0 = std::chrono::steady_clock::now();
    const std::optional<LengthClasses> classes = length_classes(s, s.shape.count / 32);
    const double classify_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!classes) {
      WARN("2^" << e << " segments over 2^24: more than one distinct length in 32 results (the CPU checks)");
      continue;
    }
    const auto depth = [&](std::uint64_t len) { return segment_depth(*c, t, s.shape, len); };
    const auto t1 = std::chrono::steady_clock::now();
    const std::optional<std::vector<FastBound>> b = fast_bounds(Op::sum, DType::f32, classes->lengths, depth);
    const double bounds_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    REQUIRE(b);
    WARN("2^" << e << " segments over 2^24: " << classes->lengths.size() << " distinct lengths, classes " << classify_ms
              << " ms a point, bounds " << bounds_ms << " ms a measurement (" << std::thread::hardware_concurrency()
              << " threads); longest_segment (" << longest << ") " << pass_ms << " ms on one thread");
  }
}
