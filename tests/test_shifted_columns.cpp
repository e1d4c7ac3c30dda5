// var's and std's shifted atomic finish on the columns (OpAtomic::shifted: each block's partial of
// a column as float64 sums of its deviations from the column's first element and of their
// squares, combined by atomicAdd in a workspace that a post pass turns into results): which ops and
// dtypes take it, where it is refused and why, that it is not deterministic, that the ordered
// finish's taller slices stay swept beside it, the plan, the rendering, and that its sources
// compile with NVRTC (no GPU needed). Its results on a GPU: tests/test_gpu_shifted_columns.cpp.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "kernels/segmented.h"
#include "tests/config_fixture.h"

#include <string>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::sm;

namespace {

constexpr const char* kShifted = "columns_split.b256.u4.v4.g4.atomic";
constexpr DType kShiftedDtypes[] = {DType::f32, DType::bf16, DType::f16};
constexpr Op kMoments[] = {Op::var, Op::std_, Op::var_population, Op::std_population};

Target columns_target(DType d, Op op) { return sm(90, d, op, Problem::columns); }

} // namespace

TEST_CASE("shifted columns: var and std of float32 fields finish atomically, nothing else shifted",
          "[shifted_columns][catalogue]") {
  for (Op op : kMoments) {
    CHECK(describe(op).traits.atomic == OpAtomic::shifted);
    for (DType d : kShiftedDtypes) {
      INFO(name(op) << " " << name(d));
      CHECK(shifted_atomic(op, d));
      CHECK(atomic_post_pass(op, d, Problem::columns));
      CHECK_FALSE(invalid_reason(cfg(kShifted), columns_target(d, op)));
      CHECK_FALSE(invalid_reason(cfg("columns_split_streaming.b512.u2.v2.g8.atomic"), columns_target(d, op)));
      // Float64 sums added in arrival order.
      CHECK_FALSE(deterministic(cfg(kShifted), columns_target(d, op)));
      CHECK(deterministic(cfg("columns_split.b256.u4.v4.g4.twopass"), columns_target(d, op)));
      CHECK_THAT(invalid_reason(cfg(kShifted), sm(52, d, op, Problem::columns)).value_or(""), Catch::Contains("sm_60"));
      for (Problem p : {Problem::array, Problem::rows, Problem::segments}) CHECK_FALSE(atomic_post_pass(op, d, p));
      CHECK_THAT(invalid_reason(cfg("rows_split.b256.u2.v4.g4.atomic"), sm(90, d, op, Problem::rows)).value_or(""),
                 Catch::Contains("columns problem's atomic finish only"));
    }
    // Float64 fields (float64 and integer elements): their sums would cancel at float64's own
    // precision.
    for (DType d : {DType::f64, DType::i32, DType::i64}) {
      INFO(name(op) << " " << name(d));
      CHECK_FALSE(shifted_atomic(op, d));
      CHECK_THAT(invalid_reason(cfg("columns_split.b256.u4.v2.g4.atomic"), columns_target(d, op)).value_or(""),
                 Catch::Contains("float64 sums"));
    }
  }
  for (const OpDescription& o : op_descriptions()) {
    if (o.family == Op::var) continue;
    INFO(o.name);
    CHECK(o.traits.atomic != OpAtomic::shifted);
    CHECK_FALSE(shifted_atomic(o.op, DType::f32));
  }
}

TEST_CASE("shifted columns: the ordered finish's taller slices stay swept beside it",
          "[shifted_columns][segmented]") {
  const Config tall = cfg("columns_split.b1024.u4.v2.g1.twopass");
  for (Op op : kMoments) CHECK_FALSE(unswept(tall, columns_target(DType::f32, op)));
  CHECK(unswept(tall, columns_target(DType::f32, Op::sum)).has_value());
}

TEST_CASE("shifted columns: the plan fills a workspace of sums and ends with the post pass",
          "[shifted_columns][segmented]") {
  const Shape shape{256, 65536};
  for (DType d : kShiftedDtypes) {
    const Target t = columns_target(d, Op::var);
    const SegmentedPlan p = segmented_plan(cfg(kShifted), t, shape);
    CHECK(p.fill);
    CHECK(p.post);
    CHECK(p.post_bytes >= 256 * 2 * sizeof(double)); // two float64 sums a column
    CHECK(p.ticket_bytes == 0);
    const SegmentedPlan two = segmented_plan(cfg("columns_split.b256.u4.v4.g4.twopass"), t, shape);
    CHECK(p.grid == two.grid);
    CHECK(p.aux == two.aux);
    // No limit of its own on the rows.
    CHECK_FALSE(shape_invalid(cfg(kShifted), t, {4, std::uint64_t(1) << 33}));
  }
}

TEST_CASE("shifted columns: the source declares the shifted atomic and its two functions",
          "[shifted_columns][render]") {
  const std::string shifted = render(cfg(kShifted), DType::f32, Op::std_);
  CHECK(shifted.find("#define RT_ATOMIC_SHIFTED 1") != std::string::npos);
  CHECK(shifted.find("rt_sums rt_shift(A a, double k)") != std::string::npos);
  CHECK(shifted.find("A rt_unshift(rt_sums s, rt_size count)") != std::string::npos);
  const std::string ordered = render(cfg("columns_split.b256.u4.v4.g4.twopass"), DType::f32, Op::std_);
  CHECK(ordered.find("#define RT_ATOMIC_SHIFTED") == std::string::npos);
  CHECK(op_source(Op::var, DType::f64).find("rt_shift") == std::string::npos);
  CHECK(op_source(Op::var, DType::i32).find("rt_shift") == std::string::npos);
}

TEST_CASE("shifted columns: every shifted configuration of the sweep compiles", "[shifted_columns][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  for (const char* variant : {"columns_split", "columns_split_streaming"})
    for (const Config& c : space(*find_variant(variant)))
      if (c.finish == Finish::atomic && c.grid == 4) jobs.push_back({c, DType::f32, Op::var});
  REQUIRE(jobs.size() == 48); // two variants of 256 and 512 threads, u1, u2, u4 and u8, v1, v2 and v4
  for (Op op : kMoments)
    for (DType d : kShiftedDtypes) jobs.push_back({cfg(kShifted), d, op});
  const std::vector<CompileOutcome> out = compile_all(loader, jobs, 0);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(key(jobs[i].config) << " " << name(jobs[i].dtype) << " " << name(jobs[i].op));
    CHECK(out[i].error.substr(0, 2000).empty());
    if (out[i].error.empty()) CHECK(out[i].compiled.image.find("rt_segmented_post") != std::string::npos);
  }
}
