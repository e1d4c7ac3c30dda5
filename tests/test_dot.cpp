// dot, the op of two inputs (kernels/ops.h, OpTraits::two_inputs): its description, the one
// catalogue rule that keeps it off the variants that read one input, the CPU reference and its
// bound, and that every variant it admits compiles with NVRTC for every dtype.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "tuner/reference.h"
#include "tests/config_fixture.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::reason;
using reduce_tune::testing::sm;

namespace {

constexpr DType kInputs[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};
constexpr Problem kProblems[] = {Problem::array, Problem::rows, Problem::columns, Problem::segments};

template <typename T> HostArray array_of(std::vector<T> xs) {
  HostArray a;
  a.dtype = Scalar::of(T{}).dtype;
  a.n = xs.size();
  a.bytes.resize(xs.size() * sizeof(T));
  std::memcpy(a.bytes.data(), xs.data(), a.bytes.size());
  return a;
}

} // namespace

TEST_CASE("dot: its description and source", "[ops][dot]") {
  const OpDescription& d = describe(Op::dot);
  CHECK(d.name == "dot");
  CHECK(parse_op("dot") == Op::dot);
  CHECK(d.traits.two_inputs);
  CHECK(d.traits.atomic == OpAtomic::add);
  CHECK_FALSE(d.traits.plain_map);
  CHECK(d.traits.plain_post);
  for (const OpDescription& o : op_descriptions())
    if (o.op != Op::dot) CHECK_FALSE(o.traits.two_inputs);
  // The result is the element type; bf16 and f16 accumulate in float32; every input dtype.
  for (DType t : kInputs) {
    INFO(name(t));
    CHECK_FALSE(op_unsupported(Op::dot, t));
    CHECK(result_dtype(Op::dot, t) == t);
    CHECK(accumulator_dtype(Op::dot, t) == accumulator_of(t));
  }
  CHECK(result_dtype(Op::dot, DType::bf16, true) == DType::f32);
  // The description maps two elements and says so; no other op's source does.
  const std::string f = op_source(Op::dot, DType::bf16);
  CHECK_THAT(f, Catch::Contains("#define RT_TWO_INPUTS 1") && Catch::Contains("rt_map2(T x, T y") &&
                    Catch::Contains("typedef float A;") && Catch::Contains("#define RT_ATOMIC_ADD 1") &&
                    !Catch::Contains("rt_map(T x"));
  // Integers: the product of the unsigned values (wraps as the CPU reference does).
  CHECK_THAT(op_source(Op::dot, DType::i32), Catch::Contains("(unsigned int)(x) * (unsigned int)(y)") &&
                                                 Catch::Contains("#define RT_REDUX_ADD 1"));
  CHECK_THAT(op_source(Op::dot, DType::i64), Catch::Contains("(unsigned long long)(x)"));
  for (const OpDescription& o : op_descriptions())
    if (o.op != Op::dot)
      for (DType t : kInputs)
        if (!op_unsupported(o.op, t)) CHECK_THAT(op_source(o.op, t), !Catch::Contains("RT_TWO_INPUTS"));
}

TEST_CASE("dot: the catalogue admits every variant that reads two inputs", "[ops][dot][catalogue]") {
  // Mapped like sumsq: atomic add into a result of the accumulator's type, redux for 32-bit
  // integers, the host finish; no in-place variant, no atomic finish rounding a bf16 result.
  CHECK(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f32, Op::dot)).empty());
  CHECK(reason("vectorized.b256.u4.v4.g4.redux.firstblock", sm(90, DType::i32, Op::dot)).empty());
  CHECK(reason("unroll_warps.b256.u4.shfl.host", sm(90, DType::f64, Op::dot)).empty());
  CHECK_THAT(reason("neighbored_gmem.b256.host", sm(90, DType::f32, Op::dot)),
             Catch::Contains("mapped again"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::bf16, Op::dot)),
             Catch::Contains("round at every atomic"));
  Target wide = sm(90, DType::f16, Op::dot);
  wide.wide_result = true;
  CHECK(reason("vectorized.b256.u4.v8.g0.shfl.atomic", wide).empty());
  CHECK(reason("rows_split.b256.u2.v4.g4.atomic", sm(90, DType::f32, Op::dot, Problem::rows)).empty());
  CHECK(reason("segments_flat.b256.u2.v4.g4.atomic", sm(90, DType::f32, Op::dot, Problem::segments)).empty());
  // The variants that stage one input's elements in shared memory: for one input only.
  CHECK_THAT(reason("segments_merge.b256.u4.g4.atomic", sm(90, DType::f32, Op::dot, Problem::segments)),
             Catch::Contains("reads two inputs"));
  CHECK(reason("segments_merge.b256.u4.g4.atomic", sm(90, DType::f32, Op::sum, Problem::segments)).empty());
  CHECK_THAT(reason("segments_staged.b256.u2.v1.g4.atomic", sm(90, DType::f32, Op::dot, Problem::segments)),
             Catch::Contains("reads two inputs"));
  // Otherwise dot admits exactly what sumsq (the mapped sum of one input) admits: those two
  // variants and the in-place one admit nothing.
  std::set<std::string> refused;
  for (Problem p : kProblems)
    for (const Variant& v : variants(p)) {
      bool any = false;
      for (DType t : kInputs)
        for (const Config& c : space(v)) {
          const bool dot = !invalid_reason(c, sm(90, t, Op::dot, p));
          const bool sumsq = !invalid_reason(c, sm(90, t, Op::sumsq, p));
          INFO(key(c) << " " << name(t));
          CHECK(dot == (sumsq && !v.one_input));
          any = any || dot;
        }
      if (!any) refused.insert(std::string(v.name));
    }
  CHECK(refused == std::set<std::string>{"neighbored_gmem", "segments_merge", "segments_staged"});
}

TEST_CASE("dot: the CPU reference", "[ops][dot][reference]") {
  const HostArray x = array_of<float>({1.0f, -2.0f, 0.5f, 3.0f});
  const HostArray y = array_of<float>({4.0f, 0.25f, -2.0f, 1.5f});
  const Reference r = reference(x, y, Op::dot);
  CHECK(r.value.as<float>() == 7.0f); // 4 - 0.5 - 1 + 4.5
  CHECK(r.exact == 7.0);
  CHECK(r.abs_sum == 10.0);
  CHECK(r.count == 4);
  // Integers wrap: 65536 * 65536 is 2^32, 0 in int32.
  CHECK(reference(array_of<std::int32_t>({65536, 3, -2}), array_of<std::int32_t>({65536, 5, 7}), Op::dot)
            .value == Scalar::of(std::int32_t(1)));
  CHECK(reference(array_of<std::uint32_t>({4000000000u, 2u}), array_of<std::uint32_t>({2u, 3u}), Op::dot)
            .value == Scalar::of(std::uint32_t(4000000000u * 2u + 6u)));
  // Nothing: 0. A NaN anywhere: NaN.
  HostArray empty;
  CHECK(reference(empty, empty, Op::dot).value.as<float>() == 0.0f);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(std::isnan(reference(array_of<double>({1.0, nan}), array_of<double>({2.0, 0.0}), Op::dot).exact));
  // bf16: products exact in double, the sum rounded once to bf16.
  const HostArray hx = make_input(DType::bf16, 4096, 1), hy = make_input(DType::bf16, 4096, 2);
  const Reference hr = reference(hx, hy, Op::dot);
  CHECK(hr.value.dtype == DType::bf16);
  double exact = 0;
  for (std::uint64_t i = 0; i < hx.n; ++i)
    exact += double(hx.data<bf16_t>()[i]) * double(hy.data<bf16_t>()[i]);
  CHECK(hr.exact == exact);
  // One input, or inputs that differ, are refused; dot is not sumsq of x.
  CHECK_THROWS_AS(reference(x, Op::dot), std::invalid_argument);
  CHECK_THROWS_AS(reference(x, y, Op::sum), std::invalid_argument);
  CHECK_THROWS_AS(reference(x, array_of<float>({1.0f}), Op::dot), std::invalid_argument);
  CHECK_THROWS_AS(reference(x, array_of<double>({1, 2, 3, 4}), Op::dot), std::invalid_argument);
  CHECK(reference(x, x, Op::dot).exact == reference(x, Op::sumsq).exact);
}

TEST_CASE("dot: the segmented reference reads y where it reads x", "[ops][dot][reference]") {
  const std::uint64_t rows = 5, cols = 7, stride = 9;
  const HostArray x = make_input(DType::i64, (rows - 1) * stride + cols, 3);
  const HostArray y = make_input(DType::i64, x.n, 4);
  const auto* a = x.data<std::int64_t>();
  const auto* b = y.data<std::int64_t>();
  auto product = [&](std::uint64_t i) {
    return std::uint64_t(a[i]) * std::uint64_t(b[i]); // wraps
  };
  Segmentation s;
  s.problem = Problem::rows;
  s.shape = {rows, cols};
  s.stride = stride;
  const auto by_row = segmented_reference(x, y, s, Op::dot);
  REQUIRE(by_row.size() == rows);
  for (std::uint64_t r = 0; r < rows; ++r) {
    std::uint64_t want = 0;
    for (std::uint64_t c = 0; c < cols; ++c) want += product(r * stride + c);
    CHECK(by_row[r].value == Scalar::of(std::int64_t(want)));
  }
  s.problem = Problem::columns;
  s.shape = {cols, rows};
  const auto by_column = segmented_reference(x, y, s, Op::dot);
  REQUIRE(by_column.size() == cols);
  for (std::uint64_t c = 0; c < cols; ++c) {
    std::uint64_t want = 0;
    for (std::uint64_t r = 0; r < rows; ++r) want += product(r * stride + c);
    CHECK(by_column[c].value == Scalar::of(std::int64_t(want)));
  }
  s.problem = Problem::segments;
  s.offsets = {2, 2, 10, 11, 30};
  s.shape = {4, 7};
  const auto by_segment = segmented_reference(x, y, s, Op::dot);
  REQUIRE(by_segment.size() == 4);
  for (std::uint64_t k = 0; k < 4; ++k) {
    std::uint64_t want = 0;
    for (std::int64_t i = s.offsets[k]; i < s.offsets[k + 1]; ++i) want += product(std::uint64_t(i));
    CHECK(by_segment[k].value == Scalar::of(std::int64_t(want)));
  }
  CHECK_THROWS_AS(segmented_reference(x, s, Op::dot), std::invalid_argument);
}

TEST_CASE("dot: the check bounds the float results", "[ops][dot][reference]") {
  // (float16 is below: the spikes' products, 2^20, are past its range.)
  for (DType t : {DType::f32, DType::f64, DType::bf16}) {
    INFO(name(t));
    const HostArray x = make_input(t, 1 << 14, 21), y = make_input(t, 1 << 14, 22);
    const Reference r = reference(x, y, Op::dot);
    const Check at = check(r, r.value, Op::dot, 20);
    CHECK(at.ok);
    CHECK(at.bound > 0);
    CHECK(at.bound < 1e-2 * r.abs_sum);
    // The bound is of the sumsq kind (depth + 1); one product more or less is far outside it:
    // the spikes of make_input are 1024 in both inputs, so an edge product is 2^20.
    CHECK(at.bound < 1 << 20);
    CHECK_FALSE(check(r, Scalar::of(r.exact + 4 * at.bound), Op::dot, 20).ok);
  }
  // float16: a dot past 65504 is +-infinity, in the reference and on the GPU (a float32 sum
  // rounded once); a finite result is wrong.
  const HostArray hx = make_input(DType::f16, 1000, 23), hy = make_input(DType::f16, 1000, 24);
  const Reference hr = reference(hx, hy, Op::dot);
  CHECK(std::isinf(hr.value.to_double()));
  CHECK(check(hr, hr.value, Op::dot, 20).ok);
  CHECK_FALSE(check(hr, Scalar::of(f16_t(65504.0)), Op::dot, 20).ok);
  // Integers: exact.
  const HostArray x = make_input(DType::i32, 1000, 5), y = make_input(DType::i32, 1000, 6);
  const Reference r = reference(x, y, Op::dot);
  CHECK(check(r, r.value, Op::dot, 20).ok);
  CHECK_FALSE(check(r, Scalar::of(std::int32_t(r.value.as<std::int32_t>() + 1)), Op::dot, 20).ok);
}

// NVRTC needs no GPU. Every variant dot admits, for every dtype, with each vector width it takes
// (the vector paths read y at x's offsets, or scalars where y is not at x's offset from a vector
// boundary) and, for float32 and int32, each (tail, finish).
TEST_CASE("dot: every variant it admits compiles for every dtype", "[ops][dot][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  std::set<std::string> variants_covered;
  for (DType d : kInputs) {
    const bool every_finish = d == DType::f32 || d == DType::i32;
    for (Problem p : kProblems)
      for (const Variant& v : variants(p)) {
        std::set<std::tuple<int, Tail, Finish>> seen;
        for (const Config& c : space(v)) {
          if (invalid_reason(c, sm(90, d, Op::dot, p))) continue;
          const auto k = std::make_tuple(c.vec, every_finish ? c.tail : Tail::none,
                                         every_finish ? c.finish : Finish::direct);
          if (!seen.insert(k).second) continue;
          jobs.push_back({c, d, Op::dot});
          variants_covered.insert(std::string(v.name));
        }
      }
  }
  // The float32 result of a bf16 dot (atomic finishes).
  for (const Variant& v : variants(Problem::array)) {
    Target wide = sm(90, DType::bf16, Op::dot);
    wide.wide_result = true;
    for (const Config& c : space(v))
      if (!invalid_reason(c, wide) && c.finish == Finish::atomic) {
        jobs.push_back({c, DType::bf16, Op::dot, true});
        break;
      }
  }
  const auto outcomes = compile_all(loader, jobs, 0);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i].error.empty()) continue;
    ++failed;
    FAIL_CHECK(key(jobs[i].config) << " " << name(jobs[i].dtype) << ": " << outcomes[i].error);
  }
  CHECK(failed == 0);
  std::size_t all_variants = 0;
  for (Problem p : kProblems) all_variants += variants(p).size();
  CHECK(variants_covered.size() == all_variants - 3); // neighbored_gmem, segments_merge, _staged
}
