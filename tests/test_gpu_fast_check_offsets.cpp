// The GPU's fast pass for offsets segments on the device, held to the CPU check: right results
// pass both (empty segments and segments of one element among them); one wrong result fails on
// the GPU with its index and the CPU check then names it as before; a point of too many distinct
// lengths stays with the CPU; and an offsets sweep decides its checked launches on the GPU, the
// kernels' own results passing the fast pass wherever they pass the CPU check.
#include <catch2/catch.hpp>

#include "tests/gpu_checked_sweep.h"
#include "tests/gpu_fixture.h"
#include "tests/offsets_edges.h"
#include "tests/result_values.h"
#include "tests/user_reductions.h"
#include "tuner/fast_check.h"
#include "tuner/sweep.h"

#include <cmath>
#include <cstring>

using namespace reduce_tune;
using testing::as_dtype;
using testing::put_result;
using testing::Gpu;
using testing::gpu;
using testing::offsets_with_edges;

namespace {


HostArray results_of(DType d, std::size_t n) {
  HostArray got;
  got.dtype = d;
  got.n = n;
  got.bytes.resize(n * size_of(d));
  return got;
}

// A depth that differs from length to length (each segment's bound is its length's).
std::uint64_t odd_depth(std::uint64_t len) { return 2 + (len * 7) % 11 + len / 5; }

FastVerdict on_gpu(FastCheck& fast, const HostArray& got) {
  Gpu& g = gpu();
  cuda::Buffer b(std::max<std::size_t>(got.bytes.size(), 16));
  cuda::upload_sync(b.get(), got.bytes.data(), got.bytes.size());
  const std::optional<FastVerdict> v = fast.run(b.get(), odd_depth, g.stream.get());
  REQUIRE(v);
  return *v;
}

Scalar far_off(double exact, DType d) { return as_dtype(exact + 3 * (std::fabs(exact) + 1), d); }

// The result made wrong: the first segment of elements from 1234 on (where the skewed layout's
// rounding leaves which segments empty is the generator's business).
std::size_t nonempty_at(const Segmentation& seg) {
  std::size_t k = 1234;
  while (k < seg.shape.count && seg.length(k) == 0) ++k;
  REQUIRE(k < seg.shape.count);
  return k;
}

} // namespace

TEST_CASE("fast check on the GPU: offsets segments' right results pass, a wrong one fails and the CPU check "
          "names it",
          "[gpu][fast_check]") {
  Gpu& g = gpu();
  FastCheck fast(g.nvrtc, g.cache, g.loader.target(), 1);
  const Segmentation seg = offsets_with_edges(1 << 13, 1 << 14, 8);
  REQUIRE(seg.length(0) == 0);
  const std::size_t bad_at = nonempty_at(seg);
  const struct {
    DType dtype;
    Op op;
  } cases[] = {{DType::f32, Op::sum},       {DType::f64, Op::mean},  {DType::bf16, Op::sum},
               {DType::f16, Op::norm2},     {DType::f64, Op::var},   {DType::f32, Op::std_},
               {DType::f32, Op::logsumexp}, {DType::i32, Op::mean},  {DType::i32, Op::sum},
               {DType::f32, Op::max},       {DType::f32, Op::argmax}, {DType::f64, Op::sumsq}};
  for (const auto& c : cases) {
    const DType rd = result_dtype(c.op, c.dtype);
    INFO(name(c.dtype) << " " << name(c.op));
    const HostArray data = make_input(c.dtype, seg.input_elements(), 12);
    const std::vector<Reference> refs = segmented_reference(data, seg, c.op);
    REQUIRE(fast.prepare(refs, seg, c.op, rd));
    HostArray got = results_of(rd, refs.size());
    for (std::size_t i = 0; i < refs.size(); ++i) put_result(got, i, refs[i].value);
    CHECK(on_gpu(fast, got).passed());
    CHECK(check_segmented(refs, got, seg, c.op, odd_depth).ok);
    const bool exact = fast_form(c.op, rd) == FastForm::exact;
    // One result off: failed on the GPU at its index, then named by the CPU check.
    for (std::size_t wrong : {bad_at, std::size_t(0)}) { // a segment of elements, an empty one
      HostArray bad = got;
      Scalar w = refs[wrong].value;
      if (exact) w.bits ^= 1;
      else w = far_off(std::isfinite(refs[wrong].exact) ? refs[wrong].exact : 0, rd);
      put_result(bad, wrong, w);
      const FastVerdict v = on_gpu(fast, bad);
      CHECK(v.failures == 1);
      CHECK(v.first == wrong);
      const Check cpu = check_segmented(refs, bad, seg, c.op, odd_depth);
      CHECK_FALSE(cpu.ok);
      CHECK_THAT(cpu.expected, Catch::StartsWith("result " + std::to_string(wrong) + " of " +
                                                 std::to_string(seg.shape.count) + " (" +
                                                 std::to_string(seg.length(wrong)) + " elements)"));
    }
  }
}

TEST_CASE("fast check on the GPU: a user reduction on offsets segments, and too many distinct lengths stay "
          "with the CPU",
          "[gpu][fast_check]") {
  Gpu& g = gpu();
  FastCheck fast(g.nvrtc, g.cache, g.loader.target(), 1);
  const auto u = make_user_op(testing::log_sum_exp());
  const Segmentation seg = offsets_with_edges(1 << 13, 1 << 14, 9);
  const std::size_t bad_at = nonempty_at(seg);
  const HostArray data = make_input(DType::f32, seg.input_elements(), 9);
  const UserExpected e = user_expected(*u, data, seg);
  REQUIRE(fast.prepare(*u, DType::f32, e, seg));
  HostArray got = results_of(u->result_dtype(DType::f32), seg.shape.count);
  for (std::size_t i = 0; i < got.n; ++i) put_result(got, i, as_dtype(e.value[i], got.dtype));
  CHECK(on_gpu(fast, got).passed());
  CHECK(check_user_segmented(*u, DType::f32, e, got, seg, odd_depth).ok);
  put_result(got, bad_at, as_dtype(e.value[bad_at] + 3 * (std::fabs(e.value[bad_at]) + 1), got.dtype));
  const FastVerdict v = on_gpu(fast, got);
  CHECK(v.failures == 1);
  CHECK(v.first == bad_at);
  CHECK_FALSE(check_user_segmented(*u, DType::f32, e, got, seg, odd_depth).ok);

  // Segments of lengths 0, 1, 2, ...: a distinct length a result, past what the host's bounds
  // a measurement are worth.
  Segmentation ramp;
  ramp.problem = Problem::segments;
  ramp.offsets = {0};
  for (std::int64_t k = 0; k < 3000; ++k) ramp.offsets.push_back(ramp.offsets.back() + k);
  ramp.shape = {3000, std::uint64_t(ramp.offsets.back()) / 3000};
  const HostArray f = make_input(DType::f32, ramp.input_elements(), 1);
  CHECK_FALSE(fast.prepare(segmented_reference(f, ramp, Op::sum), ramp, Op::sum, DType::f32));
  CHECK_FALSE(fast.ready());
  // Exact results need no bound: compared by their bits whatever the lengths.
  CHECK(fast.prepare(segmented_reference(f, ramp, Op::max), ramp, Op::max, DType::f32));
}

TEST_CASE("fast check on the GPU: an offsets sweep decides its checked launches on the GPU", "[gpu][fast_check]") {
  // The kernels' own results, sums and the ops whose bounds have margins (mean, var, std, norm2,
  // logsumexp), on short skewed segments (empty ones and ones of one element among them).
  const struct {
    std::vector<DType> dtypes;
    std::vector<Op> ops;
  } runs[] = {{{DType::f32, DType::i32}, {Op::sum}},
              {{DType::f64, DType::bf16}, {Op::mean, Op::norm2, Op::max, Op::var, Op::std_, Op::logsumexp}}};
  for (const auto& run : runs) {
    SweepOptions o;
    o.problem = Problem::segments;
    o.dtypes = run.dtypes;
    o.ops = run.ops;
    o.shapes = {{1u << 15, 2}, {1u << 14, 3}};
    // Every measurement valid and decided on the GPU, and no checked launch left to the CPU.
    const SweepResult r = testing::gpu_checked_sweep(o);
    CHECK(r.times.cpu_checked == 0);
  }
}
