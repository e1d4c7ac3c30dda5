// The segmented atomic finish with a post pass (kernels/catalogue.h, atomic_post_pass): which ops
// and dtypes take it, that the validity rules admit it exactly there, the plan (accumulators in
// the results or in a workspace), the rendering (other sources unchanged), and that the mappings
// and rt_segmented_post compile with NVRTC (no GPU needed).
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "tests/config_fixture.h"

#include <set>
#include <string>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::reason;
using reduce_tune::testing::sm;

namespace {

constexpr Problem kSegmented[] = {Problem::rows, Problem::columns, Problem::segments};
constexpr Op kPostOps[] = {Op::mean, Op::norm2, Op::any, Op::all};
constexpr Op kCompound[] = {Op::argmax, Op::argmin, Op::logsumexp, Op::var, Op::std_,
                            Op::var_population, Op::std_population};

// One configuration of each atomic mapping (and its evict-first twin) per problem.
constexpr const char* kAtomicKeys[] = {
    "columns_split.b256.u2.v4.g4.atomic",          "columns_split_streaming.b256.u4.v2.g8.atomic",
    "rows_split.b256.u2.v4.g4.atomic",             "rows_split_streaming.b512.u1.v2.g2.atomic",
    "segments_split.b256.u2.v4.g4.atomic",         "segments_binned.b256.w8.u1.v2.g4.atomic",
    "segments_merge.b256.u8.g4.atomic",            "segments_flat.b256.u4.v4.g8.atomic",
    "segments_flat_carry.b128.u4.v4.g32.atomic",   "segments_staged.b128.u4.v4.g8.atomic",
};

Problem problem_of(const char* k) { return find_variant(cfg(k).variant)->problem; }

} // namespace

TEST_CASE("post pass: the ops with an atomic that cannot combine into their result",
          "[post_pass][catalogue]") {
  for (Problem p : kSegmented) {
    INFO(name(p));
    for (Op op : kPostOps) CHECK(atomic_post_pass(op, DType::f32, p));
    CHECK(atomic_post_pass(Op::mean, DType::i32, p));  // float64 accumulator and result
    CHECK(atomic_post_pass(Op::any, DType::i64, p));   // uint8 result of a 32-bit accumulator
    CHECK(atomic_post_pass(Op::sum, DType::bf16, p));  // float32 accumulator, rounded once
    CHECK(atomic_post_pass(Op::sumsq, DType::f16, p));
    // Those that combine into the result as before.
    CHECK_FALSE(atomic_post_pass(Op::sum, DType::f32, p));
    CHECK_FALSE(atomic_post_pass(Op::count_nonzero, DType::f16, p)); // int64 into int64
    CHECK_FALSE(atomic_post_pass(Op::max, DType::bf16, p));          // exact: the 16-bit CAS
    // Compound accumulators: none but argmax's and argmin's keys and var's and std's shifted sums
    // on the columns.
    for (Op op : kCompound)
      CHECK(atomic_post_pass(op, DType::f32, p) ==
            (p == Problem::columns && (keyed_atomic(op, DType::f32) || shifted_atomic(op, DType::f32))));
  }
  for (Op op : kPostOps) CHECK_FALSE(atomic_post_pass(op, DType::f32, Problem::array));
}

TEST_CASE("post pass: the validity rules admit the atomic mappings for mean, norm2, any and all",
          "[post_pass][catalogue]") {
  for (const char* k : kAtomicKeys) {
    const Problem p = problem_of(k);
    for (Op op : kPostOps) {
      INFO(k << " " << name(op));
      CHECK(reason(k, sm(90, DType::f32, op, p)).empty());
    }
    INFO(k);
    CHECK(reason(k, sm(90, DType::i32, Op::all, p)).empty());
    // Compound accumulators still have no atomic, but argmax's and argmin's keys and var's and
    // std's shifted sums on the columns (test_keyed_columns.cpp, test_shifted_columns.cpp).
    for (Op op : kCompound)
      if (p == Problem::columns && (keyed_atomic(op, DType::f32) || shifted_atomic(op, DType::f32)))
        CHECK(reason(k, sm(90, DType::f32, op, p)).empty());
      else CHECK_THAT(reason(k, sm(90, DType::f32, op, p)), Catch::Contains("no atomic combine"));
  }
  // Integer means add float64 accumulators: sm_60's atomicAdd.
  CHECK(reason("columns_split.b256.u2.v2.g4.atomic", sm(90, DType::i32, Op::mean, Problem::columns)).empty());
  CHECK_THAT(reason("columns_split.b256.u2.v2.g4.atomic", sm(52, DType::i32, Op::mean, Problem::columns)),
             Catch::Contains("sm_60"));
  // The array's atomic finishes still combine into the result itself: not for these ops.
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f32, Op::mean, Problem::array)),
             Catch::Contains("no atomic combine"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f32, Op::any, Problem::array)),
             Catch::Contains("not its accumulator"));
  // The sweep's space now holds valid atomic column mappings for these ops.
  auto valid = [](Op op) {
    std::size_t n = 0;
    for (const Config& c : space(*find_variant("columns_split")))
      n += !invalid_reason(c, sm(90, DType::f32, op, Problem::columns));
    return n;
  };
  REQUIRE(valid(Op::sum) > 0);
  for (Op op : kPostOps) {
    INFO(name(op));
    CHECK(valid(op) == valid(Op::sum));
  }
}

TEST_CASE("post pass: the plan keeps accumulators in the results or a workspace",
          "[post_pass][segmented]") {
  const Config split = cfg("columns_split.b256.u2.v4.g4.atomic");
  const Shape square{4096, 4096};
  // float32 mean and norm2: the accumulators are float32 results; nothing more to allocate.
  for (Op op : {Op::mean, Op::norm2}) {
    const SegmentedPlan p = segmented_plan(split, sm(90, DType::f32, op, Problem::columns), square);
    CHECK(p.post);
    CHECK(p.fill);
    CHECK(p.post_bytes == 0);
  }
  CHECK(segmented_plan(split, sm(90, DType::i32, Op::mean, Problem::columns), square).post_bytes == 0);
  // any/all: 32-bit accumulators for uint8 results; a bf16 sum: float32 ones.
  for (Op op : {Op::any, Op::all}) {
    const SegmentedPlan p = segmented_plan(split, sm(90, DType::f32, op, Problem::columns), square);
    CHECK(p.post);
    CHECK(p.post_bytes == 4096 * 4);
  }
  CHECK(segmented_plan(split, sm(90, DType::bf16, Op::sum, Problem::columns), {1000, 77}).post_bytes == 4000);
  // sum keeps the atomic into its results; the direct mappings have no post pass.
  const SegmentedPlan sum = segmented_plan(split, sm(90, DType::f32, Op::sum, Problem::columns), square);
  CHECK_FALSE(sum.post);
  CHECK(sum.post_bytes == 0);
  CHECK_FALSE(segmented_plan(cfg("columns_tile.b256.u2.v4.direct"),
                             sm(90, DType::f32, Op::mean, Problem::columns), square).post);
  // The mappings without the fill write accumulators themselves; the post pass follows them too.
  const SegmentedPlan binned = segmented_plan(cfg("segments_binned.b256.w8.u1.v2.g4.atomic"),
                                              sm(90, DType::f32, Op::any, Problem::segments), {1000, 0});
  CHECK(binned.post);
  CHECK_FALSE(binned.fill);
  CHECK(binned.post_bytes == 1000 * 4);
}

TEST_CASE("post pass: rendered only where it applies; other sources unchanged",
          "[post_pass][catalogue]") {
  const Config split = cfg("columns_split.b256.u2.v4.g4.atomic");
  const std::string mean = render(split, DType::f32, Op::mean);
  CHECK_THAT(mean, Catch::Contains("#define RT_POST_PASS 1") && Catch::Contains("rt_segmented_post") &&
                       Catch::Contains("#define RT_ATOMIC_ADD 1") &&
                       Catch::Contains("#define R rt_result_type") &&
                       Catch::Contains("#define rt_post rt_result_post"));
  // The atomic's macro follows the op's source, before common.cuh reads it.
  CHECK(mean.find("#define RT_ATOMIC_ADD 1") < mean.find("rt_atomic_combine"));
  const std::string any = render(split, DType::f32, Op::any);
  CHECK_THAT(any, Catch::Contains("#define RT_POST_PASS 1") && Catch::Contains("#define RT_ATOMIC_MAX 1"));
  // No post pass: sum's atomic mapping, mean's direct mappings and its array variants.
  for (const auto& [c, op] : {std::pair{split, Op::sum}, std::pair{cfg("columns_tile.b256.u2.v4.direct"), Op::mean},
                              std::pair{cfg("vectorized.b256.u4.v4.g0.shfl.lastblock"), Op::mean},
                              std::pair{split, Op::count_nonzero}}) {
    const std::string s = render(c, DType::f32, op);
    INFO(key(c) << " " << name(op));
    CHECK_THAT(s, !Catch::Contains("RT_POST_PASS") && !Catch::Contains("#undef rt_post") &&
                      Catch::Contains(op_source(op, DType::f32)));
  }
  // mean's description outside the post pass declares no atomic (its sources are as before).
  CHECK_THAT(op_source(Op::mean, DType::f32), !Catch::Contains("RT_ATOMIC_"));
}

// NVRTC needs no GPU: every atomic mapping with the post pass for mean, norm2, any, all (float32,
// int32 where the op takes it, bf16), and bf16 and f16 sums; each module holds rt_segmented_post.
TEST_CASE("post pass: the mappings and the post kernel compile", "[post_pass][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  for (const char* k : kAtomicKeys) {
    const Config c = cfg(k);
    const Problem p = problem_of(k);
    for (Op op : kPostOps)
      for (DType d : {DType::f32, DType::i32, DType::bf16}) {
        if (op_unsupported(op, d) || invalid_reason(c, sm(90, d, op, p))) continue;
        jobs.push_back({c, d, op});
      }
    for (DType d : {DType::bf16, DType::f16})
      if (!invalid_reason(c, sm(90, d, Op::sum, p))) jobs.push_back({c, d, Op::sum});
  }
  CHECK(jobs.size() >= std::size(kAtomicKeys) * 10);
  const auto outcomes = compile_all(loader, jobs, 0);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(key(jobs[i].config) << " " << name(jobs[i].dtype) << " " << name(jobs[i].op));
    if (!outcomes[i].error.empty()) {
      ++failed;
      FAIL_CHECK(outcomes[i].error.substr(0, 3000));
      continue;
    }
    CHECK(outcomes[i].compiled.image.find("rt_segmented_post") != std::string::npos);
    CHECK(outcomes[i].compiled.image.find("rt_fill_identity") != std::string::npos);
  }
  CHECK(failed == 0);
}
