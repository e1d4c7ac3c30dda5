// GPU tests of additive user reductions (kernels/additive.h): a user sum of squares through the
// atomic and first-block finishes, each result against the CPU sum of squares (in double, with the
// built-in sumsq's bound for the configuration's depth); and a Reducer call served the float32
// sum's stored atomic-finish rows (related, no rows of its own) that runs them and is right.
// test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/user_op.h"
#include "reduce_tune/reducer.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"

#include <cmath>
#include <string>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::sum_of_squares;
using reduce_tune::testing::Gpu;
using reduce_tune::testing::TempDir;
using reduce_tune::testing::gpu;

namespace {

const std::uint64_t kSizes[] = {std::uint64_t(1) << 14, std::uint64_t(1) << 20, (std::uint64_t(1) << 24) + 17};

} // namespace

TEST_CASE("additive user reductions: atomic and first-block finishes against the CPU sum of squares",
          "[gpu][user][additive]") {
  Gpu& g = gpu();
  const auto u = make_user_op(sum_of_squares());
  REQUIRE(u->additive());
  // float32, float64, and uint32 (an exact, wrapping sum of products) elements.
  for (DType d : {DType::f32, DType::f64, DType::u32}) {
    Target t = g.target(d, Op::sum);
    t.user = u.get();
    // 16-byte vectors: v4 of 4-byte elements, v2 of float64.
    const std::string v = d == DType::f64 ? "v2" : "v4";
    std::vector<std::string> keys = {"streaming.b256.u4." + v + ".g0.shfl.atomic", "vectorized.b512.u2.v2.g0.shfl.atomic",
                                     "streaming.b256.u4." + v + ".g8.shfl.firstblock",
                                     "vectorized.b512.u2.v2.g4.shfl.firstblock", "atomic_shared.b256.atomic"};
    if (d == DType::u32) keys.push_back("streaming.b256.u4.v4.g8.redux.firstblock"); // __reduce_add_sync
    std::vector<Config> configs;
    for (const std::string& k : keys) {
      const Config c = *parse_key(k);
      INFO(k << " " << name(d) << ": " << invalid_reason(c, t).value_or(""));
      REQUIRE_FALSE(invalid_reason(c, t));
      configs.push_back(c);
    }
    Workspace ws;
    for (std::uint64_t n : kSizes) {
      const HostArray x = make_input(d, n, 100 + n);
      const Reference ref = reference(x, Op::sumsq); // the same map and combine, in double
      cuda::Buffer in(x.bytes.size());
      reduce_tune::cuda::upload_sync(in.get(), x.bytes.data(), x.bytes.size());
      for (const Config& c : configs) {
        const Kernel k = g.loader.load(c, d, u);
        const LaunchPlan p = plan(c, t, n);
        ws.reserve(p, d, n);
        RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, g.stream.get())); // the finish must set it
        // Twice: the first-block finish's state must be left ready for the next launch.
        for (int rep = 0; rep < 2; ++rep) {
          const Scalar got = reduce_once(k, p, in.get(), n, ws, g.stream.get());
          REQUIRE(got.dtype == d);
          const Check chk = check(ref, got, Op::sumsq, summation_depth(c, t, n));
          INFO(key(c) << " " << name(d) << " n=" << n << " rep " << rep << ": got " << chk.observed
                      << ", expected " << chk.expected << " (error " << chk.error << ", bound " << chk.bound << ")");
          CHECK(chk.ok);
        }
      }
    }
  }
}

TEST_CASE("additive user reductions: served the float32 sum's atomic-finish rows, related, and right",
          "[gpu][user][additive]") {
  const testing::GpuContext g;
  const TempDir dir;
  using reduce_tune::testing::stored_row;
  const std::string kFirst = "streaming.b256.u4.v4.g8.shfl.firstblock";
  const std::string kAtomic = "streaming.b256.u4.v4.g0.shfl.atomic";
  const std::string kLast = "vectorized.b256.u4.v4.g0.shfl.lastblock";
  // The sum's rows only: at each size an atomic finish fastest, a last-block one slower.
  testing::write_gpu_store(dir.file("sum.db"), g.info,
                           {stored_row(kFirst, DType::f32, Op::sum, 5.0, Problem::array, {1, 1 << 14}),
                            stored_row(kLast, DType::f32, Op::sum, 6.0, Problem::array, {1, 1 << 14}),
                            stored_row(kAtomic, DType::f32, Op::sum, 30.0, Problem::array, {1, 1 << 24}),
                            stored_row(kLast, DType::f32, Op::sum, 31.0, Problem::array, {1, 1 << 24})});
  Options opt;
  opt.store_path = dir.file("sum.db");
  Reducer reducer(0, opt);
  Reduction r = sum_of_squares();
  r.inputs = {DType::f32};
  struct Point {
    std::uint64_t n;
    std::string key;
  };
  for (const Point& at : {Point{std::uint64_t(1) << 14, kFirst}, Point{(std::uint64_t(1) << 24) + 17, kAtomic}}) {
    const Choice c = reducer.config_for(r, DType::f32, Problem::array, {1, at.n});
    INFO("n=" << at.n << ": " << key(c.config) << " (" << name(c.match) << ") " << c.note);
    CHECK(c.match == Match::related);
    CHECK(key(c.config) == at.key);
    const HostArray x = make_input(DType::f32, at.n, 7 + at.n);
    cuda::Buffer in(x.bytes.size()), out(16);
    reduce_tune::cuda::upload_sync(in.get(), x.bytes.data(), x.bytes.size());
    RT_CU(cuMemsetD8Async(out.get(), 0xA5, 16, nullptr)); // the call must write its result
    reducer.reduce_async(r, DType::f32, reinterpret_cast<const void*>(in.get()), at.n,
                         reinterpret_cast<void*>(out.get()));
    RT_CU(cuCtxSynchronize());
    Scalar got;
    got.dtype = DType::f32;
    RT_CU(cuMemcpyDtoH(&got.bits, out.get(), 4));
    Target t = g.target(DType::f32, Op::sum);
    const auto u = make_user_op(r);
    t.user = u.get();
    const Check chk = check(reference(x, Op::sumsq), got, Op::sumsq, summation_depth(c.config, t, at.n));
    INFO("got " << chk.observed << ", expected " << chk.expected << " (bound " << chk.bound << ")");
    CHECK(chk.ok);
  }
}
