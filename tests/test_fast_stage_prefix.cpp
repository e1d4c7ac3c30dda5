// The GPU check's data made straight from an input's prefix sums (FastCheck::stage from a
// SumPrefix), without every result's Reference: byte for byte the FastStage that FastCheck::stage
// makes from SumPrefix::reference's References, for rows and offsets sums of every dtype the prefix
// sums serve, around kMinResults results, with empty segments; and no stage where those References
// give none (or the prefix sums do not serve the shape).
#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "tuner/fast_check.h"
#include "tuner/reference.h"
#include "tests/segmentation_fixture.h"
#include "tuner/sum_prefix.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

using namespace reduce_tune;

namespace {

using testing::rows_of;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every field of two stages that apply, byte for byte (the values and scales as bytes: NaN too).
void require_same(const FastStage& got, const FastStage& want) {
  REQUIRE(got.applies == want.applies);
  CHECK(got.decided == want.decided);
  if (!want.applies) return; // the rest is not read
  CHECK(got.shape == want.shape);
  CHECK(got.op == want.op);
  CHECK(got.result == want.result);
  CHECK(got.form == want.form);
  CHECK(same_bits(got.count, want.count));
  CHECK(got.length == want.length);
  CHECK(got.by_class == want.by_class);
  if (want.by_class) {
    CHECK(got.classes.lengths == want.classes.lengths);
    CHECK(got.classes.of == want.classes.of);
  }
  REQUIRE(got.want.size() == want.want.size());
  REQUIRE(got.scale.size() == want.scale.size());
  CHECK(std::memcmp(got.want.data(), want.want.data(), want.want.size()) == 0);
  CHECK(std::memcmp(got.scale.data(), want.scale.data(), want.scale.size() * sizeof(float)) == 0);
}

Segmentation offsets(std::vector<std::int64_t> o) {
  Segmentation s;
  s.problem = Problem::segments;
  const std::uint64_t count = o.size() - 1;
  s.shape = {count, count ? std::uint64_t(o.back()) / count : 0};
  s.offsets = std::move(o);
  return s;
}

// `count` segments of lengths cycling through `lengths` (0: empty), from offset 0.
Segmentation cycled(std::uint64_t count, const std::vector<std::uint64_t>& lengths) {
  std::vector<std::int64_t> o(count + 1, 0);
  for (std::uint64_t i = 0; i < count; ++i) o[i + 1] = o[i] + std::int64_t(lengths[i % lengths.size()]);
  return offsets(std::move(o));
}

// Both ways of staging `s` (the one from the prefix sums into a stage reused from point to point),
// for `result` and `min_results`, and the stage of the element-by-element references of `x` (the
// prefix sums' input) too; returns whether it applied.
bool same_stage(const HostArray& x, const SumPrefix& p, const Segmentation& s, DType result, std::uint64_t min_results,
                FastStage& reused) {
  REQUIRE(p.serves(s, Op::sum));
  std::vector<Reference> refs;
  p.reference(s, refs);
  FastStage want, general;
  const bool applies = FastCheck::stage(refs, s, Op::sum, result, min_results, want);
  CHECK(FastCheck::stage(p, s, Op::sum, result, min_results, reused) == applies);
  require_same(reused, want);
  CHECK(FastCheck::stage(segmented_reference(x, s, Op::sum), s, Op::sum, result, min_results, general) == applies);
  require_same(reused, general);
  return applies;
}

} // namespace

TEST_CASE("fast stage from prefix sums: byte for byte the stage of the prefix sums' References",
          "[fast_check][fast_stage][sum_prefix]") {
  const std::uint64_t n = std::uint64_t(1) << 16;
  const std::uint64_t least = FastCheck::kMinResults;
  FastStage reused; // one for every point, as the sweep's
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u32, DType::bf16, DType::f16}) {
    const HostArray x = make_input(d, n, 21 + std::uint64_t(d));
    const SumPrefix p(x);
    REQUIRE(p.exact()); // the test data's sums are exact in double
    const DType result = result_dtype(Op::sum, d);
    std::size_t applied = 0;
    // Rows: around kMinResults results (below it no stage), one result, none.
    for (Shape sh : {Shape{least, 16}, Shape{least - 1, 16}, Shape{least + 1, 15}, Shape{n, 1}, Shape{n / 3, 3},
                     Shape{1, n}, Shape{0, 16}}) {
      INFO(name(d) << " rows " << sh.count << " x " << sh.length);
      applied += same_stage(x, p, rows_of(sh), result, least, reused);
      CHECK(reused.decided == (sh.count > 0 && sh.count < least)); // too few: refused whatever the References
    }
    // Offsets: few distinct lengths, empty segments among them (bounds by length class), around
    // kMinResults; the skewed lengths of the sweep (too many lengths at this count: no stage for
    // bounded results, exact ones need no classes); a decreasing pair, which is empty.
    for (std::uint64_t count : {least - 1, least, least + 1, 2 * least}) {
      INFO(name(d) << " cycled offsets " << count);
      applied += same_stage(x, p, cycled(count, {0, 3, 7, 0, 16}), result, least, reused);
    }
    for (std::uint64_t count : {least, 4 * least}) {
      INFO(name(d) << " skewed offsets " << count);
      Segmentation s;
      s.problem = Problem::segments;
      s.shape = {count, n / count};
      s.offsets = skewed_offsets(count, n, 9);
      applied += same_stage(x, p, s, result, least, reused);
    }
    Segmentation dec = cycled(least + 7, {5, 0, 2});
    std::swap(dec.offsets[10], dec.offsets[11]); // segment 10 decreasing: empty; 9 and 11 longer
    applied += same_stage(x, p, dec, result, least, reused);
    // Every shape with a small minimum (more length classes a result then: the classes' path).
    applied += same_stage(x, p, cycled(600, {1, 2, 3, 4, 0}), result, 1, reused);
    CHECK(applied >= 6); // the shapes above kMinResults (and the classes' ones for bounded results)
    // Another result dtype than the References' (a float32 result of a bf16 or f16 sum): none.
    if (d == DType::bf16 || d == DType::f16) CHECK_FALSE(same_stage(x, p, rows_of({least, 16}), DType::f32, least, reused));
  }
}

TEST_CASE("fast stage from prefix sums: none where they do not serve the point", "[fast_check][fast_stage][sum_prefix]") {
  const HostArray x = make_input(DType::f32, 1 << 16, 4);
  const SumPrefix p(x);
  FastStage st;
  // Sums only.
  CHECK_FALSE(FastCheck::stage(p, rows_of({8192, 8}), Op::max, DType::f32, FastCheck::kMinResults, st));
  CHECK_FALSE(st.applies);
  CHECK_FALSE(st.decided); // the References of max may still be staged
  // A segment past the input (the others within it), and rows past it.
  Segmentation beyond = cycled(8192, {4, 8});
  beyond.offsets[8000] = beyond.offsets[8001] = 70000;
  REQUIRE_FALSE(p.serves(beyond, Op::sum));
  CHECK_FALSE(FastCheck::stage(p, beyond, Op::sum, DType::f32, 1, st));
  CHECK_FALSE(st.decided);
  CHECK_FALSE(FastCheck::stage(p, rows_of({8193, 8}), Op::sum, DType::f32, FastCheck::kMinResults, st));
  CHECK_FALSE(st.decided);
  // Columns are not served.
  Segmentation cols = rows_of({8192, 8});
  cols.problem = Problem::columns, cols.stride = 8192;
  CHECK_FALSE(FastCheck::stage(p, cols, Op::sum, DType::f32, FastCheck::kMinResults, st));
  // Prefix sums that are not exact (or none): no stage.
  CHECK_FALSE(FastCheck::stage(SumPrefix(), rows_of({8192, 8}), Op::sum, DType::f32, FastCheck::kMinResults, st));
  // Served again after those: the same as the References' stage.
  CHECK(same_stage(x, p, rows_of({8192, 8}), DType::f32, FastCheck::kMinResults, st));
}

TEST_CASE("fast stage from prefix sums: a float16 sum past the dtype's range is expected as its infinity",
          "[fast_check][fast_stage][sum_prefix]") {
  // 2^16 elements of 1024 (0x6400): rows of 128 sum to 131072, which rounds to +inf in float16.
  HostArray x;
  x.dtype = DType::f16, x.n = 1 << 16;
  x.bytes.resize(x.n * 2);
  for (std::uint64_t i = 0; i < x.n; ++i) {
    const std::uint16_t bits = 0x6400;
    std::memcpy(x.bytes.data() + 2 * i, &bits, 2);
  }
  const SumPrefix p(x);
  REQUIRE(p.exact());
  FastStage st;
  REQUIRE(same_stage(x, p, rows_of({4096, 16}), DType::f16, FastCheck::kMinResults, st)); // 16384: finite
  REQUIRE(same_stage(x, p, rows_of({512, 128}), DType::f16, 512, st));
  double w = 0;
  std::memcpy(&w, st.want.data(), sizeof w);
  CHECK(w == std::numeric_limits<double>::infinity());
}

// Not a test (hidden; run it by its tag): the host's time for a point's GPU check data at 2^20 and
// 2^24 results, made from the References (SumPrefix::reference, then FastCheck::stage) and straight
// from the prefix sums (FastCheck::stage from the SumPrefix), float32 rows and offsets sums.
TEST_CASE("fast stage from prefix sums: its time against References then stage", "[.][fast_stage_timing]") {
  const std::uint64_t n = std::uint64_t(1) << 24;
  const HostArray x = make_input(DType::f32, n, 2);
  const SumPrefix p(x);
  REQUIRE(p.exact());
  const auto ms_since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<Segmentation> points = {rows_of({n >> 4, 16}), rows_of({n, 1}), cycled(n >> 2, {0, 2, 4, 8, 2})};
  for (const Segmentation& s : points) {
    std::vector<Reference> refs;
    FastStage via, straight;
    std::vector<double> ms_via, ms_refs, ms_straight;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      p.reference(s, refs);
      ms_refs.push_back(ms_since(t0));
      REQUIRE(FastCheck::stage(refs, s, Op::sum, DType::f32, FastCheck::kMinResults, via));
      ms_via.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      REQUIRE(FastCheck::stage(p, s, Op::sum, DType::f32, FastCheck::kMinResults, straight));
      ms_straight.push_back(ms_since(t0));
    }
    require_same(straight, via);
    std::sort(ms_via.begin(), ms_via.end());
    std::sort(ms_refs.begin(), ms_refs.end());
    std::sort(ms_straight.begin(), ms_straight.end());
    WARN(name(s.problem) << " " << s.shape.count << " x " << s.shape.length << ": References then stage "
                         << ms_via[2] << " ms (References " << ms_refs[2] << " ms), straight from the prefix sums " << ms_straight[2]
                         << " ms (medians of 5, " << std::thread::hardware_concurrency() << " threads)");
  }
}
