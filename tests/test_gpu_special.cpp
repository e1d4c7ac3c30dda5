// GPU tests: float32 inputs holding NaN and infinities, through every valid configuration and the
// path tests/test_gpu.cpp uses (KernelLoader, plan, reduce_once, check). A sum with a NaN is NaN,
// with +Inf is +Inf, with +Inf and -Inf is NaN; min and max ignore NaN (IEEE minNum/maxNum, as the
// templates' fmin/fmax and the CPU reference do) and see the infinities. The sweep's validation,
// check(), must accept each of these results. test_gpu_main.cpp skips them (exit 4) without a GPU.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"

#include <cmath>
#include <limits>
#include <sstream>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// Special values written over random data, at fractions of the array (0 = first, 1 = last).
struct Pattern {
  const char* name;
  std::vector<std::pair<double, float>> at;
};

const Pattern kPatterns[] = {
    {"NaN first", {{0.0, kNaN}}},
    {"NaN in the middle", {{0.5, kNaN}}},
    {"NaN last", {{1.0, kNaN}}},
    {"+Inf", {{0.37, kInf}}},
    {"+Inf and -Inf", {{0.25, kInf}, {0.75, -kInf}}},
};

HostArray with_specials(std::uint64_t n, const Pattern& p) {
  HostArray a = make_input(DType::f32, n, 77 + n);
  for (const auto& [where, value] : p.at) a.data<float>()[std::uint64_t(where * double(n - 1))] = value;
  return a;
}

/// What the result must be, worked out here from the IEEE rules rather than taken from the
/// reference: sums propagate NaN (and +Inf + -Inf is NaN); min and max skip NaN.
float expected(const HostArray& a, Op op) {
  const float* x = a.data<float>();
  double sum = 0;
  float lo = kInf, hi = -kInf;
  for (std::uint64_t i = 0; i < a.n; ++i) {
    sum += double(x[i]);
    if (!std::isnan(x[i])) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  }
  return op == Op::sum ? float(sum) : op == Op::min ? lo : hi;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

} // namespace

TEST_CASE("NaN and infinities: every valid float32 configuration gives the IEEE result", "[gpu]") {
  Gpu& g = gpu();
  const std::vector<std::uint64_t> sizes = {1000, (1u << 20) + 1};
  std::size_t checked = 0;
  for (Op op : {Op::sum, Op::min, Op::max}) {
    const Target t = g.target(DType::f32, op);
    std::vector<CompileJob> jobs;
    for (const Variant& v : variants())
      for (const Config& c : space(v))
        if (!invalid_reason(c, t)) jobs.push_back({c, DType::f32, op});
    for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
    Workspace ws;
    for (std::uint64_t n : sizes)
      for (const Pattern& pat : kPatterns) {
        const HostArray data = with_specials(n, pat);
        const float want = expected(data, op);
        const Reference ref = reference(data, op);
        INFO(pat.name << " " << name(op) << " n=" << n << ": expected " << want);
        // The CPU reference the sweep validates with agrees with the IEEE rules.
        REQUIRE(same(ref.value.as<float>(), want));
        if (op == Op::sum) REQUIRE(same(float(ref.exact), want));
        cuda::Buffer in(n * 4);
        RT_CU(cuMemcpyHtoD(in.get(), data.bytes.data(), data.bytes.size()));
        std::vector<std::string> failed;
        for (const CompileJob& j : jobs) {
          const Kernel k = g.loader.load(j.config, DType::f32, op);
          const LaunchPlan p = plan(j.config, t, n);
          ws.reserve(p, DType::f32, n);
          RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, g.stream.get()));
          if (p.partials) RT_CU(cuMemsetD8Async(ws.partials(), 0xA5, p.grid * 4, g.stream.get()));
          const Scalar got = reduce_once(k, p, in.get(), n, ws, g.stream.get());
          const Check c = check(ref, got, op, summation_depth(j.config, t, n));
          if (!c.ok || !same(got.as<float>(), want)) {
            std::ostringstream m;
            m << key(j.config) << ": got " << c.observed << (c.ok ? " (check() accepted it)" : "");
            failed.push_back(m.str());
          }
          ++checked;
        }
        std::ostringstream list;
        for (std::size_t i = 0; i < failed.size() && i < 20; ++i) list << "\n  " << failed[i];
        INFO(failed.size() << " of " << jobs.size() << " configurations wrong" << list.str());
        CHECK(failed.empty());
        HostArray after;
        after.bytes.resize(data.bytes.size());
        RT_CU(cuMemcpyDtoH(after.bytes.data(), in.get(), after.bytes.size()));
        CHECK(after.bytes == data.bytes);
      }
  }
  CHECK(checked > 1000);
}
