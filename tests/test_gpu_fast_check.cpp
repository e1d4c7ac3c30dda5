// The GPU's fast pass of a segmented sweep's check (tuner/fast_check.h) on the device, held to the
// CPU check: right results pass both; one result off by more than its bound fails both, the GPU
// giving its index and the CPU check naming it; NaN matches NaN whatever its payload; and a sweep
// decides its checked launches on the GPU where the fast pass applies, every measurement valid.
#include <catch2/catch.hpp>

#include "tests/gpu_checked_sweep.h"
#include "tests/gpu_fixture.h"
#include "tests/result_values.h"
#include "tests/user_reductions.h"
#include "tuner/fast_check.h"
#include "tuner/sweep.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

using namespace reduce_tune;
using testing::as_dtype;
using testing::put_result;
using testing::Gpu;
using testing::gpu;

namespace {

Segmentation layout(Problem p, std::uint64_t count, std::uint64_t len) {
  Segmentation s;
  s.problem = p;
  s.shape = {count, len};
  s.stride = p == Problem::rows ? len : count;
  return s;
}


// The references' values as results: within every bound (one rounding of the exact value).
HostArray right_results(const std::vector<Reference>& refs, DType result) {
  HostArray got;
  got.dtype = result;
  got.n = refs.size();
  got.bytes.resize(got.n * size_of(result));
  for (std::size_t i = 0; i < refs.size(); ++i) put_result(got, i, refs[i].value);
  return got;
}

// The fast pass's verdict on `got` (uploaded), for a configuration of rounding depth `depth`.
FastVerdict on_gpu(FastCheck& fast, const HostArray& got, std::uint64_t depth) {
  Gpu& g = gpu();
  cuda::Buffer b(std::max<std::size_t>(got.bytes.size(), 16));
  cuda::upload_sync(b.get(), got.bytes.data(), got.bytes.size());
  const std::optional<FastVerdict> v = fast.run(b.get(), depth, g.stream.get());
  REQUIRE(v);
  return *v;
}

// A result off its reference by 3 (|exact| + 1): past every bound at a plausible depth (a few
// 2^-24 of the scale, 2^-8 of |exact| for bf16), whatever the exact value.
Scalar far_off(const Reference& r, DType d) { return as_dtype(r.exact + 3 * (std::fabs(r.exact) + 1), d); }

constexpr std::uint64_t kDepth = 8; // any depth: the GPU and the CPU take the same
constexpr std::size_t kWrong = 1234;

struct Case {
  Problem problem;
  DType dtype;
  Op op;
};

} // namespace

TEST_CASE("fast check on the GPU: right results pass, one wrong result fails and the CPU check names it",
          "[gpu][fast_check]") {
  Gpu& g = gpu();
  FastCheck fast(g.nvrtc, g.cache, g.loader.target(), 1);
  const auto depth = [](std::uint64_t) { return kDepth; };
  const Case cases[] = {
      {Problem::rows, DType::f32, Op::sum},          {Problem::rows, DType::f64, Op::sum},
      {Problem::rows, DType::bf16, Op::sum},         {Problem::rows, DType::f16, Op::mean},
      {Problem::columns, DType::f32, Op::norm2},     {Problem::rows, DType::f64, Op::var},
      {Problem::rows, DType::f32, Op::logsumexp},    {Problem::columns, DType::f64, Op::sumsq},
      {Problem::rows, DType::i32, Op::mean},         {Problem::rows, DType::f16, Op::norm1},
      {Problem::rows, DType::i32, Op::sum},          {Problem::rows, DType::u32, Op::max},
      {Problem::columns, DType::i64, Op::sum},       {Problem::rows, DType::f32, Op::argmax},
      {Problem::rows, DType::f16, Op::max},          {Problem::rows, DType::bf16, Op::min},
      {Problem::rows, DType::i32, Op::any},          {Problem::rows, DType::f32, Op::count_nonzero},
      {Problem::rows, DType::f32, Op::std_},         {Problem::columns, DType::f16, Op::std_population},
      {Problem::rows, DType::i32, Op::std_},
  };
  for (const Case& c : cases) {
    const DType rd = result_dtype(c.op, c.dtype);
    INFO(name(c.problem) << " " << name(c.dtype) << " " << name(c.op));
    const Segmentation seg = layout(c.problem, 3000, 37);
    const HostArray data = make_input(c.dtype, seg.input_elements(), 11);
    const std::vector<Reference> refs = segmented_reference(data, seg, c.op);
    REQUIRE(fast.prepare(refs, seg, c.op, rd));
    HostArray got = right_results(refs, rd);
    CHECK(on_gpu(fast, got, kDepth).passed());
    CHECK(check_segmented(refs, got, seg, c.op, depth).ok);
    // One result off: far past a bound, or another value (exact results: the lowest bit flipped).
    Scalar bad = refs[kWrong].value;
    if (fast_form(c.op, rd) != FastForm::exact) bad = far_off(refs[kWrong], rd);
    else bad.bits ^= 1;
    put_result(got, kWrong, bad);
    const FastVerdict v = on_gpu(fast, got, kDepth);
    CHECK(v.failures == 1);
    CHECK(v.first == kWrong);
    const Check cpu = check_segmented(refs, got, seg, c.op, depth);
    CHECK_FALSE(cpu.ok);
    CHECK_THAT(cpu.expected, Catch::StartsWith("result 1234 of 3000"));
    // Every result wrong: all counted, the first is 0.
    for (std::size_t i = 0; i < refs.size(); ++i) {
      Scalar w = refs[i].value;
      w.bits ^= 1;
      if (fast_form(c.op, rd) != FastForm::exact) w = far_off(refs[i], rd);
      put_result(got, i, w);
    }
    const FastVerdict all = on_gpu(fast, got, kDepth);
    CHECK(all.failures == refs.size());
    CHECK(all.first == 0);
  }
}

TEST_CASE("fast check on the GPU: NaN matches NaN whatever its payload, a number does not", "[gpu][fast_check]") {
  Gpu& g = gpu();
  FastCheck fast(g.nvrtc, g.cache, g.loader.target(), 1);
  const auto depth = [](std::uint64_t) { return kDepth; };
  for (Op op : {Op::sum, Op::max}) {
    INFO(name(op));
    const Segmentation seg = layout(Problem::rows, 2000, 19);
    HostArray data = make_input(DType::f32, seg.input_elements(), 5);
    data.data<float>()[kWrong * 19 + 3] = NAN; // result kWrong's reference is NaN
    const std::vector<Reference> refs = segmented_reference(data, seg, op);
    REQUIRE(std::isnan(refs[kWrong].value.to_double()));
    REQUIRE(fast.prepare(refs, seg, op, DType::f32));
    HostArray got = right_results(refs, DType::f32);
    std::uint32_t other_nan = 0xffc00123u; // negative, another payload
    Scalar nan;
    nan.dtype = DType::f32;
    nan.bits = other_nan;
    put_result(got, kWrong, nan);
    CHECK(on_gpu(fast, got, kDepth).passed());
    CHECK(check_segmented(refs, got, seg, op, depth).ok);
    // A number where NaN is expected.
    put_result(got, kWrong, Scalar::of(1.0f));
    FastVerdict v = on_gpu(fast, got, kDepth);
    CHECK(v.failures == 1);
    CHECK(v.first == kWrong);
    CHECK_THAT(check_segmented(refs, got, seg, op, depth).expected, Catch::StartsWith("result 1234 of"));
    // NaN where a number is expected.
    put_result(got, kWrong, nan);
    put_result(got, 7, nan);
    v = on_gpu(fast, got, kDepth);
    CHECK(v.failures == 1);
    CHECK(v.first == 7);
    CHECK_THAT(check_segmented(refs, got, seg, op, depth).expected, Catch::StartsWith("result 7 of"));
  }
}

TEST_CASE("fast check on the GPU: a user reduction's results, and where the fast pass does not apply",
          "[gpu][fast_check]") {
  Gpu& g = gpu();
  FastCheck fast(g.nvrtc, g.cache, g.loader.target(), 1);
  const auto depth = [](std::uint64_t) { return kDepth; };
  const auto u = make_user_op(testing::log_sum_exp());
  const Segmentation seg = layout(Problem::rows, 3000, 41);
  const HostArray data = make_input(DType::f32, seg.input_elements(), 9);
  const UserExpected e = user_expected(*u, data, seg);
  REQUIRE(fast.prepare(*u, DType::f32, e, seg));
  HostArray got;
  got.dtype = u->result_dtype(DType::f32);
  got.n = seg.shape.count;
  got.bytes.resize(got.n * size_of(got.dtype));
  for (std::size_t i = 0; i < got.n; ++i) put_result(got, i, as_dtype(e.value[i], got.dtype));
  CHECK(on_gpu(fast, got, kDepth).passed());
  CHECK(check_user_segmented(*u, DType::f32, e, got, seg, depth).ok);
  put_result(got, kWrong, as_dtype(e.value[kWrong] + 3 * (std::fabs(e.value[kWrong]) + 1), got.dtype));
  const FastVerdict v = on_gpu(fast, got, kDepth);
  CHECK(v.failures == 1);
  CHECK(v.first == kWrong);
  const Check cpu = check_user_segmented(*u, DType::f32, e, got, seg, depth);
  CHECK_FALSE(cpu.ok);
  CHECK_THAT(cpu.expected, Catch::StartsWith("result 1234:"));

  // The CPU alone: a float32 result of a bf16 reduction, and fewer results than the fast pass's
  // minimum (offsets segments: tests/test_gpu_fast_check_offsets.cpp).
  const HostArray f = make_input(DType::f32, seg.input_elements(), 1);
  const HostArray h = make_input(DType::bf16, seg.input_elements(), 1);
  CHECK_FALSE(fast.prepare(segmented_reference(h, seg, Op::sum), seg, Op::sum, DType::f32));
  FastCheck few(g.nvrtc, g.cache, g.loader.target());
  CHECK_FALSE(few.prepare(segmented_reference(f, seg, Op::sum), seg, Op::sum, DType::f32));
}

TEST_CASE("fast check on the GPU: a rows sweep decides its checked launches on the GPU", "[gpu][fast_check]") {
  std::string dir = (std::filesystem::temp_directory_path() / "rt-fast-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  SweepOptions o;
  o.problem = Problem::rows;
  o.dtypes = {DType::f32, DType::i32};
  o.ops = {Op::sum};
  // The last three share an input: the check data of its second and third shapes (by length) is
  // made with their references while the shape before is measured.
  o.shapes = {{1u << 15, 3}, {1u << 14, 64}, {1u << 16, 16}, {1u << 15, 32}};
  o.reps = 3;
  o.search = Strategy::guided;
  o.budget = *parse_budget("4");
  o.db_path = dir + "/fast.db";
  const SweepResult r = sweep(o, {});
  REQUIRE_FALSE(r.interrupted);
  REQUIRE_FALSE(r.measurements.empty());
  for (const auto& m : r.measurements) CHECK(m.valid);
  // Every checked launch was decided on the GPU: these results are right, and nothing failed it.
  CHECK(r.times.gpu_checked == r.measurements.size());
  CHECK(r.times.cpu_checked == 0);
  CHECK(r.times.check_setups == 8);
  CHECK(r.times.check_staged == 4); // 2^15 x 32 and 2^14 x 64, each dtype
  // The shared input's three shapes are sums its prefix sums serve: their check data were made
  // straight from them, and no References were needed (nothing was checked on the CPU).
  CHECK(r.times.prefix_straight == 6);
  CHECK(r.times.references_on_demand == 0);
  CHECK_THAT(profile_text(r.times), Catch::Contains("6 of them made from the prefix sums straight into the GPU check's data"));
  CHECK_THAT(profile_text(r.times), Catch::Contains("passed on the GPU"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("fast check on the GPU: the bounded, root and exact ops' real results pass the fast pass, rows and columns",
          "[gpu][fast_check]") {
  // The kernels' own results, not the references' values: the margins below the CPU's bound
  // (1e-9, the scales rounded to float, norm2's roots) must not fail what the CPU passes.
  for (Problem problem : {Problem::rows, Problem::columns}) {
    INFO(name(problem));
    SweepOptions o;
    o.problem = problem;
    o.dtypes = problem == Problem::rows ? std::vector<DType>{DType::f64, DType::bf16} : std::vector<DType>{DType::f32};
    o.ops = {Op::mean, Op::norm2, Op::max, Op::argmax, Op::var, Op::std_, Op::logsumexp};
    o.shapes = {{1u << 14, 7}};
    testing::gpu_checked_sweep(o); // every measurement valid and decided on the GPU
  }
}
