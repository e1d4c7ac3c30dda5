// The columns' last-block finish (Finish::lastblock on columns_split and its twin: the ordered
// finish's partials folded in row-slice order by the block that takes a stripe's last ticket, no
// second kernel): the validity rules admit it for every op and user reduction, non-commutative
// ones included; the sweep's space holds it; the plan sizes its counters and partials and launches
// no post pass; the rounding depth; the rendering; and every template configuration of the sweep
// compiles with NVRTC (no GPU needed).
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "kernels/segmented.h"
#include "kernels/user_op.h"
#include "tests/config_fixture.h"
#include "tests/user_reductions.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::first_nonzero_value;
using reduce_tune::testing::sm;

namespace {

constexpr DType kInputs[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};
constexpr const char* kLast = "columns_split.b256.u2.v4.g4.lastblock";
// The counters ahead of the partials (kernels/segmented.cpp, templates/segmented/columns.cu).
constexpr std::uint64_t kTicketBytes = 65536 * 4;

Target columns_target(DType d, Op op) { return sm(90, d, op, Problem::columns); }

Target user_target(const UserOp& u, DType d) {
  Target t = columns_target(d, Op::sum);
  t.user = &u;
  return t;
}

std::uint64_t group_of(std::uint64_t slices) {
  std::uint64_t g = 1;
  while (g * g < slices) ++g;
  return g;
}

} // namespace

TEST_CASE("columns lastblock: valid for every op and dtype, deterministic, columns_split only",
          "[lastblock_columns][catalogue]") {
  for (const OpDescription& o : op_descriptions())
    for (DType d : kInputs) {
      if (op_unsupported(o.op, d)) continue;
      INFO(o.name << " " << name(d));
      // 8-byte elements: vectors of two.
      const Config c = cfg(size_of(d) == 8 ? "columns_split.b256.u2.v2.g4.lastblock" : kLast);
      CHECK_FALSE(invalid_reason(c, columns_target(d, o.op)));
      CHECK_FALSE(invalid_reason(cfg("columns_split_streaming.b512.u4.v1.g8.lastblock"), columns_target(d, o.op)));
      // No atomic: older GPUs take it too.
      CHECK_FALSE(invalid_reason(c, sm(52, d, o.op, Problem::columns)));
      CHECK(deterministic(c, d));
    }
  for (const char* k : {"rows_split.b256.u2.v4.g4.lastblock", "segments_flat_carry.b128.u4.v2.g8.lastblock",
                        "columns_tile.b256.u2.v4.lastblock"}) {
    INFO(k);
    const Config c = cfg(k);
    CHECK_THAT(invalid_reason(c, sm(90, DType::f32, Op::argmax, find_variant(c.variant)->problem)).value_or(""),
               Catch::Contains("not available"));
  }
}

TEST_CASE("columns lastblock: keeps the order of a non-commutative user reduction",
          "[lastblock_columns][user]") {
  const auto ordered = make_user_op(first_nonzero_value());
  REQUIRE(ordered->ordered());
  CHECK_FALSE(invalid_reason(cfg(kLast), user_target(*ordered, DType::f32)));
  CHECK(invalid_reason(cfg("columns_split.b256.u2.v4.g4.atomic"), user_target(*ordered, DType::f32)));
  // Rendered in row order (contiguous rows a thread, a tree of neighbours), with no post pass.
  const std::string s = render(cfg(kLast), DType::f32, *ordered);
  CHECK_THAT(s, Catch::Contains("#define RT_ORDERED 1") && Catch::Contains("#define RT_FINISH_LASTBLOCK 1") &&
                    !Catch::Contains("#define RT_POST_PASS 1"));
}

TEST_CASE("columns lastblock: the sweep's space holds it beside the other finishes",
          "[lastblock_columns][segmented]") {
  for (const char* v : {"columns_split", "columns_split_streaming"}) {
    INFO(v);
    const std::vector<Config> s = space(*find_variant(v));
    auto count = [&](Finish f) {
      return std::count_if(s.begin(), s.end(), [&](const Config& c) { return c.finish == f; });
    };
    CHECK(count(Finish::lastblock) > 0);
    CHECK(count(Finish::lastblock) == count(Finish::twopass));
    CHECK(s.front().finish == Finish::atomic);
    for (const Config& c : s)
      if (c.finish == Finish::lastblock) CHECK_FALSE(invalid_reason(c, columns_target(DType::f32, Op::logsumexp)));
  }
  // The offsets mapping keeps its two finishes.
  const std::vector<Config> flat = space(*find_variant("segments_flat_carry"));
  CHECK(std::none_of(flat.begin(), flat.end(), [](const Config& c) { return c.finish == Finish::lastblock; }));
}

TEST_CASE("columns lastblock: not measured past 64 columns, where it never won",
          "[lastblock_columns][segmented]") {
  // Shape{count, length}: columns, rows.
  const Config last = cfg(kLast), two = cfg("columns_split.b256.u2.v4.g4.twopass");
  const auto why = pointless(last, Shape{256, 65536});
  REQUIRE(why);
  CHECK(why->find("256 columns") != std::string::npos);
  CHECK(pointless(last, Shape{65, 65536}));
  CHECK_FALSE(pointless(last, Shape{64, 65536}));
  CHECK_FALSE(pointless(last, Shape{16, 65536}));
  CHECK_FALSE(pointless(two, Shape{256, 65536})); // the post pass stays
}

TEST_CASE("columns lastblock: the plan sizes its counters and partials, one kernel",
          "[lastblock_columns][segmented]") {
  const Shape narrow{256, 65536};
  for (Op op : {Op::argmax, Op::var, Op::logsumexp, Op::sum}) {
    const Target t = columns_target(DType::f32, op);
    const SegmentedPlan p = segmented_plan(cfg(kLast), t, narrow);
    const std::uint64_t slices = p.aux >> 11;
    INFO(name(op) << ": " << slices << " slices");
    CHECK(slices > 32);
    CHECK_FALSE(p.post);
    CHECK_FALSE(p.fill);
    CHECK(p.post_bytes == 0);
    CHECK(p.work_bytes == 0);
    CHECK(p.partition_grid == 0);
    CHECK(p.chunk_grid == 0);
    CHECK(p.ticket_bytes == kTicketBytes + 256 * slices * accumulator_bytes(op, DType::f32));
    // The twopass finish's grid: only the finish differs.
    const SegmentedPlan two = segmented_plan(cfg("columns_split.b256.u2.v4.g4.twopass"), t, narrow);
    CHECK(p.grid == two.grid);
    CHECK(p.aux == two.aux);
  }
  // A user reduction's accumulator sizes the partials (a double).
  const auto u = make_user_op(first_nonzero_value());
  const SegmentedPlan up = segmented_plan(cfg(kLast), user_target(*u, DType::f32), narrow);
  CHECK(up.ticket_bytes == kTicketBytes + 256 * (up.aux >> 11) * 8);
  // One row slice: each block writes its columns, no state.
  const SegmentedPlan one = segmented_plan(cfg("columns_split.b256.u4.v1.g2.lastblock"),
                                           columns_target(DType::f32, Op::argmax), {3001, 4});
  CHECK((one.aux >> 11) == 1);
  CHECK(one.ticket_bytes == 0);
  CHECK_FALSE(one.post);
  // Counters past their fixed room (a stripe's own and one a group of slices) are refused.
  Target huge = columns_target(DType::f32, Op::argmax);
  huge.sm_count = 4096;
  CHECK_THROWS_AS(segmented_plan(cfg("columns_split.b256.u1.v1.g64.lastblock"), huge, {16384 * 256, 64}),
                  std::invalid_argument);
  CHECK_NOTHROW(segmented_plan(cfg("columns_split.b256.u1.v1.g64.lastblock"), huge, {4096 * 256, 64}));
}

TEST_CASE("columns lastblock: the rounding depth of two levels of ordered folds",
          "[lastblock_columns][segmented]") {
  const Shape narrow{256, 65536};
  const Target t = columns_target(DType::f32, Op::sum);
  const std::uint64_t slices = segmented_plan(cfg(kLast), t, narrow).aux >> 11;
  const std::uint64_t group = group_of(slices);
  const std::uint64_t last = segment_depth(cfg(kLast), t, narrow, narrow.length);
  const std::uint64_t atomic = segment_depth(cfg("columns_split.b256.u2.v4.g4.atomic"), t, narrow, narrow.length);
  CHECK(last < atomic);
  CHECK(atomic - last == slices - (group + (slices + group - 1) / group + 10));
}

// NVRTC needs no GPU: every template configuration the sweep measures (block, unroll and vector
// width; the grid is a launch value), the struct accumulators of every dtype, and a
// non-commutative user reduction. Each module has no post pass.
TEST_CASE("columns lastblock: every configuration of the sweep compiles", "[lastblock_columns][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  std::set<std::tuple<int, int, int>> shapes; // one job per rendered source
  for (const Config& c : space(*find_variant("columns_split")))
    if (c.finish == Finish::lastblock && shapes.emplace(c.block, c.unroll, c.vec).second)
      jobs.push_back({c, DType::f32, Op::argmax});
  CHECK(jobs.size() == 32); // 256 and 512 threads with u1-u8 and v1-v4, 1024 with v1 and v2
  jobs.push_back({cfg("columns_split_streaming.b512.u4.v4.g8.lastblock"), DType::f32, Op::logsumexp});
  for (Op op : {Op::argmax, Op::argmin, Op::var, Op::std_, Op::logsumexp, Op::sum, Op::mean})
    for (DType d : {DType::f32, DType::f64, DType::bf16, DType::i32}) {
      if (op_unsupported(op, d)) continue;
      const Config c = cfg(d == DType::f64 ? "columns_split.b256.u2.v2.g4.lastblock" : kLast);
      REQUIRE_FALSE(invalid_reason(c, columns_target(d, op)));
      jobs.push_back({c, d, op});
    }
  for (const CompileOutcome& o : compile_all(loader, jobs, 0)) {
    CHECK(o.error.substr(0, 2000).empty());
    if (o.error.empty()) CHECK(o.compiled.image.find("rt_segmented_post") == std::string::npos);
  }
  const auto u = make_user_op(first_nonzero_value());
  for (const char* k : {kLast, "columns_split_streaming.b512.u1.v1.g8.lastblock"}) {
    INFO(k);
    const Compiled out = loader.compile(cfg(k), DType::f32, u);
    CHECK(out.image.find("rt_segmented") != std::string::npos);
  }
}
