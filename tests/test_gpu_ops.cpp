// GPU tests of the ops beyond sum, min and max (kernels/ops.h): every op and dtype it admits on
// the array, rows, columns and segments problems, with a configuration of every variant, tail and
// finish the op admits, checked against the CPU reference; and the library's calls (typed
// helpers, results of the op's dtype, empty inputs, a wrong result type). test_gpu_main.cpp skips
// them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"

#include <cmath>
#include <array>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

constexpr DType kDTypes[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};
constexpr Op kNewOps[] = {Op::mean,   Op::sumsq,     Op::norm1, Op::norm2, Op::count_nonzero,
                          Op::any,    Op::all,       Op::argmax, Op::argmin, Op::logsumexp,
                          Op::var,    Op::std_,      Op::var_population, Op::std_population};

/// make_input with about one element in 97 set to zero (all-zero bits: 0 of every dtype), so
/// count_nonzero, any and all see both kinds.
HostArray input_with_zeros(DType d, std::uint64_t n, std::uint64_t seed) {
  HostArray a = make_input(d, n, seed);
  const std::size_t es = size_of(d);
  for (std::uint64_t i = seed % 97; i < n; i += 97) std::memset(a.bytes.data() + i * es, 0, es);
  return a;
}

/// One valid configuration of each (variant, tail, finish) of `problem` for (d, op).
std::vector<CompileJob> jobs_for(const Target& t, DType d, Op op, Problem problem) {
  std::vector<CompileJob> jobs;
  for (const Variant& v : variants(problem)) {
    std::set<std::tuple<Tail, Finish>> seen;
    for (const Config& c : space(v))
      if (!invalid_reason(c, t) && seen.insert({c.tail, c.finish}).second) jobs.push_back({c, d, op});
  }
  return jobs;
}

cuda::Buffer upload(const HostArray& a) {
  cuda::Buffer b(std::max<std::size_t>(a.bytes.size(), 16));
  reduce_tune::cuda::upload_sync(b.get(), a.bytes.data(), a.bytes.size());
  return b;
}


/// `a` uploaded `offset` elements past a 256-byte aligned allocation's start (the kernels read y at
/// x's offset from a vector boundary as vectors, elsewhere as scalars).
struct Placed {
  cuda::Buffer buffer;
  CUdeviceptr at = 0;
  Placed(const HostArray& a, std::uint64_t offset)
      : buffer(std::max<std::size_t>(a.bytes.size() + (offset + 1) * size_of(a.dtype), 16)) {
    at = buffer.get() + offset * size_of(a.dtype);
    reduce_tune::cuda::upload_sync(at, a.bytes.data(), a.bytes.size());
  }
};

using Placement = std::array<std::uint64_t, 2>;
/// One input: aligned.
constexpr Placement kAligned[] = {{0, 0}};
/// Element offsets of x and y (dot): both aligned, both one element past (vectors after a head),
/// and y at another offset from a vector boundary than x (no vectors).
constexpr Placement kPlacements[] = {{0, 0}, {1, 1}, {0, 1}};

bool two_inputs(Op op) { return op == Op::dot; }

std::string where(const Placement& at, Op op) {
  return two_inputs(op) ? " x+" + std::to_string(at[0]) + " y+" + std::to_string(at[1]) : "";
}

/// Every job of (d, op) on the array problem at the sizes below, each result checked against the
/// CPU; x (and y) at each placement (the unaligned ones at the smaller sizes: the scalar
/// fallback). Returns the results checked.
std::size_t check_array(Gpu& g, DType d, Op op, std::uint64_t seed, std::span<const Placement> placements) {
  const Target t = g.target(d, op);
  const std::vector<CompileJob> jobs = jobs_for(t, d, op, Problem::array);
  REQUIRE(!jobs.empty());
  for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
  Workspace ws;
  std::size_t checked = 0;
  for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(1000), std::uint64_t(4099),
                          (std::uint64_t(1) << 20) + 3}) {
    const HostArray x = input_with_zeros(d, n, seed + n);
    const HostArray y = two_inputs(op) ? make_input(d, n, seed + 200 + n) : HostArray{};
    const Reference ref = two_inputs(op) ? reference(x, y, op) : reference(x, op);
    for (const Placement& at : placements) {
      if (n > 5000 && at[0] != at[1]) continue;
      const Placed px(x, at[0]);
      const std::optional<Placed> py = two_inputs(op) ? std::make_optional<Placed>(y, at[1]) : std::nullopt;
      for (const CompileJob& j : jobs) {
        const Kernel k = g.loader.load(j.config, d, op);
        const LaunchPlan p = plan(j.config, t, n);
        ws.reserve(p, d, n);
        RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, g.stream.get()));
        const Scalar got = reduce_once(k, p, px.at, n, ws, g.stream.get(), py ? py->at : 0);
        REQUIRE(got.dtype == result_dtype(op, d));
        const Check c = check(ref, got, op, summation_depth(j.config, t, n));
        INFO(key(j.config) << " " << name(d) << " " << name(op) << " n=" << n << where(at, op) << ": got "
                           << c.observed << ", expected " << c.expected << " (error " << c.error
                           << ", bound " << c.bound << ")");
        CHECK(c.ok);
        ++checked;
      }
    }
  }
  return checked;
}

struct SegmentedCase {
  Problem p;
  Shape shape;
  std::uint64_t stride;
};
/// Rows of one element, a strided short-row matrix, a few long rows; a single column, narrow
/// strided columns and a wide matrix (36 columns: whole vectors; 33: scalars); one segment and
/// 3000 skewed ones (the offsets' mean the shape's length).
constexpr SegmentedCase kSegmentedCases[] = {
    {Problem::rows, {1000, 1}, 1},        {Problem::rows, {333, 77}, 80},
    {Problem::rows, {3, 70001}, 70003},   {Problem::columns, {1, 5000}, 1},
    {Problem::columns, {3001, 7}, 3005},  {Problem::columns, {33, 10003}, 33},
    {Problem::columns, {36, 10003}, 36},  {Problem::segments, {1, 0}, 0},
    {Problem::segments, {3000, 0}, 0},
};

/// Every job of (d, op) on one case of rows, columns or segments, each result checked against the
/// CPU, x (and y) at each placement. Returns the results checked.
std::size_t check_segmented(Gpu& g, DType d, Op op, const SegmentedCase& cs, std::uint64_t seed,
                            std::span<const Placement> placements) {
  const CUstream s = g.stream.get();
  const std::size_t rs = size_of(result_dtype(op, d));
  Target t = g.target(d, op);
  t.problem = cs.p;
  const std::vector<CompileJob> jobs = jobs_for(t, d, op, cs.p);
  REQUIRE(!jobs.empty());
  for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
  Segmentation seg;
  seg.problem = cs.p;
  seg.shape = cs.shape;
  seg.stride = cs.stride;
  cuda::Buffer offsets(16);
  if (cs.p == Problem::segments) {
    const std::uint64_t total = cs.shape.count * 200 + 11;
    seg.offsets = skewed_offsets(cs.shape.count, total, seed + 24 + cs.shape.count);
    seg.shape.length = total / cs.shape.count;
    offsets = cuda::Buffer(seg.offsets.size() * 8);
    reduce_tune::cuda::upload_sync(offsets.get(), seg.offsets.data(), seg.offsets.size() * 8);
  }
  const std::uint64_t elements = seg.input_elements();
  const HostArray x = input_with_zeros(d, elements, seed + cs.shape.count);
  const HostArray y = two_inputs(op) ? make_input(d, elements, seed + 6 + cs.shape.count) : HostArray{};
  const std::vector<Reference> refs = two_inputs(op) ? segmented_reference(x, y, seg, op) : segmented_reference(x, seg, op);
  cuda::Buffer out(std::max<std::size_t>(seg.shape.count * rs, 16));
  HostArray got;
  got.dtype = result_dtype(op, d);
  got.n = seg.shape.count;
  got.bytes.resize(seg.shape.count * rs);
  Workspace ws;
  std::size_t checked = 0;
  for (const Placement& at : placements) {
    const Placed px(x, at[0]);
    const std::optional<Placed> py = two_inputs(op) ? std::make_optional<Placed>(y, at[1]) : std::nullopt;
    for (const CompileJob& j : jobs) {
      const Kernel k = g.loader.load(j.config, d, op);
      const SegmentedPlan p = segmented_plan(j.config, t, seg.shape);
      ws.reserve(p);
      RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.bytes.size(), s));
      SegmentedArgs a = testing::segmented_args(seg, px.at, offsets.get(), out.get());
      if (py) a.in2 = py->at;
      const Check c = testing::launch_checked(k, j.config, t, seg, p, a, ws, got, refs, op, s);
      INFO(key(j.config) << " " << name(d) << " " << name(op) << " " << name(cs.p) << " "
                         << seg.shape.count << " x " << seg.shape.length << where(at, op) << ": got "
                         << c.observed << ", expected " << c.expected << " (error " << c.error
                         << ", bound " << c.bound << ")");
      CHECK(c.ok);
      checked += seg.shape.count;
    }
  }
  return checked;
}

} // namespace

TEST_CASE("ops: every op on the array problem matches the CPU, every variant and finish",
          "[gpu][ops]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (Op op : kNewOps)
    for (DType d : kDTypes)
      if (!op_unsupported(op, d)) checked += check_array(g, d, op, 300, kAligned);
  CHECK(checked > 1000);
}

TEST_CASE("ops: every op on rows, columns and segments matches the CPU, every mapping",
          "[gpu][ops][segmented]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (Op op : kNewOps)
    for (DType d : kDTypes)
      if (!op_unsupported(op, d))
        for (const SegmentedCase& cs : kSegmentedCases) checked += check_segmented(g, d, op, cs, 17, kAligned);
  CHECK(checked > 0);
}

TEST_CASE("ops: the library's calls give each op's result type", "[gpu][ops]") {
  const testing::TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string(); // the shipped tuning, else the defaults
  Reducer r(0, o);
  const testing::GpuContext& g = gpu();
  (void)g;

  const std::uint64_t n = 100003;
  const HostArray ints = input_with_zeros(DType::i32, n, 5);
  const cuda::Buffer d_ints = upload(ints);
  const auto* pi = reinterpret_cast<const std::int32_t*>(d_ints.get());
  CHECK(r.mean(pi, n) == reference(ints, Op::mean).value.as<double>());
  CHECK(r.count_nonzero(pi, n) == reference(ints, Op::count_nonzero).value.as<std::int64_t>());
  CHECK(r.any(pi, n));
  CHECK_FALSE(r.all(pi, n));
  CHECK(r.all(pi + 6, 90)); // zeros at 5, 102, ...: none among elements 6..95
  CHECK(r.sumsq(pi, n) == reference(ints, Op::sumsq).value.as<std::int32_t>());
  CHECK_THROWS_AS(r.norm2(pi, n), InvalidArgument);          // floats only
  CHECK_THROWS_AS(r.reduce(Op::mean, pi, n), InvalidArgument); // a float64 result, not int32

  const HostArray floats = input_with_zeros(DType::f32, n, 6);
  const cuda::Buffer d_floats = upload(floats);
  const auto* pf = reinterpret_cast<const float*>(d_floats.get());
  for (Op op : {Op::mean, Op::sumsq, Op::norm1, Op::norm2}) {
    const float got = r.reduce(op, pf, n);
    const Choice c = r.config_for(DType::f32, op, n);
    const std::string bad = testing::mismatch(g, c, floats, op, Scalar::of(got));
    INFO(bad);
    CHECK(bad.empty());
  }

  // Empty inputs: NaN, 0, false, true, without a launch.
  CHECK(std::isnan(r.mean(pf, 0)));
  CHECK(r.count_nonzero(pf, 0) == 0);
  CHECK_FALSE(r.any(pf, 0));
  CHECK(r.all(pf, 0));
  CHECK(r.norm2(pf, 0) == 0.0f);

  // Asynchronous and segmented calls write the op's dtype.
  cuda::Buffer out(1024 * 8);
  r.reduce_async(DType::i32, Op::count_nonzero, pi, n, reinterpret_cast<void*>(out.get()));
  std::int64_t count = -1;
  RT_CU(cuCtxSynchronize());
  RT_CU(cuMemcpyDtoH(&count, out.get(), 8));
  CHECK(count == reference(ints, Op::count_nonzero).value.as<std::int64_t>());
  CHECK_THROWS_AS(r.reduce_async(DType::i32, Op::count_nonzero, pi, n,
                                 reinterpret_cast<void*>(out.get()), DType::i32),
                  InvalidArgument);
  // Rows of 1 element: not a copy for ops that map their element.
  for (Op op : {Op::any, Op::sumsq, Op::mean}) {
    Segmentation seg;
    seg.problem = Problem::rows;
    seg.shape = {1000, 1};
    seg.stride = 1;
    r.reduce_rows(DType::i32, op, pi, 1000, 1, reinterpret_cast<void*>(out.get()));
    RT_CU(cuCtxSynchronize());
    HostArray got;
    got.dtype = result_dtype(op, DType::i32);
    got.n = 1000;
    got.bytes.resize(1000 * size_of(got.dtype));
    RT_CU(cuMemcpyDtoH(got.bytes.data(), out.get(), got.bytes.size()));
    HostArray head = ints;
    head.n = 1000;
    head.bytes.resize(1000 * 4);
    const Check c = check_segmented(segmented_reference(head, seg, op), got, seg, op,
                                    [](std::uint64_t) { return std::uint64_t(4); });
    INFO(name(op) << ": " << c.expected << ", got " << c.observed);
    CHECK(c.ok);
  }
  // Columns of a matrix, mean of int32 into float64.
  r.reduce_columns(DType::i32, Op::mean, pi, 1000, 100, reinterpret_cast<void*>(out.get()));
  RT_CU(cuCtxSynchronize());
  std::vector<double> means(100);
  RT_CU(cuMemcpyDtoH(means.data(), out.get(), 100 * 8));
  Segmentation cols;
  cols.problem = Problem::columns;
  cols.shape = {100, 1000};
  cols.stride = 100;
  const std::vector<Reference> want = segmented_reference(ints, cols, Op::mean);
  for (int c = 0; c < 100; ++c)
    CHECK(std::fabs(means[c] - want[c].exact) <= 1e-9 * (std::fabs(want[c].exact) + 1));
}

TEST_CASE("ops: argmax, argmin, logsumexp, var and std through the library's calls", "[gpu][ops]") {
  const testing::TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string(); // the shipped tuning, else the defaults
  Reducer r(0, o);
  const testing::GpuContext& g = gpu();

  const std::uint64_t n = 100003;
  const HostArray ints = input_with_zeros(DType::i32, n, 7);
  const cuda::Buffer d_ints = upload(ints);
  const auto* pi = reinterpret_cast<const std::int32_t*>(d_ints.get());
  CHECK(r.argmax(pi, n) == reference(ints, Op::argmax).value.as<std::int64_t>());
  CHECK(r.argmin(pi, n) == reference(ints, Op::argmin).value.as<std::int64_t>());
  CHECK_THROWS_AS(r.logsumexp(pi, n), InvalidArgument); // floats only
  for (Op op : {Op::var, Op::std_, Op::var_population, Op::std_population}) {
    const double got = op == Op::var              ? r.var(pi, n)
                       : op == Op::std_           ? r.stddev(pi, n)
                       : op == Op::var_population ? r.var_population(pi, n)
                                                  : r.stddev_population(pi, n);
    const std::string bad = testing::mismatch(g, r.config_for(DType::i32, op, n), ints, op, Scalar::of(got));
    INFO(bad);
    CHECK(bad.empty());
  }
  // Nothing to reduce: argmax has no result (torch raises); var is NaN, logsumexp -infinity.
  CHECK_THROWS_AS(r.argmax(pi, 0), InvalidArgument);
  CHECK_THROWS_AS(r.argmin(pi, 0), InvalidArgument);
  cuda::Buffer out(1024 * 8);
  CHECK_THROWS_AS(r.reduce_rows(DType::i32, Op::argmax, pi, 10, 0, reinterpret_cast<void*>(out.get())),
                  InvalidArgument);
  CHECK_THROWS_AS(r.reduce_async(DType::i32, Op::argmin, pi, 0, reinterpret_cast<void*>(out.get())),
                  InvalidArgument);
  CHECK(std::isnan(r.var(pi, 1)));
  CHECK(r.var_population(pi, 1) == 0.0);

  HostArray floats = input_with_zeros(DType::f32, n, 8);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  floats.data<float>()[77777] = nan; // a NaN wins argmax and argmin, the first one
  floats.data<float>()[88888] = nan;
  const cuda::Buffer d_floats = upload(floats);
  const auto* pf = reinterpret_cast<const float*>(d_floats.get());
  CHECK(r.argmax(pf, n) == 77777);
  CHECK(r.argmin(pf, n) == 77777);
  HostArray head = floats; // before the first NaN
  head.n = 77777;
  head.bytes.resize(head.n * 4);
  CHECK(r.argmax(pf, head.n) == reference(head, Op::argmax).value.as<std::int64_t>());
  CHECK(std::isnan(r.logsumexp(pf, n)));
  CHECK(std::isnan(r.var(pf, n)));
  const HostArray clean = input_with_zeros(DType::f32, n, 9);
  const cuda::Buffer d_clean = upload(clean);
  const auto* pc = reinterpret_cast<const float*>(d_clean.get());
  for (Op op : {Op::logsumexp, Op::var, Op::std_, Op::var_population, Op::std_population}) {
    const float got = r.reduce(op, pc, n);
    const std::string bad = testing::mismatch(g, r.config_for(DType::f32, op, n), clean, op, Scalar::of(got));
    INFO(bad);
    CHECK(bad.empty());
  }
  CHECK(r.logsumexp(pc, 0) == -std::numeric_limits<float>::infinity());

  // Infinities: logsumexp of -inf elements is -inf, a +inf gives +inf; var of an inf is NaN.
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {-inf, -inf, -inf, 2.0f, inf, 1.0f};
  cuda::Buffer d_special(sizeof special);
  reduce_tune::cuda::upload_sync(d_special.get(), special, sizeof special);
  const auto* ps = reinterpret_cast<const float*>(d_special.get());
  CHECK(r.logsumexp(ps, 3) == -inf);
  CHECK(r.logsumexp(ps, 4) == 2.0f);
  CHECK(r.logsumexp(ps, 6) == inf);
  CHECK(std::isnan(r.var(ps + 3, 3)));
  CHECK(r.argmax(ps, 3) == 0); // all equal: the first
  CHECK(r.argmax(ps, 6) == 4);
  CHECK(r.argmin(ps + 3, 3) == 2);

  // Rows, columns and segments: the index within each.
  Segmentation rows;
  rows.problem = Problem::rows;
  rows.shape = {1000, 1};
  rows.stride = 1;
  r.reduce_rows(DType::i32, Op::argmax, pi, 1000, 1, reinterpret_cast<void*>(out.get()));
  RT_CU(cuCtxSynchronize());
  std::vector<std::int64_t> idx(1000, -7);
  RT_CU(cuMemcpyDtoH(idx.data(), out.get(), 1000 * 8));
  for (std::int64_t i : idx) CHECK(i == 0); // rows of one element
  r.reduce_columns(DType::i32, Op::argmin, pi, 1000, 100, reinterpret_cast<void*>(out.get()));
  RT_CU(cuCtxSynchronize());
  RT_CU(cuMemcpyDtoH(idx.data(), out.get(), 100 * 8));
  Segmentation cols;
  cols.problem = Problem::columns;
  cols.shape = {100, 1000};
  cols.stride = 100;
  const std::vector<Reference> want = segmented_reference(ints, cols, Op::argmin);
  for (int c = 0; c < 100; ++c) CHECK(idx[c] == want[c].value.as<std::int64_t>());
  // Offsets with an empty segment: -1 there.
  const std::int64_t offs[] = {0, 10, 10, 500};
  cuda::Buffer d_offs(sizeof offs);
  reduce_tune::cuda::upload_sync(d_offs.get(), offs, sizeof offs);
  r.reduce_segments(DType::i32, Op::argmax, pi, reinterpret_cast<const std::int64_t*>(d_offs.get()), 3,
                    reinterpret_cast<void*>(out.get()));
  RT_CU(cuCtxSynchronize());
  RT_CU(cuMemcpyDtoH(idx.data(), out.get(), 3 * 8));
  Segmentation seg;
  seg.problem = Problem::segments;
  seg.shape = {3, 166};
  seg.offsets.assign(std::begin(offs), std::end(offs));
  const std::vector<Reference> segs = segmented_reference(ints, seg, Op::argmax);
  CHECK(idx[0] == segs[0].value.as<std::int64_t>());
  CHECK(idx[1] == -1);
  CHECK(idx[2] == segs[2].value.as<std::int64_t>());
}

// ---- dot: two inputs ---------------------------------------------------------------------------

TEST_CASE("dot: the array problem matches the CPU, every variant and finish, any alignment",
          "[gpu][ops][dot]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (DType d : kDTypes) checked += check_array(g, d, Op::dot, 500, kPlacements);
  CHECK(checked > 1000);
}

TEST_CASE("dot: rows, columns and segments match the CPU, every mapping, any alignment",
          "[gpu][ops][dot][segmented]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (DType d : kDTypes)
    for (const SegmentedCase& cs : kSegmentedCases) checked += check_segmented(g, d, Op::dot, cs, 19, kPlacements);
  CHECK(checked > 0);
}

TEST_CASE("dot: the library's calls", "[gpu][ops][dot]") {
  const testing::TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string(); // the shipped tuning, else the defaults
  Reducer r(0, o);
  const testing::GpuContext& g = gpu();
  const CUstream s = nullptr;

  const std::uint64_t n = 100003;
  const HostArray xi = make_input(DType::i32, n, 8), yi = make_input(DType::i32, n, 9);
  const cuda::Buffer d_xi = upload(xi), d_yi = upload(yi);
  const auto* pxi = reinterpret_cast<const std::int32_t*>(d_xi.get());
  const auto* pyi = reinterpret_cast<const std::int32_t*>(d_yi.get());
  CHECK(r.dot(pxi, pyi, n) == reference(xi, yi, Op::dot).value.as<std::int32_t>());
  CHECK(r.dot(pxi, pyi, 0) == 0);
  // dot through the calls of one input, and those calls' ops through the dot calls: refused.
  CHECK_THROWS_AS(r.reduce(Op::dot, pxi, n), InvalidArgument);
  cuda::Buffer out(4096 * 8);
  void* d_out = reinterpret_cast<void*>(out.get());
  CHECK_THROWS_AS(r.reduce_async(DType::i32, Op::dot, pxi, n, d_out), InvalidArgument);
  CHECK_THROWS_AS(r.reduce_rows(DType::i32, Op::dot, pxi, 10, 10, d_out), InvalidArgument);
  CHECK_THROWS_AS(r.dot(pxi, static_cast<const std::int32_t*>(nullptr), n), InvalidArgument);

  // float32, one element past an aligned start for y only (no common vector boundary).
  const HostArray xf = make_input(DType::f32, n, 10), yf = make_input(DType::f32, n, 11);
  const Placed pxf(xf, 0), pyf(yf, 1);
  const auto* fx = reinterpret_cast<const float*>(pxf.at);
  const auto* fy = reinterpret_cast<const float*>(pyf.at);
  const Reference rf = reference(xf, yf, Op::dot);
  {
    const float got = r.dot(fx, fy, n);
    const Choice c = r.config_for(DType::f32, Op::dot, n);
    const Check k = check(rf, Scalar::of(got), Op::dot,
                          summation_depth(c.config, g.target(DType::f32, Op::dot), n));
    INFO(key(c.config) << ": got " << k.observed << ", expected " << k.expected);
    CHECK(k.ok);
  }
  r.dot_async(fx, fy, n, reinterpret_cast<float*>(out.get()), s);
  RT_CU(cuCtxSynchronize());
  float async_got = 0;
  RT_CU(cuMemcpyDtoH(&async_got, out.get(), 4));
  CHECK(std::fabs(async_got - rf.exact) <= 1e-4 * rf.abs_sum);

  // bf16 with its float32 accumulator as the result.
  const HostArray xb = make_input(DType::bf16, n, 12), yb = make_input(DType::bf16, n, 13);
  const cuda::Buffer d_xb = upload(xb), d_yb = upload(yb);
  r.dot_async(DType::bf16, reinterpret_cast<const void*>(d_xb.get()),
              reinterpret_cast<const void*>(d_yb.get()), n, d_out, DType::f32, s);
  RT_CU(cuCtxSynchronize());
  float wide = 0;
  RT_CU(cuMemcpyDtoH(&wide, out.get(), 4));
  const Reference rb = reference(xb, yb, Op::dot);
  Target wide_target = g.target(DType::bf16, Op::dot);
  wide_target.wide_result = true;
  const Choice cb = r.async_config_for(DType::bf16, Op::dot, n, DType::f32);
  CHECK(check(rb, Scalar::of(wide), Op::dot, summation_depth(cb.config, wide_target, n)).ok);

  // Rows, columns and segments of the int32 inputs: exact.
  auto segmented = [&](const Segmentation& seg, const std::function<void()>& call) {
    RT_CU(cuMemsetD8Async(out.get(), 0xA5, seg.shape.count * 4, nullptr));
    call();
    RT_CU(cuCtxSynchronize());
    HostArray got;
    got.dtype = DType::i32;
    got.n = seg.shape.count;
    got.bytes.resize(seg.shape.count * 4);
    RT_CU(cuMemcpyDtoH(got.bytes.data(), out.get(), got.bytes.size()));
    const Check c = check_segmented(segmented_reference(xi, yi, seg, Op::dot), got, seg, Op::dot,
                                    [](std::uint64_t) { return std::uint64_t(0); });
    INFO(name(seg.problem) << ": " << c.expected << ", got " << c.observed);
    CHECK(c.ok);
  };
  Segmentation rows;
  rows.problem = Problem::rows;
  rows.shape = {1000, 90};
  rows.stride = 100;
  auto* iout = reinterpret_cast<std::int32_t*>(d_out);
  segmented(rows, [&] { r.dot_rows(pxi, pyi, 1000, 90, iout, s, 100); });
  Segmentation ones = rows; // one element a row: a product each, not a copy
  ones.shape = {1000, 1};
  ones.stride = 1;
  segmented(ones, [&] { r.dot_rows(pxi, pyi, 1000, 1, iout, s); });
  Segmentation cols;
  cols.problem = Problem::columns;
  cols.shape = {100, 1000};
  cols.stride = 100;
  segmented(cols, [&] { r.dot_columns(pxi, pyi, 1000, 100, iout, s); });
  Segmentation segs;
  segs.problem = Problem::segments;
  segs.offsets = skewed_offsets(2000, n, 77);
  segs.shape = {2000, n / 2000};
  const cuda::Buffer d_off(segs.offsets.size() * 8);
  reduce_tune::cuda::upload_sync(d_off.get(), segs.offsets.data(), segs.offsets.size() * 8);
  segmented(segs, [&] {
    r.dot_segments(pxi, pyi, reinterpret_cast<const std::int64_t*>(d_off.get()), 2000, iout, s, n);
  });
}
