// argmax's and argmin's keyed atomic finish on the columns (OpAtomic::key: each block's partial of a
// column as an ordered 64-bit key, combined by atomicMax in a workspace that a post pass turns into
// indices): which ops and dtypes take it, where it is refused and why, that it counts as
// deterministic, the plan (a fill, a workspace of keys, the post pass), the 32-bit index limit in
// the plan and in the lookup's and defaults' choice, the rendering, and that its sources compile
// with NVRTC (no GPU needed). Its results on a GPU: tests/test_gpu_keyed_columns.cpp.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "kernels/segmented.h"
#include "tests/config_fixture.h"

#include <stdexcept>
#include <string>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::sm;

namespace {

constexpr const char* kKeyed = "columns_split.b256.u4.v4.g4.atomic";
constexpr DType kKeyedDtypes[] = {DType::f32, DType::i32, DType::u32, DType::bf16, DType::f16};

Target columns_target(DType d, Op op) { return sm(90, d, op, Problem::columns); }

} // namespace

TEST_CASE("keyed columns: argmax and argmin of 32-bit values finish atomically, nothing else keyed",
          "[keyed_columns][catalogue]") {
  for (Op op : {Op::argmax, Op::argmin}) {
    CHECK(describe(op).traits.atomic == OpAtomic::key);
    for (DType d : kKeyedDtypes) {
      INFO(name(op) << " " << name(d));
      CHECK(keyed_atomic(op, d));
      CHECK(atomic_post_pass(op, d, Problem::columns));
      CHECK_FALSE(invalid_reason(cfg(kKeyed), columns_target(d, op)));
      CHECK_FALSE(invalid_reason(cfg("columns_split_streaming.b512.u2.v2.g8.atomic"), columns_target(d, op)));
      CHECK(deterministic(cfg(kKeyed), columns_target(d, op)));
      CHECK_THAT(invalid_reason(cfg(kKeyed), sm(30, d, op, Problem::columns)).value_or(""), Catch::Contains("sm_35"));
      // Not the other problems: their mappings index elements otherwise (the flat one in the input).
      for (Problem p : {Problem::array, Problem::rows, Problem::segments}) CHECK_FALSE(atomic_post_pass(op, d, p));
      CHECK_THAT(invalid_reason(cfg("rows_split.b256.u2.v4.g4.atomic"), sm(90, d, op, Problem::rows)).value_or(""),
                 Catch::Contains("columns problem's atomic finish only"));
    }
    for (DType d : {DType::f64, DType::i64}) { // a 64-bit value leaves no room for the index
      INFO(name(op) << " " << name(d));
      CHECK_FALSE(keyed_atomic(op, d));
      CHECK_THAT(invalid_reason(cfg("columns_split.b256.u4.v2.g4.atomic"), columns_target(d, op)).value_or(""),
                 Catch::Contains("ordered 64-bit key"));
    }
  }
  for (const OpDescription& o : op_descriptions()) {
    if (o.op == Op::argmax || o.op == Op::argmin) continue;
    INFO(o.name);
    CHECK(o.traits.atomic != OpAtomic::key);
    CHECK_FALSE(keyed_atomic(o.op, DType::f32));
  }
  CHECK(invalid_reason(cfg(kKeyed), columns_target(DType::f32, Op::logsumexp)).has_value());
}

TEST_CASE("keyed columns: the taller row slices are left to the ops without an atomic finish",
          "[keyed_columns][segmented]") {
  const Config tall = cfg("columns_split.b1024.u4.v2.g1.twopass");
  CHECK(unswept(tall, columns_target(DType::f32, Op::argmax)).has_value());
  CHECK(unswept(tall, columns_target(DType::bf16, Op::argmin)).has_value());
  CHECK_FALSE(unswept(tall, columns_target(DType::f64, Op::argmax)));
  CHECK_FALSE(unswept(tall, columns_target(DType::f32, Op::var)));
}

TEST_CASE("keyed columns: the plan fills a workspace of keys and ends with the post pass",
          "[keyed_columns][segmented]") {
  const Shape shape{256, 65536};
  const Target t = columns_target(DType::f32, Op::argmax);
  const SegmentedPlan p = segmented_plan(cfg(kKeyed), t, shape);
  CHECK(p.fill);
  CHECK(p.post);
  CHECK(p.post_bytes >= 256 * sizeof(std::uint64_t)); // a key a column (room for an accumulator)
  CHECK(p.ticket_bytes == 0);
  // The same grid as the ordered finish of that configuration: only the finish differs.
  const SegmentedPlan two = segmented_plan(cfg("columns_split.b256.u4.v4.g4.twopass"), t, shape);
  CHECK(p.grid == two.grid);
  CHECK(p.aux == two.aux);
  // The rows are indexed in 32 bits: the plan refuses more (and names why), and so do the
  // lookup's and the defaults' choice (shape_invalid), at the lookup's power-of-two points too.
  CHECK_NOTHROW(segmented_plan(cfg(kKeyed), t, {4, kKeyedMaxLength}));
  CHECK_THROWS_WITH(segmented_plan(cfg(kKeyed), t, {4, kKeyedMaxLength + 1}),
                    Catch::Contains("indexes rows in 32 bits"));
  CHECK_FALSE(shape_invalid(cfg(kKeyed), t, {4, std::uint64_t(1) << 31}));
  CHECK(shape_invalid(cfg(kKeyed), t, {4, std::uint64_t(1) << 32}).has_value());
  // Not the ordered finishes, nor another op's atomic one.
  CHECK_FALSE(shape_invalid(cfg("columns_split.b256.u4.v4.g4.twopass"), t, {4, std::uint64_t(1) << 33}));
  CHECK_FALSE(shape_invalid(cfg(kKeyed), columns_target(DType::f32, Op::sum), {4, std::uint64_t(1) << 33}));
}

TEST_CASE("keyed columns: the source declares the keyed atomic and the key's two functions",
          "[keyed_columns][render]") {
  const std::string keyed = render(cfg(kKeyed), DType::f32, Op::argmax);
  CHECK(keyed.find("#define RT_ATOMIC_KEY 1") != std::string::npos);
  CHECK(keyed.find("rt_key(A a)") != std::string::npos);
  CHECK(keyed.find("rt_unkey(unsigned long long k)") != std::string::npos);
  // The ordered finish of the same op declares no atomic: its sources are as they were.
  const std::string ordered = render(cfg("columns_split.b256.u4.v4.g4.twopass"), DType::f32, Op::argmax);
  CHECK(ordered.find("#define RT_ATOMIC_KEY") == std::string::npos);
  CHECK(op_source(Op::argmax, DType::f64).find("rt_key") == std::string::npos);
}

TEST_CASE("keyed columns: every keyed configuration of the sweep compiles", "[keyed_columns][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  for (const Config& c : space(*find_variant("columns_split")))
    if (c.finish == Finish::atomic && c.grid == 4) jobs.push_back({c, DType::f32, Op::argmax});
  REQUIRE(jobs.size() == 24); // 256 and 512 threads, u1, u2, u4 and u8, v1, v2 and v4
  for (Op op : {Op::argmax, Op::argmin})
    for (DType d : kKeyedDtypes) jobs.push_back({cfg(kKeyed), d, op});
  const std::vector<CompileOutcome> out = compile_all(loader, jobs, 0);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(key(jobs[i].config) << " " << name(jobs[i].dtype) << " " << name(jobs[i].op));
    CHECK(out[i].error.substr(0, 2000).empty());
    if (out[i].error.empty()) CHECK(out[i].compiled.image.find("rt_segmented_post") != std::string::npos);
  }
}
