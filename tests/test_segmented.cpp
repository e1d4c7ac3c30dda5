// The segmented problems without a GPU: catalogue entries and their rules, launch plans, rounding
// depths, the test offsets, the CPU reference and the result-by-result check; every configuration
// of the sweep compiles (NVRTC needs no GPU).
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/runner.h"
#include "kernels/segmented.h"
#include "tuner/material.h"
#include "tuner/reference.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sweep.h"
#include "tests/code_paths.h"
#include "tests/config_fixture.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace reduce_tune;
using reduce_tune::testing::cfg;

namespace {

Target sm90(Problem p, DType d = DType::f32, Op op = Op::sum) {
  Target t{d, op, 90, 1024, 132, false};
  t.problem = p;
  return t;
}

} // namespace

TEST_CASE("segmented: each problem has its catalogue, grouped by problem", "[segmented]") {
  for (Problem p : {Problem::rows, Problem::columns, Problem::segments}) {
    REQUIRE_FALSE(variants(p).empty());
    for (const Variant& v : variants(p)) {
      CHECK(v.problem == p);
      CHECK(find_variant(v.name) == &v);
      // Every point of the sweep's space is valid for float32 on sm_90 and its key round-trips.
      for (const Config& c : space(v)) {
        INFO(key(c));
        CHECK_FALSE(invalid_reason(c, sm90(p)));
        const auto back = parse_key(key(c));
        REQUIRE(back);
        CHECK(*back == c);
      }
    }
  }
  for (const Variant& v : variants()) CHECK(v.problem == Problem::array);
}

TEST_CASE("segmented: the streaming mappings are their plain twins with evict-first loads",
          "[segmented]") {
  std::size_t twins = 0;
  for (Problem problem : {Problem::rows, Problem::columns, Problem::segments}) {
    bool seen_twin = false;
    for (const Variant& v : variants(problem)) {
      INFO(v.name);
      Config first = space(v).front();
      const std::optional<Config> plain_config = evict_first_twin_of(first);
      if (!plain_config) {
        CHECK_FALSE(seen_twin); // the twins come after every plain variant of the problem
        CHECK_FALSE(std::string(v.name).ends_with("_streaming"));
        continue;
      }
      seen_twin = true;
      ++twins;
      CHECK(evict_first_twin(*plain_config) == first); // the way back
      CHECK_FALSE(evict_first_twin(first));            // a twin has no twin
      const Variant* plain = find_variant(plain_config->variant);
      REQUIRE(plain);
      CHECK(std::string(plain->name) + "_streaming" == v.name);
      CHECK(v.evict_first);
      CHECK_FALSE(plain->evict_first);
      CHECK(plain->params == v.params);
      CHECK(plain->problem == v.problem);
      const std::vector<Config> a = space(*plain), b = space(v);
      REQUIRE(a.size() == b.size());
      CHECK(*plain_config == a.front());
      // The same source and macros; only the twin loads with ld.global.cs.
      const std::string src_plain = render(a.front(), DType::f32, Op::sum);
      const std::string src_streaming = render(first, DType::f32, Op::sum);
      CHECK_THAT(src_plain, !Catch::Contains("#define RT_EVICT_FIRST"));
      CHECK_THAT(src_streaming, Catch::Contains("#define RT_EVICT_FIRST 1"));
      // Past the first line (the variant's name) and that one macro, the texts are equal.
      std::string without = src_streaming.substr(src_streaming.find('\n'));
      without.erase(without.find("#define RT_EVICT_FIRST 1\n"), std::string("#define RT_EVICT_FIRST 1\n").size());
      CHECK(without == src_plain.substr(src_plain.find('\n')));
    }
    CHECK(seen_twin); // every segmented problem has evict-first twins
  }
  CHECK(twins == 11);
  CHECK_FALSE(evict_first_twin_of(cfg("streaming.b256.u4.v4.g2.shfl.atomic"))); // the array's own
  CHECK_FALSE(evict_first_twin(cfg("vectorized.b256.u4.v4.g2.shfl.atomic")));   // no twin there
}

TEST_CASE("segmented: the sweep measures the evict-first twins of the fastest plain configurations",
          "[segmented]") {
  TwinFilter f(2);
  const Config a = cfg("rows_block.b256.u2.v4.direct"), b = cfg("rows_block.b512.u2.v4.direct"),
               c = cfg("rows_block.b128.u2.v4.direct");
  auto twin = [](Config x) {
    x.variant += "_streaming";
    return x;
  };
  // Nothing measured yet: measure every twin; plain configurations are never skipped.
  CHECK_FALSE(f.skip(twin(a)));
  f.measured(a, 30.0);
  f.measured(b, 20.0);
  f.measured(c, 40.0);
  CHECK_FALSE(f.skip(a));
  CHECK_FALSE(f.skip(twin(b))); // the fastest
  CHECK_FALSE(f.skip(twin(a))); // second
  const std::optional<std::string> why = f.skip(twin(c));
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("rows_block.b128.u2.v4.direct ranks 3"));
  // A twin's own time does not push the plain configurations down the ranks.
  f.measured(twin(b), 1.0);
  CHECK_FALSE(f.skip(twin(a)));
}

TEST_CASE("segmented: validity rules name the problem", "[segmented]") {
  auto reason = [](const char* k, Target t) { return invalid_reason(cfg(k), t).value_or(""); };
  CHECK_THAT(reason("rows_group.b256.w8.u2.v4.direct", sm90(Problem::columns)),
             Catch::Contains("reduces rows, not columns"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm90(Problem::rows)),
             Catch::Contains("reduces array, not rows"));
  CHECK_THAT(reason("rows_group.b256.w3.u2.v4.direct", sm90(Problem::rows)),
             Catch::Contains("group width 3"));
  CHECK_THAT(reason("rows_group.b256.w64.u2.v4.direct", sm90(Problem::rows)),
             Catch::Contains("group width 64"));
  CHECK_THAT(reason("rows_group.b256.w8.u2.v4.direct", sm90(Problem::rows, DType::f64)),
             Catch::Contains("16-byte"));
  CHECK_THAT(reason("rows_split.b256.u2.v4.g0.atomic", sm90(Problem::rows)),
             Catch::Contains("grid 0"));
  CHECK(reason("segments_binned.b256.w32.u2.v4.g4.atomic", sm90(Problem::segments)).empty());
  CHECK(reason("segments_merge.b256.u8.g4.atomic", sm90(Problem::segments)).empty());
  CHECK_THAT(reason("segments_merge.b256.u16.g4.atomic", sm90(Problem::segments, DType::f64)),
             Catch::Contains("shared memory"));
  CHECK_THAT(reason("segments_merge.b256.u2.g4.atomic", sm90(Problem::segments)),
             Catch::Contains("unroll 2"));
  // bf16 and f16 sums add in float32 accumulators, then the post pass rounds once.
  CHECK(reason("segments_merge.b256.u8.g4.atomic", sm90(Problem::segments, DType::bf16)).empty());
  CHECK(reason("segments_flat.b512.u4.v4.g4.atomic", sm90(Problem::segments)).empty());
  // Staged: b x u segments' offsets and 4 elements each in static shared memory (48 KiB).
  CHECK(reason("segments_staged.b256.u4.v4.g8.atomic", sm90(Problem::segments)).empty());
  CHECK_THAT(reason("segments_staged.b512.u4.v2.g8.atomic", sm90(Problem::segments, DType::f64)),
             Catch::Contains("bytes of shared memory"));
  CHECK_THAT(reason("segments_flat.b1024.u4.v4.g4.atomic", sm90(Problem::segments)),
             Catch::Contains("head entries"));
  CHECK_THAT(reason("segments_flat.b256.u2.v4.g4.atomic", sm90(Problem::segments, DType::f64)),
             Catch::Contains("16-byte"));
  CHECK(reason("segments_flat.b256.u2.v4.g4.atomic", sm90(Problem::segments, DType::f16)).empty());
  std::string why;
  CHECK_FALSE(parse_key("rows_block.b256.w8.u2.v4.direct", &why));
  CHECK_THAT(why, Catch::Contains("takes no parameter 'w8'"));
}

TEST_CASE("segmented: launch plans cover every result", "[segmented]") {
  const Target rows = sm90(Problem::rows);
  // A group of 8 lanes per row: 1000 rows x 8 lanes over blocks of 256 threads.
  SegmentedPlan p = segmented_plan(cfg("rows_group.b256.w8.u2.v4.direct"), rows, {1000, 100});
  CHECK(p.grid == (1000 * 8 + 255) / 256);
  CHECK_FALSE(p.fill);
  CHECK(p.chunk_grid == 0);
  // Split: g = 4 blocks per SM over 3 rows, at most one block per pass of a row.
  p = segmented_plan(cfg("rows_split.b256.u2.v4.g4.atomic"), rows, {3, 1u << 22});
  CHECK(p.aux == (4 * 132 + 2) / 3);
  CHECK(p.grid == 3 * p.aux);
  CHECK(p.fill);
  p = segmented_plan(cfg("rows_split.b256.u2.v4.g4.atomic"), rows, {3, 1000});
  CHECK(p.aux == 1); // 1000 elements: one block-pass (256 x 4 x 2)
  // Columns: 3 columns get a tile 1 wide (v4: one thread covers them), 256 tall.
  p = segmented_plan(cfg("columns_tile.b256.u2.v4.direct"), sm90(Problem::columns), {3, 5000});
  CHECK((p.aux & 2047) == 1);
  CHECK((p.aux >> 11) == 1);
  CHECK(p.grid == 1);
  // Narrow: the widest of 8, 4, 2, 1 threads across that still makes 256 stripes (or 1 thread),
  // the rest of the block down the rows, one block a stripe.
  p = segmented_plan(cfg("columns_narrow.b512.u1.v1.direct"), sm90(Problem::columns), {512, 128});
  CHECK((p.aux & 2047) == 2);
  CHECK((p.aux >> 11) == 1);
  CHECK(p.grid == 512 / 2);
  CHECK_FALSE(p.fill);
  p = segmented_plan(cfg("columns_narrow.b512.u1.v1.direct"), sm90(Problem::columns), {4096, 16});
  CHECK((p.aux & 2047) == 8);
  CHECK(p.grid == 4096 / 8);
  p = segmented_plan(cfg("columns_narrow.b256.u1.v2.direct"), sm90(Problem::columns), {2048, 32});
  CHECK((p.aux & 2047) == 4);
  CHECK(p.grid == 2048 / 8);
  p = segmented_plan(cfg("columns_narrow.b128.u2.v4.direct"), sm90(Problem::columns), {1000, 77});
  CHECK((p.aux & 2047) == 1); // 250 stripes of 4 columns
  CHECK(p.grid == 250);
  p = segmented_plan(cfg("columns_split.b256.u2.v1.g4.atomic"), sm90(Problem::columns), {4096, 4096});
  CHECK((p.aux & 2047) == 256);
  CHECK(p.grid == 16 * (p.aux >> 11));
  CHECK(p.fill);
  // Binned: the group kernel, then the chunk kernel over g blocks per SM with its state.
  p = segmented_plan(cfg("segments_binned.b256.w32.u2.v4.g4.atomic"), sm90(Problem::segments), {1000, 0});
  CHECK(p.grid == (1000 * 32 + 255) / 256);
  CHECK(p.chunk_grid == 4 * 132);
  CHECK(p.chunk_smem_bytes == 256 * 4 * 4); // the chunk kernel's block reduce; none for the first
  CHECK(p.smem_bytes == 0);
  CHECK(p.work_bytes > 0);
  CHECK_FALSE(p.fill); // the group kernel writes the identity of chunked segments itself
  // Staged: a block per b x u segments, then binned's chunk kernel with its state.
  p = segmented_plan(cfg("segments_staged.b128.u4.v4.g8.atomic"), sm90(Problem::segments), {5000, 1});
  CHECK(p.grid == (5000 + 511) / 512);
  CHECK(p.chunk_grid == 8 * 132);
  CHECK(p.chunk_smem_bytes == 128 * 4 * 4);
  CHECK(p.smem_bytes == 0); // its staging is static: a dynamic part would cut its blocks per SM
  CHECK(p.work_bytes > 0);
  CHECK_FALSE(p.fill);
  // Merge: g blocks per SM, the partition kernel's warp per split point, its coordinates, and the
  // tile's elements and ends in shared memory.
  p = segmented_plan(cfg("segments_merge.b256.u8.g4.atomic"), sm90(Problem::segments), {1000, 0});
  CHECK(p.grid == 4 * 132);
  CHECK(p.aux == p.grid);
  CHECK(p.partition_grid * 256 >= (p.aux + 1) * 32);
  CHECK(p.work_bytes == (p.aux + 1) * 16);
  CHECK(p.smem_bytes == 256 * 8 * (4 + 4));
  CHECK_FALSE(p.fill); // the partition kernel sets the cut segments to the identity
  // Flat: the fill, then g blocks per SM over the tiles, a 32-bit head entry per tile element.
  p = segmented_plan(cfg("segments_flat.b256.u2.v4.g8.atomic"), sm90(Problem::segments), {1000, 0});
  CHECK(p.grid == 8 * 132);
  CHECK(p.smem_bytes == 256 * 2 * 4 * 4);
  CHECK(p.fill);
  CHECK(p.partition_grid == 0);
  CHECK(p.work_bytes == 0);
  // Flat carry: no fill; a warp per block of the main kernel (its grid in aux) sets the segments
  // cut between blocks to the identity.
  p = segmented_plan(cfg("segments_flat_carry.b256.u2.v4.g8.atomic"), sm90(Problem::segments),
                     {1000, 0});
  CHECK(p.grid == 8 * 132);
  CHECK(p.smem_bytes == 256 * 2 * 4 * 4);
  CHECK_FALSE(p.fill);
  CHECK(p.aux == p.grid);
  CHECK(p.partition_grid * 256 >= p.grid * 32);
  CHECK(p.work_bytes == 0);
  CHECK_THROWS_AS(segmented_plan(cfg("segments_flat.b256.u2.v4.g8.atomic"), sm90(Problem::segments),
                                 {0xffffffffull, 0}),
                  std::invalid_argument);
  CHECK_THROWS_AS(segmented_plan(cfg("rows_block.b256.u2.v4.direct"), rows, {1ull << 32, 1}),
                  std::invalid_argument);
}

TEST_CASE("segmented: rounding depth grows with the share of each lane", "[segmented]") {
  const Target t = sm90(Problem::rows);
  const Config thread = cfg("rows_group.b256.w1.u1.v1.direct");
  const Config warp = cfg("rows_group.b256.w32.u1.v1.direct");
  CHECK(segment_depth(thread, t, {10, 1000}, 1000) >= 1000);
  CHECK(segment_depth(warp, t, {10, 1000}, 1000) < 100);
  CHECK(segment_depth(warp, t, {10, 1000}, 1000) >= 1000 / 32 + 5);
}

TEST_CASE("segmented: pointless shapes are skipped with a reason", "[segmented]") {
  CHECK(pointless(cfg("rows_group.b256.w32.u1.v4.direct"), {1000, 4}));
  CHECK_FALSE(pointless(cfg("rows_group.b256.w1.u1.v4.direct"), {1000, 4}));
  CHECK(pointless(cfg("rows_block.b512.u1.v4.direct"), {1000, 100}));
  CHECK_FALSE(pointless(cfg("rows_block.b128.u1.v4.direct"), {1000, 1000}));
  // Few lanes, each over thousands of elements: the split mappings do it.
  CHECK(pointless(cfg("rows_group.b256.w1.u1.v1.direct"), {1, 1 << 24}));
  CHECK(pointless(cfg("rows_block.b512.u1.v4.direct"), {4, 1 << 22}));
  CHECK_FALSE(pointless(cfg("rows_split.b256.u4.v4.g4.atomic"), {4, 1 << 22}));
  CHECK_FALSE(pointless(cfg("rows_block.b256.u1.v4.direct"), {256, 1 << 16}));
  CHECK(pointless(cfg("columns_tile.b256.u4.v4.direct"), {256, 1 << 20}));
  CHECK_FALSE(pointless(cfg("columns_tile.b256.u4.v4.direct"), {1 << 14, 1024}));
  // columns_narrow: not where columns_tile's tile is as narrow, nor where it has blocks enough.
  CHECK(pointless(cfg("columns_narrow.b256.u1.v4.direct"), {4, 2048}));
  CHECK_FALSE(pointless(cfg("columns_narrow.b256.u1.v4.direct"), {32, 2048}));
  CHECK_FALSE(pointless(cfg("columns_narrow.b512.u1.v1.direct"), {512, 128}));
  CHECK(pointless(cfg("columns_narrow.b128.u1.v1.direct"), {1 << 17, 16}));
  CHECK_FALSE(pointless(cfg("columns_narrow.b128.u1.v1.direct"), {1 << 16, 16}));
  // Columns: u rows in flight where a smaller u covers a thread's rows in one round as well.
  CHECK_FALSE(pointless(cfg("columns_tile.b256.u8.v4.direct"), {1 << 17, 8})); // 8 rows a thread
  CHECK_THAT(*pointless(cfg("columns_tile.b256.u8.v4.direct"), {1 << 17, 4}),
             Catch::Contains("reads 4 rows: u4"));
  CHECK_FALSE(pointless(cfg("columns_tile.b256.u4.v4.direct"), {1 << 17, 3}));
  CHECK(pointless(cfg("columns_narrow.b512.u2.v1.direct"), {512, 128})); // 256 tall: 1 row each
  const auto split = pointless(cfg("columns_split.b256.u4.v4.g4.atomic"), {1 << 17, 2});
  CHECK((!split || split->find("rows: u") == std::string::npos)); // slices: not this rule
  CHECK(pointless(cfg("segments_group.b256.w32.u2.v4.direct"), {256, 65536}));
  CHECK_FALSE(pointless(cfg("segments_binned.b256.w32.u2.v4.g4.atomic"), {256, 65536}));
  // Offsets: the longest segment decides for the per-segment mappings.
  CHECK(pointless(cfg("segments_block.b256.u4.v4.direct"), {1 << 16, 4096}, 1 << 25));
  CHECK_FALSE(pointless(cfg("segments_block.b256.u4.v4.direct"), {1 << 16, 4096}, 1 << 20));
  CHECK_FALSE(pointless(cfg("segments_binned.b256.w32.u2.v4.g4.atomic"), {1 << 16, 4096}, 1 << 25));
  // Offsets: a block (or a split of blocks) per segment where the mean is under a sixteenth of it.
  CHECK_THAT(*pointless(cfg("segments_block.b128.u4.v4.direct"), {1 << 22, 4}),
             Catch::Contains("most of its threads idle"));
  CHECK_FALSE(pointless(cfg("segments_block.b128.u4.v4.direct"), {1 << 21, 8}));
  CHECK(pointless(cfg("segments_split.b512.u4.v4.g4.atomic"), {1 << 20, 16}));
  CHECK_FALSE(pointless(cfg("segments_split.b256.u4.v4.g4.atomic"), {1 << 20, 16}));
  // Staged: segments of mean 4 at most (a block stages 4 elements a segment).
  CHECK_FALSE(pointless(cfg("segments_staged.b128.u4.v4.g8.atomic"), {1 << 24, 1}));
  CHECK_FALSE(pointless(cfg("segments_staged.b128.u4.v4.g8.atomic"), {1 << 22, 4}));
  CHECK_THAT(*pointless(cfg("segments_staged.b128.u4.v4.g8.atomic"), {1 << 21, 8}),
             Catch::Contains("would not fit"));
  // Merge: a grid past the resident threads it is compiled for runs in two waves.
  CHECK(pointless(cfg("segments_merge.b256.u8.g8.atomic"), {1 << 16, 4096}));
  CHECK_FALSE(pointless(cfg("segments_merge.b128.u8.g8.atomic"), {1 << 16, 4096}, 1 << 25));
  // Flat: waves of blocks are meant (the hardware balances them); tiles under 2048 elements are not.
  CHECK_FALSE(pointless(cfg("segments_flat.b256.u4.v4.g32.atomic"), {1 << 16, 4096}, 1 << 25));
  CHECK_FALSE(pointless(cfg("segments_flat.b256.u4.v2.g8.atomic"), {1 << 16, 4096}));
  CHECK_THAT(*pointless(cfg("segments_flat.b256.u2.v2.g8.atomic"), {1 << 16, 4096}),
             Catch::Contains("a tile of 1024 elements"));
}

TEST_CASE("segmented: skewed offsets are many short, a few long, and total exactly", "[segmented]") {
  const auto off = skewed_offsets(10000, 1u << 22, 5);
  REQUIRE(off.size() == 10001);
  CHECK(off.front() == 0);
  CHECK(off.back() == (1 << 22));
  std::uint64_t below_mean = 0, empty = 0, longest = 0;
  for (std::size_t i = 0; i + 1 < off.size(); ++i) {
    REQUIRE(off[i + 1] >= off[i]);
    const std::uint64_t len = std::uint64_t(off[i + 1] - off[i]);
    below_mean += len < (1u << 22) / 10000;
    empty += len == 0;
    longest = std::max(longest, len);
  }
  CHECK(below_mean > 7000);
  CHECK(empty > 0);
  CHECK(longest > 20 * ((1u << 22) / 10000));
  CHECK(skewed_offsets(10000, 1u << 22, 5) == off); // the same seed gives the same offsets
}

TEST_CASE("segmented: the CPU reference and the check, result by result", "[segmented]") {
  // A 3 x 4 matrix with row stride 5 (the fifth column is padding).
  HostArray a;
  a.dtype = DType::i32;
  a.n = 15;
  a.bytes.resize(15 * 4);
  for (int i = 0; i < 15; ++i) a.data<std::int32_t>()[i] = i;
  Segmentation rows;
  rows.problem = Problem::rows;
  rows.shape = {3, 4};
  rows.stride = 5;
  CHECK(rows.input_elements() == 14);
  auto r = segmented_reference(a, rows, Op::sum);
  REQUIRE(r.size() == 3);
  CHECK(r[0].value.as<std::int32_t>() == 0 + 1 + 2 + 3);
  CHECK(r[2].value.as<std::int32_t>() == 10 + 11 + 12 + 13);
  Segmentation cols = rows;
  cols.problem = Problem::columns;
  cols.shape = {4, 3};
  r = segmented_reference(a, cols, Op::max);
  REQUIRE(r.size() == 4);
  CHECK(r[1].value.as<std::int32_t>() == 11);
  Segmentation segs;
  segs.problem = Problem::segments;
  segs.shape = {3, 2};
  segs.offsets = {0, 0, 4, 3};
  r = segmented_reference(a, segs, Op::min);
  CHECK(r[0].value.as<std::int32_t>() == identity<std::int32_t>(Op::min)); // empty
  CHECK(r[1].value.as<std::int32_t>() == 0);
  CHECK(r[2].value.as<std::int32_t>() == identity<std::int32_t>(Op::min)); // decreasing: empty

  HostArray got;
  got.dtype = DType::i32;
  got.bytes.resize(3 * 4);
  const std::int32_t right[] = {identity<std::int32_t>(Op::min), 0, identity<std::int32_t>(Op::min)};
  std::memcpy(got.bytes.data(), right, sizeof right);
  auto depth = [](std::uint64_t len) { return len + 1; };
  CHECK(check_segmented(r, got, segs, Op::min, depth).ok);
  const std::int32_t wrong[] = {identity<std::int32_t>(Op::min), 0, 7};
  std::memcpy(got.bytes.data(), wrong, sizeof wrong);
  const Check c = check_segmented(r, got, segs, Op::min, depth);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.observed, Catch::StartsWith("result 2 of 3"));
}

TEST_CASE("segmented: float sums checked against each segment's bound, the first failure named",
          "[segmented]") {
  // 4096 skewed float32 segments over 2^16 elements, summed: the reference's rounded values pass,
  // a result moved within its bound passes, one moved past it or made NaN fails, by index.
  Segmentation s;
  s.problem = Problem::segments;
  s.shape = {4096, 16};
  s.offsets = skewed_offsets(4096, 1 << 16, 5);
  const HostArray a = make_input(DType::f32, 1 << 16, 9);
  const std::vector<Reference> refs = segmented_reference(a, s, Op::sum);
  HostArray got;
  got.dtype = DType::f32;
  got.n = 4096;
  got.bytes.resize(4096 * sizeof(float));
  const auto set = [&](std::uint64_t i, float v) { std::memcpy(got.bytes.data() + i * 4, &v, 4); };
  const auto depth = [](std::uint64_t len) { return std::max<std::uint64_t>(len, 1); };
  for (std::uint64_t i = 0; i < 4096; ++i) set(i, float(refs[i].exact));
  CHECK(check_segmented(refs, got, s, Op::sum, depth).ok);
  // The longest segment: one ulp off is inside its bound (depth = its length).
  std::uint64_t longest = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) longest = s.length(i) > s.length(longest) ? i : longest;
  REQUIRE(s.length(longest) > 100);
  const float r = float(refs[longest].exact);
  set(longest, std::nextafter(r, 2 * r));
  CHECK(check_segmented(refs, got, s, Op::sum, depth).ok);
  // Past it: off by its sum of |x| (the bound is a fraction of that); and a NaN in a later result
  // does not hide the first failure.
  set(longest, r + float(refs[longest].abs_sum));
  set(4095, std::numeric_limits<float>::quiet_NaN());
  const Check c = check_segmented(refs, got, s, Op::sum, depth);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.observed, Catch::StartsWith("result " + std::to_string(std::min<std::uint64_t>(longest, 4095))));
  set(longest, r);
  CHECK_FALSE(check_segmented(refs, got, s, Op::sum, depth).ok); // the NaN alone
  set(4095, float(refs[4095].exact));
  CHECK(check_segmented(refs, got, s, Op::sum, depth).ok);
}

// Every code path of the sweep's configurations (tests/code_paths.h; REDUCE_TUNE_COMPILE_ALL=1:
// every configuration).
TEST_CASE("segmented: every code path of the sweep compiles for sm_90", "[segmented][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache cache({});
  KernelLoader loader(nvrtc, cache, nvrtc.parse_target("sm_90"));
  std::vector<CompileJob> jobs;
  test::CodePaths sums, cas;
  for (Problem p : {Problem::rows, Problem::columns, Problem::segments})
    for (const Variant& v : variants(p))
      for (const Config& c : space(v)) {
        // The ordered finishes of an evict-first twin differ from its plain twin's by the loads
        // alone, which the atomic points compile already.
        if ((c.finish == Finish::twopass || c.finish == Finish::lastblock) && v.evict_first) continue;
        // The atomic finish's u8 points likewise (swept for the struct accumulators alone).
        if (c.finish == Finish::atomic && c.unroll == 8 && v.evict_first) continue;
        if (!invalid_reason(c, sm90(p, DType::i32)) && sums.first(c)) jobs.push_back({c, DType::i32, Op::sum});
        // The atomic finishes' compare-and-swap path: float64 max.
        if (c.finish == Finish::atomic && !invalid_reason(c, sm90(p, DType::f64, Op::max)) && cas.first(c))
          jobs.push_back({c, DType::f64, Op::max});
      }
  std::size_t failed = 0;
  for (const auto& o : compile_all(loader, jobs, 0)) {
    if (!o.error.empty()) UNSCOPED_INFO(o.error.substr(0, 2000));
    failed += !o.error.empty();
  }
  CHECK(jobs.size() > 300); // 323 code paths when written
  CHECK(failed == 0);
}

TEST_CASE("segmented: columns_split's ordered finish also runs in taller slices swept for ops without an atomic finish",
          "[segmented]") {
  const Variant& v = *find_variant("columns_split");
  const std::vector<Config> all = space(v);
  auto in_space = [&](const char* key) { return std::find(all.begin(), all.end(), cfg(key)) != all.end(); };
  // The ordered finish: one block per SM of 512 or 1024 threads, two of 1024, u8.
  CHECK(in_space("columns_split.b512.u8.v2.g1.twopass"));
  CHECK(in_space("columns_split.b1024.u4.v1.g1.twopass"));
  CHECK(in_space("columns_split.b1024.u8.v1.g2.twopass"));
  CHECK(in_space("columns_split.b256.u8.v2.g2.lastblock"));
  CHECK_FALSE(in_space("columns_split.b256.u4.v2.g1.twopass")); // 256 threads an SM
  CHECK_FALSE(in_space("columns_split.b1024.u4.v1.g4.twopass"));
  // The atomic finish keeps its space and adds u8, in one block of 512 per SM too.
  CHECK(in_space("columns_split.b512.u4.v1.g4.atomic"));
  CHECK(in_space("columns_split.b512.u8.v1.g2.atomic"));
  CHECK(in_space("columns_split.b512.u8.v2.g1.atomic"));
  CHECK(in_space("columns_split.b256.u8.v4.g8.atomic"));
  CHECK_FALSE(in_space("columns_split.b256.u8.v1.g1.atomic"));
  CHECK_FALSE(in_space("columns_split.b1024.u8.v1.g2.atomic"));
  CHECK_FALSE(in_space("columns_split.b1024.u4.v1.g1.atomic"));
  CHECK_FALSE(in_space("columns_split.b512.u4.v1.g1.atomic"));
  // Its u8 is swept for the struct accumulators' atomics alone (argmax's keys, var's sums).
  for (Op op : {Op::argmax, Op::argmin, Op::var, Op::std_})
    CHECK_FALSE(unswept(cfg("columns_split.b512.u8.v1.g2.atomic"), sm90(Problem::columns, DType::f32, op)));
  for (Op op : {Op::sum, Op::min, Op::mean, Op::count_nonzero})
    CHECK_THAT(unswept(cfg("columns_split.b512.u8.v1.g2.atomic"), sm90(Problem::columns, DType::f32, op)).value_or(""),
               Catch::Contains("struct accumulators"));
  CHECK_FALSE(unswept(cfg("columns_split.b512.u4.v1.g2.atomic"), sm90(Problem::columns, DType::f32, Op::sum)));
  // Each one valid for argmax; 1024 x v4 x 16-byte accumulators exceed the shared memory.
  CHECK_FALSE(invalid_reason(cfg("columns_split.b1024.u8.v1.g1.twopass"), sm90(Problem::columns, DType::f32, Op::argmax)));
  CHECK(invalid_reason(cfg("columns_split.b1024.u4.v4.g1.twopass"), sm90(Problem::columns, DType::f32, Op::argmax)));
  // Swept for the ops that cannot finish atomically; sum, min and max keep the atomic's slices, and
  // so do argmax and argmin of 32-bit values (their keys).
  const Config tall = cfg("columns_split_streaming.b512.u8.v2.g1.twopass");
  for (Op op : {Op::var, Op::std_, Op::logsumexp}) CHECK_FALSE(unswept(tall, sm90(Problem::columns, DType::f32, op)));
  CHECK_FALSE(unswept(tall, sm90(Problem::columns, DType::f64, Op::argmax)));
  for (Op op : {Op::sum, Op::min, Op::max, Op::argmax, Op::argmin})
    CHECK_THAT(*unswept(tall, sm90(Problem::columns, DType::f32, op)), Catch::Contains("finishes atomically"));
  CHECK_FALSE(unswept(cfg("columns_split.b512.u4.v1.g2.twopass"), sm90(Problem::columns)));
  CHECK_FALSE(unswept(cfg("rows_split.b512.u4.v4.g2.atomic"), sm90(Problem::rows)));
  // The sweep's jobs: var takes the taller slices, sum does not; an explicit key is measured.
  SweepOptions o;
  o.problem = Problem::columns;
  o.dtypes = {DType::f32};
  o.variants = {"columns_split"};
  std::vector<Skip> skipped;
  auto jobs_of = [&](Op op) {
    o.ops = {op};
    skipped.clear();
    return sweep_jobs(o, 90, 1024, 132, &skipped);
  };
  auto has = [](const std::vector<CompileJob>& js, const Config& c) {
    return std::any_of(js.begin(), js.end(), [&](const CompileJob& j) { return j.config == c; });
  };
  const Config plain_tall = cfg("columns_split.b512.u8.v2.g1.twopass");
  CHECK(has(jobs_of(Op::var), plain_tall));
  CHECK_FALSE(has(jobs_of(Op::sum), plain_tall));
  CHECK(std::any_of(skipped.begin(), skipped.end(), [](const Skip& k) { return k.key == "columns_split.b512.u8.v2.g1.twopass"; }));
  o.keys = {"columns_split.b512.u8.v2.g1.twopass"};
  CHECK(has(jobs_of(Op::sum), plain_tall));
}

TEST_CASE("segmented: the default sweep covers every variant of its problem, --variants narrows it",
          "[segmented]") {
  SweepOptions o;
  o.problem = Problem::segments;
  auto has = [](const std::vector<Config>& cs, std::string_view v) {
    return std::any_of(cs.begin(), cs.end(), [&](const Config& c) { return c.variant == v; });
  };
  const std::vector<Config> all = selected_configs(o);
  for (const Variant& v : variants(Problem::segments)) CHECK(has(all, v.name));
  CHECK_FALSE(has(all, "rows_group"));
  o.variants = {"segments_merge", "segments_block"};
  const std::vector<Config> named = selected_configs(o);
  CHECK(has(named, "segments_merge"));
  CHECK(has(named, "segments_block"));
  CHECK_FALSE(has(named, "segments_binned"));
}

TEST_CASE("sweep: an explicit key that no dtype or op of the sweep can run is refused, not skipped",
          "[segmented]") {
  SweepOptions o;
  o.problem = Problem::segments;
  o.dtypes = {DType::f32};
  o.ops = {Op::sum};
  o.keys = {"segments_flat.b256.u4.v4.g4.atomic"};
  CHECK_FALSE(refused_key(o, 90, 1024, 132));
  o.keys.push_back("segments_flat.b256.u8.v4.g4.atomic"); // unroll 8: not in the variant's list
  auto why = refused_key(o, 90, 1024, 132);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("segments_flat.b256.u8.v4.g4.atomic") && Catch::Contains("unroll 8"));
  // Invalid for one dtype only (a 32-byte vector of float64): the other one runs it.
  o.keys = {"segments_flat.b256.u2.v4.g4.atomic"};
  o.dtypes = {DType::f64, DType::f32};
  CHECK_FALSE(refused_key(o, 90, 1024, 132));
  o.dtypes = {DType::f64};
  why = refused_key(o, 90, 1024, 132);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("float64 sum") && Catch::Contains("16-byte"));
  // A key of the material that a dtype cannot run is refused when asked for by --keys (tune
  // --material checks only the keys given, not the documents' own: tuner/cli_tune.cpp).
  SweepOptions m;
  m.allow_unsafe = true;
  m.dtypes = {DType::f16};
  m.keys = {"neighbored_gmem.b512.host"};
  why = refused_key(m, 90, 1024, 132);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("in place"));
}

TEST_CASE("segmented: the default grids", "[segmented]") {
  auto has = [](const std::vector<Shape>& g, Shape s) {
    return std::find(g.begin(), g.end(), s) != g.end();
  };
  for (Problem p : {Problem::rows, Problem::columns}) {
    const std::vector<Shape> g = default_shapes(p);
    // Every power-of-two length and two odd ones at 2^16, 2^20 and 2^24 elements.
    for (int total : {16, 20, 24}) {
      for (int e = 0; e <= total; ++e) CHECK(has(g, {1ull << (total - e), 1ull << e}));
      CHECK(has(g, {(1ull << total) / 1000 + ((1ull << total) % 1000 >= 500), 1000}));
    }
    CHECK(has(g, {(1ull << 28) >> 12, 1ull << 12}));
    CHECK(has(g, {(1ull << 28) >> 20, 1ull << 20}));
    CHECK(g.size() == 17 + 21 + 25 + 3 * 2 + 2);
  }
  // Offsets: looked up by count where the call does not give its element count, so the counts
  // of 2^20 and more elements run from 2^8 to one segment per element; 2^16 elements at the odd
  // powers 2^1..2^15 for calls that give it, and 2^23 segments of 2^24 (mean 2).
  const std::vector<Shape> s = default_shapes(Problem::segments);
  CHECK(has(s, {1ull << 8, 1ull << 12}));
  CHECK(has(s, {1ull << 24, 1}));
  CHECK(has(s, {1ull << 23, 2}));
  for (int e = 1; e < 16; e += 2) CHECK(has(s, {1ull << e, 1ull << (16 - e)}));
  for (const Shape& x : s) CHECK((x.count >= 256 || x.elements() == (1ull << 16)));
  CHECK(s.size() == 8 + 7 + 9 + 1 + 1);
}
