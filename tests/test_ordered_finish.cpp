// The segmented ordered finish (Finish::twopass on columns_split and segments_flat_carry: partials
// in a workspace, combined in block order by the template's rt_segmented_post): the validity rules
// admit it for every op, struct accumulators and user reductions included; the plan sizes its
// workspace and post pass; the sweep's space holds it; the rendering; the rounding depth; and
// that the templates compile with NVRTC for a non-commutative user reduction (the all-ops NVRTC
// test, tests/test_ops.cpp, covers every built-in op and dtype). No GPU needed.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "kernels/user_op.h"
#include "tests/config_fixture.h"
#include "tests/user_reductions.h"

#include <algorithm>
#include <bit>
#include <string>
#include <string_view>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::sm;
using reduce_tune::testing::first_nonzero_value;

namespace {

constexpr DType kInputs[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};
constexpr const char* kColumns = "columns_split.b256.u2.v2.g4.twopass";
constexpr const char* kFlat = "segments_flat_carry.b128.u4.v2.g8.twopass";

Target user_target(const UserOp& u, DType d, Problem p) {
  Target t = sm(90, d, Op::sum, p);
  t.user = &u;
  return t;
}

} // namespace

TEST_CASE("ordered finish: valid for every op and dtype, the atomic one only where it was",
          "[ordered_finish][catalogue]") {
  for (const OpDescription& o : op_descriptions())
    for (DType d : kInputs) {
      if (op_unsupported(o.op, d)) continue;
      INFO(o.name << " " << name(d));
      CHECK_FALSE(invalid_reason(cfg(kColumns), sm(90, d, o.op, Problem::columns)));
      CHECK_FALSE(invalid_reason(cfg(kFlat), sm(90, d, o.op, Problem::segments)));
      // No atomic, no 16-bit CAS, no float64 atomicAdd: older GPUs take it too.
      CHECK_FALSE(invalid_reason(cfg(kColumns), sm(52, d, o.op, Problem::columns)));
      CHECK(deterministic(cfg(kColumns), d));
    }
  // The struct accumulators still have no atomic finish (argmax's keyed one and var's shifted one
  // on the columns aside: test_keyed_columns.cpp, test_shifted_columns.cpp).
  CHECK(invalid_reason(cfg("columns_split.b256.u2.v2.g4.atomic"), sm(90, DType::f32, Op::logsumexp, Problem::columns)));
  CHECK(invalid_reason(cfg("columns_split.b256.u2.v2.g4.atomic"), sm(90, DType::f64, Op::var, Problem::columns)));
  for (Op op : {Op::var, Op::logsumexp})
    CHECK(invalid_reason(cfg("segments_flat_carry.b128.u4.v2.g8.atomic"), sm(90, DType::f32, op, Problem::segments)));
  // Only the split columns and the flat mapping with the carry take it.
  for (const char* k : {"rows_split.b256.u2.v4.g4.twopass", "segments_flat.b256.u4.v4.g8.twopass",
                        "segments_split.b256.u2.v4.g4.twopass"}) {
    INFO(k);
    std::string why;
    const auto c = parse_key(k, &why);
    REQUIRE(c);
    CHECK_THAT(invalid_reason(*c, sm(90, DType::f32, Op::argmax, find_variant(c->variant)->problem)).value_or(""),
               Catch::Contains("not available"));
  }
}

TEST_CASE("ordered finish: user reductions, non-commutative ones included", "[ordered_finish][user]") {
  const auto ordered = make_user_op(first_nonzero_value());
  REQUIRE(ordered->ordered());
  REQUIRE_FALSE(ordered->reads_index());
  CHECK_FALSE(invalid_reason(cfg(kColumns), user_target(*ordered, DType::f32, Problem::columns)));
  CHECK_FALSE(invalid_reason(cfg(kFlat), user_target(*ordered, DType::f32, Problem::segments)));
  CHECK(invalid_reason(cfg("columns_split.b256.u2.v2.g4.atomic"), user_target(*ordered, DType::f32, Problem::columns)));
  // A map that reads the index: the flat mapping does not track it in the segment.
  Reduction indexed = first_nonzero_value();
  indexed.map = "x != 0 ? double(i + 1) : 0.0";
  const auto by_index = make_user_op(indexed);
  REQUIRE(by_index->reads_index());
  CHECK_THAT(invalid_reason(cfg(kFlat), user_target(*by_index, DType::f32, Problem::segments)).value_or(""),
             Catch::Contains("index"));
  CHECK_FALSE(invalid_reason(cfg(kColumns), user_target(*by_index, DType::f32, Problem::columns)));
  // reads_index is a token test: `i` alone, not inside another name.
  for (const char* map : {"x * x", "fabs(x) + 1", "min(x, 0.f)", "x > 0 ? x : -x"}) {
    Reduction r = first_nonzero_value();
    r.map = map;
    INFO(map);
    CHECK_FALSE(make_user_op(r)->reads_index());
  }
  for (const char* map : {"x * i", "double(i)", "(i+1) * x", "x*(i)"}) {
    Reduction r = first_nonzero_value();
    r.map = map;
    INFO(map);
    CHECK(make_user_op(r)->reads_index());
  }
  Reduction macro = first_nonzero_value();
  macro.preamble = "#define AT i";
  macro.map = "x * AT";
  CHECK(make_user_op(macro)->reads_index());
}

TEST_CASE("ordered finish: the sweep's space holds it beside the atomic points",
          "[ordered_finish][segmented]") {
  for (const char* name : {"columns_split", "columns_split_streaming", "segments_flat_carry",
                           "segments_flat_carry_streaming"}) {
    INFO(name);
    const std::vector<Config> s = space(*find_variant(name));
    const auto ordered = std::count_if(s.begin(), s.end(), [](const Config& c) { return c.finish == Finish::twopass; });
    const auto atomic = std::count_if(s.begin(), s.end(), [](const Config& c) { return c.finish == Finish::atomic; });
    CHECK(ordered > 0);
    // The flat carry's ordered points add v2 (8-byte elements take no v4); columns_split's add
    // taller row slices (one block of 512 or 1024 threads an SM, two of 1024, u8) to the atomic
    // points' own.
    if (std::string_view(name).starts_with("segments_flat_carry")) CHECK(ordered == 2 * atomic);
    else {
      CHECK(ordered > atomic);
      for (const Config& c : s) {
        Config twin = c;
        twin.finish = Finish::twopass;
        if (c.finish == Finish::atomic) CHECK(std::find(s.begin(), s.end(), twin) != s.end());
        if (c.finish == Finish::twopass && c.block <= 512 && c.grid >= 2 && c.unroll <= 4) {
          twin.finish = Finish::atomic;
          CHECK(std::find(s.begin(), s.end(), twin) != s.end());
        }
      }
    }
    CHECK(s.front().finish == Finish::atomic); // the atomic points first, as before
    // Every ordered point is valid for argmax (which no atomic point is).
    for (const Config& c : s) {
      if (c.finish != Finish::twopass) continue;
      CHECK_FALSE(invalid_reason(c, sm(90, DType::f32, Op::argmax, find_variant(name)->problem)));
    }
  }
}

TEST_CASE("ordered finish: the plan sizes the partials and the post pass",
          "[ordered_finish][segmented]") {
  // Columns: a partial per column and row slice; a group of lanes per column, up to a warp.
  const Shape narrow{256, 65536};
  for (Op op : {Op::argmax, Op::var, Op::sum}) {
    const Target t = sm(90, DType::f32, op, Problem::columns);
    const SegmentedPlan p = segmented_plan(cfg(kColumns), t, narrow);
    const std::uint64_t slices = p.aux >> 11;
    INFO(name(op) << ": " << slices << " slices");
    CHECK(slices > 1);
    CHECK(p.post);
    CHECK_FALSE(p.fill);
    CHECK(p.partition_grid == 0);
    CHECK(p.work_bytes == 0);
    CHECK(p.post_bytes == 256 * slices * accumulator_bytes(op, DType::f32));
    const std::uint64_t lanes = std::min<std::uint64_t>(std::bit_ceil(slices), 32);
    CHECK(p.post_grid == (256 * lanes + 255) / 256);
    // The same grid of blocks as the atomic finish: only the finish differs.
    const SegmentedPlan atomic = segmented_plan(cfg("columns_split.b256.u2.v2.g4.atomic"),
                                                sm(90, DType::f32, Op::sum, Problem::columns), narrow);
    CHECK(p.grid == atomic.grid);
    CHECK(p.aux == atomic.aux);
  }
  // One row slice: a lane per column.
  const SegmentedPlan wide = segmented_plan(cfg(kColumns), sm(90, DType::f32, Op::argmax, Problem::columns), {1 << 20, 4});
  CHECK((wide.aux >> 11) == 1);
  CHECK(wide.post_bytes == (std::uint64_t(1) << 20) * 16);
  CHECK(wide.post_grid == (1u << 20) / 256);
  // Offsets: an accumulator per segment and two pieces a block; no partition, no fill.
  for (Op op : {Op::argmax, Op::logsumexp, Op::sum}) {
    const Target t = sm(90, DType::f32, op, Problem::segments);
    const SegmentedPlan p = segmented_plan(cfg(kFlat), t, {1 << 17, 128});
    INFO(name(op));
    CHECK(p.post);
    CHECK_FALSE(p.fill);
    CHECK(p.partition_grid == 0);
    CHECK(p.grid == 8 * 132);
    CHECK(p.aux == p.grid);
    CHECK(p.post_bytes == ((std::uint64_t(1) << 17) + 2 * 8 * 132) * accumulator_bytes(op, DType::f32));
    CHECK(p.post_grid == (1u << 17) / 256);
    // The atomic twin keeps its partition kernel.
    if (op == Op::sum)
      CHECK(segmented_plan(cfg("segments_flat_carry.b128.u4.v2.g8.atomic"), t, {1 << 17, 128}).partition_grid > 0);
  }
  // Few segments: a warp per block boundary sets the post pass's grid.
  const SegmentedPlan one = segmented_plan(cfg(kFlat), sm(90, DType::f32, Op::argmax, Problem::segments), {1, 1 << 22});
  CHECK(one.post_grid == 8 * 132 * 32 / 256);
  CHECK(one.post_bytes == (1 + 2 * 8 * 132) * 16);
  // A user reduction's accumulator sizes it.
  const auto u = make_user_op(first_nonzero_value());
  CHECK(segmented_plan(cfg(kColumns), user_target(*u, DType::f32, Problem::columns), {1000, 1}).post_bytes ==
        1000 * 8);
}

TEST_CASE("ordered finish: rendered with the post pass for any op; others unchanged",
          "[ordered_finish][catalogue]") {
  for (Op op : {Op::argmax, Op::sum, Op::mean}) {
    const std::string s = render(cfg(kFlat), DType::f32, op);
    INFO(name(op));
    CHECK_THAT(s, Catch::Contains("#define RT_FINISH_TWOPASS 1") && Catch::Contains("#define RT_POST_PASS 1") &&
                      Catch::Contains("#define R rt_result_type") && Catch::Contains("rt_segmented_post"));
    // No atomic is declared for it (mean's appears only with the atomic finish's post pass).
    if (op == Op::mean) CHECK_THAT(s, !Catch::Contains("#define RT_ATOMIC_ADD"));
  }
  CHECK_THAT(render(cfg(kFlat), DType::f32, Op::argmax), Catch::Contains("rt_rebase"));
  // The atomic finish of sum is rendered as before: no post pass.
  CHECK_THAT(render(cfg("segments_flat_carry.b128.u4.v2.g8.atomic"), DType::f32, Op::sum),
             !Catch::Contains("RT_POST_PASS"));
  const auto u = make_user_op(first_nonzero_value());
  const std::string user = render(cfg(kColumns), DType::f32, *u);
  CHECK_THAT(user, Catch::Contains("#define RT_POST_PASS 1") && Catch::Contains("#define RT_ORDERED 1"));
}

TEST_CASE("ordered finish: the rounding depth of the post pass's combine", "[ordered_finish][segmented]") {
  const Shape narrow{256, 65536};
  const Target t = sm(90, DType::f32, Op::sum, Problem::columns);
  const std::uint64_t slices = segmented_plan(cfg(kColumns), t, narrow).aux >> 11;
  REQUIRE(slices > 64);
  // Slices folded a run a lane and a shuffle tree, not one after another.
  const std::uint64_t ordered = segment_depth(cfg(kColumns), t, narrow, narrow.length);
  const std::uint64_t atomic = segment_depth(cfg("columns_split.b256.u2.v2.g4.atomic"), t, narrow, narrow.length);
  CHECK(ordered < atomic);
  CHECK(atomic - ordered == slices - ((slices + 31) / 32 + 5));
  const Target ts = sm(90, DType::f32, Op::sum, Problem::segments);
  const std::uint64_t flat = segment_depth(cfg(kFlat), ts, {1, 1 << 22}, 1 << 22);
  const std::uint64_t flat_atomic =
      segment_depth(cfg("segments_flat_carry.b128.u4.v2.g8.atomic"), ts, {1, 1 << 22}, 1 << 22);
  CHECK(flat_atomic - flat == 8 * 132 - ((8 * 132 + 31) / 32 + 5));
}

// NVRTC needs no GPU: a non-commutative user reduction through every ordered mapping (columns in
// row order, RT_ORDERED), each module with its post pass; and the columns mappings that keep the
// order with the direct finish.
TEST_CASE("ordered finish: the templates compile for a non-commutative user reduction",
          "[ordered_finish][nvrtc][user]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  const auto u = make_user_op(first_nonzero_value());
  std::size_t compiled = 0;
  for (const char* k : {kColumns, kFlat, "columns_split_streaming.b512.u4.v4.g8.twopass",
                        "segments_flat_carry.b256.u2.v4.g32.twopass", "columns_tile.b256.u2.v4.direct"}) {
    const Config c = cfg(k);
    INFO(k);
    REQUIRE_FALSE(invalid_reason(c, user_target(*u, DType::f32, find_variant(c.variant)->problem)));
    const Compiled out = loader.compile(c, DType::f32, u);
    if (c.finish == Finish::twopass) CHECK(out.image.find("rt_segmented_post") != std::string::npos);
    ++compiled;
  }
  CHECK(compiled == 5);
  // The struct accumulators of 8-byte elements (the flat mapping's raw elements, v2).
  std::vector<CompileJob> jobs;
  for (const char* k : {"segments_flat_carry.b128.u4.v2.g8.twopass", "columns_split.b256.u2.v2.g4.twopass"})
    for (Op op : {Op::argmax, Op::var, Op::std_, Op::logsumexp, Op::sum})
      for (DType d : {DType::f64, DType::i64}) {
        const Config c = cfg(k);
        if (op_unsupported(op, d)) continue;
        REQUIRE_FALSE(invalid_reason(c, sm(90, d, op, find_variant(c.variant)->problem)));
        jobs.push_back({c, d, op});
      }
  CHECK(jobs.size() == 18);
  for (const auto& o : compile_all(loader, jobs, 0)) CHECK(o.error.substr(0, 2000).empty());
}
