// GPU tests: float inputs holding NaN, infinities and signed zeros, through every catalogue variant
// (float32: every valid configuration; float64: one of each variant's finish, tail, grid kind and
// vector width) and the path tests/test_gpu.cpp uses (KernelLoader, plan, reduce_once, check),
// and through every segmented variant. A sum with a NaN is NaN, with +Inf is +Inf, with +Inf and
// -Inf is NaN; min and max are IEEE 754-2019 minimum/maximum: any NaN gives NaN, and -0.0 is below
// +0.0. The expected values are worked out here from those rules, and the CPU reference the
// sweep validates with must agree. test_gpu_main.cpp skips them (exit 4) without a GPU.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

enum class Special { nan, neg_nan, inf, neg_inf, zero, neg_zero };

/// Special values written over random data, at fractions of the array (0 = first, 1 = last).
struct Pattern {
  const char* name;
  std::vector<std::pair<double, Special>> at;
  bool zeros = false; ///< the data is +0.0 everywhere first (signed-zero patterns)
};

const Pattern kPatterns[] = {
    {"NaN first", {{0.0, Special::nan}}},
    {"NaN in the middle", {{0.5, Special::nan}}},
    {"NaN last", {{1.0, Special::nan}}},
    {"-NaN first and NaN last", {{0.0, Special::neg_nan}, {1.0, Special::nan}}},
    {"+Inf", {{0.37, Special::inf}}},
    {"+Inf and -Inf", {{0.25, Special::inf}, {0.75, Special::neg_inf}}},
    {"zeros, one -0.0 in the middle", {{0.5, Special::neg_zero}}, true},
    {"zeros, -0.0 first and last, NaN in the middle",
     {{0.0, Special::neg_zero}, {0.5, Special::nan}, {1.0, Special::neg_zero}}, true},
};

template <typename T> T value(Special s) {
  using L = std::numeric_limits<T>;
  switch (s) {
  case Special::nan: return L::quiet_NaN();
  case Special::neg_nan: return -L::quiet_NaN();
  case Special::inf: return L::infinity();
  case Special::neg_inf: return -L::infinity();
  case Special::zero: return T(0);
  case Special::neg_zero: return -T(0);
  }
  return T(0);
}

template <typename T> HostArray with_specials(DType d, std::uint64_t n, const Pattern& p) {
  HostArray a = make_input(d, n, 77 + n);
  T* x = a.data<T>();
  if (p.zeros) std::fill(x, x + n, T(0));
  for (const auto& [where, s] : p.at) x[std::uint64_t(where * double(n - 1))] = value<T>(s);
  return a;
}

/// What the result must be, from the IEEE rules rather than the reference: sums in double;
/// min/max NaN if any NaN, else the extreme with -0.0 below +0.0.
template <typename T> T expected(const HostArray& a, Op op) {
  const T* x = a.data<T>();
  double sum = 0;
  bool nan = false;
  T lo = std::numeric_limits<T>::infinity(), hi = -lo;
  for (std::uint64_t i = 0; i < a.n; ++i) {
    sum += double(x[i]);
    nan |= std::isnan(x[i]);
    if (x[i] < lo || (x[i] == lo && std::signbit(x[i]))) lo = x[i];
    if (x[i] > hi || (x[i] == hi && !std::signbit(x[i]))) hi = x[i];
  }
  if (op == Op::sum) return T(sum);
  if (nan) return std::numeric_limits<T>::quiet_NaN();
  return op == Op::min ? lo : hi;
}

/// NaN matches any NaN; min/max must match bit for bit (the sign of a zero counts); sums by value.
template <typename T> bool same(T got, T want, Op op) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  return op == Op::sum ? got == want : std::memcmp(&got, &want, sizeof(T)) == 0;
}

/// A configuration stands for the others with the same finish, tail, grid kind, vector width and
/// group width (1, 32 or between) of its variant.
std::string representative(const Config& c) {
  const std::string w = c.width <= 1 ? std::to_string(c.width) : c.width == 32 ? "32" : "w";
  return c.variant + "/" + std::string(name(c.finish)) + "/" + std::string(name(c.tail)) + "/" +
         (c.grid == 0 ? "g0" : "g") + "/v" + std::to_string(c.vec) + "/w" + w;
}

/// The configurations of `problem` to run for (d, op): all valid ones, or one per representative.
std::vector<CompileJob> jobs_for(Problem problem, DType d, Op op, bool all) {
  Target t = gpu().target(d, op);
  t.problem = problem;
  std::vector<CompileJob> jobs;
  std::set<std::string> seen;
  for (const Variant& v : variants(problem))
    for (const Config& c : space(v))
      if (!invalid_reason(c, t) && (all || seen.insert(representative(c)).second))
        jobs.push_back({c, d, op});
  for (const auto& o : compile_all(gpu().loader, jobs, 0)) REQUIRE(o.error.empty());
  return jobs;
}

template <typename T> std::size_t check_array(DType d) {
  Gpu& g = gpu();
  // n, and elements the input starts past a 16-byte boundary (vector loads read a scalar head).
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> cases = {
      {1000, 0}, {(1u << 20) + 1, 0}, {(1u << 18) + 5, 1}};
  std::size_t checked = 0;
  for (Op op : {Op::sum, Op::min, Op::max}) {
    const Target t = g.target(d, op);
    const std::vector<CompileJob> jobs = jobs_for(Problem::array, d, op, d == DType::f32);
    Workspace ws;
    for (const auto& [n, shift] : cases)
      for (const Pattern& pat : kPatterns) {
        const HostArray data = with_specials<T>(d, n, pat);
        const T want = expected<T>(data, op);
        const Reference ref = reference(data, op);
        INFO(pat.name << " " << name(d) << " " << name(op) << " n=" << n << " shift " << shift
                      << ": expected " << want);
        // The CPU reference the sweep validates with agrees with the IEEE rules.
        REQUIRE(same(ref.value.as<T>(), want, op));
        if (op == Op::sum) REQUIRE(same(T(ref.exact), want, op));
        const std::size_t es = sizeof(T);
        cuda::Buffer in((n + shift) * es);
        reduce_tune::cuda::upload_sync(in.get() + shift * es, data.bytes.data(), data.bytes.size());
        std::vector<std::string> failed;
        for (const CompileJob& j : jobs) {
          const Kernel k = g.loader.load(j.config, d, op);
          const LaunchPlan p = plan(j.config, t, n);
          ws.reserve(p, d, n);
          RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, g.stream.get()));
          if (p.partials) RT_CU(cuMemsetD8Async(ws.partials(), 0xA5, p.grid * es, g.stream.get()));
          const Scalar got = reduce_once(k, p, in.get() + shift * es, n, ws, g.stream.get());
          const Check c = check(ref, got, op, summation_depth(j.config, t, n));
          if (!c.ok || !same(got.as<T>(), want, op)) {
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
        RT_CU(cuMemcpyDtoH(after.bytes.data(), in.get() + shift * es, after.bytes.size()));
        CHECK(after.bytes == data.bytes);
      }
  }
  return checked;
}

/// A segmented layout with NaN written into three of every four results' ranges: at the first,
/// the middle or the last element of the range (by result index mod 4; the fourth stays finite).
struct SegCase {
  Segmentation seg;
  const char* what;
};

template <typename T> void poison(HostArray& a, const Segmentation& s, std::vector<bool>& has_nan) {
  T* x = a.data<T>();
  has_nan.assign(s.shape.count, false);
  for (std::uint64_t i = 0; i < s.shape.count; ++i) {
    const std::uint64_t len = s.length(i);
    if (len == 0 || i % 4 == 3) continue;
    const std::uint64_t k = i % 4 == 0 ? 0 : i % 4 == 1 ? len / 2 : len - 1;
    std::uint64_t at = 0;
    switch (s.problem) {
    case Problem::rows: at = i * s.stride + k; break;
    case Problem::columns: at = k * s.stride + i; break; // column i, row k
    case Problem::segments: at = std::uint64_t(s.offsets[i]) + k; break;
    case Problem::array: break;
    }
    x[at] = i % 8 == 1 ? -std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::quiet_NaN();
    has_nan[i] = true;
  }
}

template <typename T> std::size_t check_segmented_nan(DType d, const SegCase& k) {
  Gpu& g = gpu();
  const Segmentation& seg = k.seg;
  const std::size_t es = sizeof(T);
  const CUstream s = g.stream.get();
  HostArray data = make_input(d, seg.input_elements(), 4242);
  std::vector<bool> has_nan;
  poison<T>(data, seg, has_nan);
  cuda::Buffer in(std::max<std::size_t>(data.bytes.size(), 16));
  reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
  cuda::Buffer offsets(std::max<std::size_t>(seg.offsets.size() * 8, 8));
  if (!seg.offsets.empty())
    reduce_tune::cuda::upload_sync(offsets.get(), seg.offsets.data(), seg.offsets.size() * 8);
  cuda::Buffer out(seg.shape.count * es);
  HostArray got;
  got.dtype = d;
  got.n = seg.shape.count;
  got.bytes.resize(seg.shape.count * es);
  std::size_t checked = 0;
  for (Op op : {Op::min, Op::max, Op::sum}) {
    const std::vector<Reference> refs = segmented_reference(data, seg, op);
    for (std::uint64_t i = 0; i < seg.shape.count; ++i) // the reference sees every NaN
      REQUIRE(std::isnan(refs[i].value.as<T>()) == has_nan[i]);
    Target t = g.target(d, op);
    t.problem = seg.problem;
    Workspace ws;
    for (const CompileJob& j : jobs_for(seg.problem, d, op, false)) {
      const Kernel kern = g.loader.load(j.config, d, op);
      const SegmentedPlan p = segmented_plan(j.config, t, seg.shape);
      ws.reserve(p);
      RT_CU(cuMemsetD8Async(out.get(), 0xA5, seg.shape.count * es, s));
      const SegmentedArgs a = testing::segmented_args(seg, in.get(), offsets.get(), out.get());
      const Check c = testing::launch_checked(kern, j.config, t, seg, p, a, ws, got, refs, op, s);
      INFO(key(j.config) << " " << name(d) << " " << name(op) << " " << k.what << ": got "
                         << c.observed << ", expected " << c.expected);
      REQUIRE(c.ok);
      checked += seg.shape.count;
    }
  }
  return checked;
}

std::vector<SegCase> seg_cases() {
  std::vector<SegCase> v;
  SegCase r;
  r.seg.problem = Problem::rows;
  r.seg.shape = {64, 3001};
  r.seg.stride = 3003;
  r.what = "rows 64 x 3001, stride 3003";
  v.push_back(r);
  SegCase wide = r;
  wide.seg.shape = {8, 200001};
  wide.seg.stride = 200001;
  wide.what = "rows 8 x 200001";
  v.push_back(wide);
  SegCase c;
  c.seg.problem = Problem::columns;
  c.seg.shape = {67, 4099}; // 67 columns of 4099 rows
  c.seg.stride = 69;
  c.what = "columns: 4099 rows x 67, stride 69";
  v.push_back(c);
  SegCase s;
  s.seg.problem = Problem::segments;
  s.seg.offsets = skewed_offsets(3000, 1u << 21, 9);
  s.seg.shape = {3000, (1u << 21) / 3000};
  s.what = "3000 skewed segments over 2^21 elements";
  v.push_back(s);
  return v;
}

} // namespace

TEST_CASE("NaN, infinities and signed zeros: every float32 configuration gives the IEEE result",
          "[gpu]") {
  CHECK(check_array<float>(DType::f32) > 10000);
}

TEST_CASE("NaN, infinities and signed zeros: every variant on float64 gives the IEEE result",
          "[gpu]") {
  CHECK(check_array<double>(DType::f64) > 1000);
}

TEST_CASE("NaN propagates through every segmented variant's min and max", "[gpu]") {
  std::size_t checked = 0;
  for (const SegCase& k : seg_cases()) {
    checked += check_segmented_nan<float>(DType::f32, k);
    checked += check_segmented_nan<double>(DType::f64, k);
  }
  CHECK(checked > 10000);
}
