// Tests of a user reduction's atomic finish on the 1-D problem (kernels/catalogue.cpp,
// kernels/user_op.h): the first-block finish, whose blocks combine into the result with a
// compare-and-swap loop and whose first block writes the identity, admitted for a commutative
// reduction whose post-map is `a` and whose result is its 4- or 8-byte accumulator; each other
// case refused with its reason; the sweep's space offering it on data-sized grids; a built-in op's
// row or default with the atomic finish taken as the first-block one (for_user, the lookups, the
// defaults); and, with NVRTC (no GPU needed), its kernels compiled.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "runtime/defaults.h"
#include "runtime/user_lookup.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"
#include "tuner/sweep_search.h"

#include <algorithm>

using namespace reduce_tune;
using reduce_tune::testing::stored_row;

namespace {

constexpr std::uint64_t k20 = std::uint64_t(1) << 20;
const std::string kDataAtomic = "vectorized.b256.u4.v4.g0.shfl.atomic";
const std::string kDataFirst = "vectorized.b256.u4.v4.g0.shfl.firstblock";
const std::string kStrideFirst = "streaming.b256.u2.v4.g8.shfl.firstblock";
const std::string kStrideLast = "vectorized.b256.u4.v4.g8.shfl.lastblock";
// Vectors of two: 16 bytes of 8-byte elements.
const std::string kDataFirst2 = "vectorized.b256.u4.v2.g0.shfl.firstblock";
const std::string kStrideFirst2 = "streaming.b256.u2.v2.g8.shfl.firstblock";

Reduction sum_of_squares() {
  Reduction r;
  r.map = "x * x";
  return r;
}

// A float maximum: no atomic of its own (the combine is code), a compare-and-swap loop.
Reduction maximum() {
  Reduction r;
  r.combine = "a > b ? a : b";
  r.identity = "-INFINITY";
  r.inputs = {DType::f32};
  return r;
}

Target target(const UserOp& u, DType dtype, Problem problem = Problem::array) {
  Target t;
  t.dtype = dtype;
  t.cc = 90;
  t.sm_count = 132;
  t.problem = problem;
  t.user = &u;
  return t;
}

Config cfg(const std::string& k) {
  std::string why;
  const auto c = parse_key(k, &why);
  INFO(k << ": " << why);
  REQUIRE(c);
  return *c;
}

std::string reason(const std::string& k, const UserOp& u, DType dtype, Problem problem = Problem::array) {
  return invalid_reason(cfg(k), target(u, dtype, problem)).value_or("");
}

DeviceKey h100() {
  DeviceKey k;
  k.uuid = "GPU-a", k.name = "NVIDIA H100 80GB HBM3", k.cc_major = 9, k.sm_count = 132;
  return k;
}

void add(db::Store& s, const std::vector<db::Measurement>& rows) {
  db::DeviceRecord d;
  d.uuid = "GPU-a", d.name = "NVIDIA H100 80GB HBM3", d.cc_major = 9, d.sm_count = 132;
  s.upsert_device(d);
  db::RunRecord run;
  run.device_uuid = d.uuid, run.tool_version = "test", run.nvrtc_version = "13.0";
  const auto id = s.begin_run(run);
  s.add_measurements(id, rows);
  s.end_run(id, "done");
}

} // namespace

TEST_CASE("user first-block finish: admitted for a commutative plain-post 4- or 8-byte reduction", "[user][catalogue]") {
  const auto sumsq = make_user_op(sum_of_squares());
  const auto max = make_user_op(maximum());
  REQUIRE(sumsq->accumulator_dtype(DType::f32) == DType::f32);
  REQUIRE(sumsq->accumulator_dtype(DType::bf16) == DType::f32);
  for (const std::string& k : {kDataFirst2, kStrideFirst2}) {
    INFO(k);
    for (DType d : {DType::f32, DType::f64, DType::i32, DType::u32, DType::i64})
      CHECK(reason(k, *sumsq, d).empty());
    CHECK(reason(k, *max, DType::f32).empty());
  }
  // A spelled scalar accumulator of the result's type: a float64 sum of squares of float32.
  Reduction wide = sum_of_squares();
  wide.accumulator = "double";
  wide.map = "double(x) * double(x)";
  wide.result = DType::f64;
  const auto w = make_user_op(wide);
  CHECK(reason(kDataFirst, *w, DType::f32).empty());
  // An atomic finish makes the result depend on the blocks' order for a floating-point
  // accumulator, whatever the element type.
  Reduction ints_in_float = wide;
  ints_in_float.accumulator = "float";
  ints_in_float.map = "float(x)";
  ints_in_float.result = DType::f32;
  const auto f = make_user_op(ints_in_float);
  REQUIRE(reason(kDataFirst, *f, DType::i32).empty());
  CHECK_FALSE(deterministic(cfg(kDataFirst), target(*f, DType::i32)));
  CHECK(deterministic(cfg(kDataFirst), target(*sumsq, DType::i32)));
  CHECK_FALSE(deterministic(cfg(kDataFirst), target(*sumsq, DType::f32)));
  // Its plan: no host step before the launch, the self-resetting state.
  const LaunchPlan p = plan(cfg(kDataFirst), target(*sumsq, DType::f32), k20);
  CHECK_FALSE(p.init_out);
  CHECK(p.counter);
}

TEST_CASE("user first-block finish: each other case refused with its reason", "[user][catalogue]") {
  const auto sumsq = make_user_op(sum_of_squares());
  // The atomic finish: its identity is written by the host, which cannot evaluate the expression.
  CHECK_THAT(reason(kDataAtomic, *sumsq, DType::f32), Catch::Contains("identity") && Catch::Contains("firstblock"));
  CHECK_THAT(reason("atomic_shared.b256.atomic", *sumsq, DType::f32), Catch::Contains("identity"));
  // Not commutative: its array variants all reorder.
  Reduction first = sum_of_squares();
  first.map = "x";
  first.combine = "a != 0 ? a : b";
  first.commutative = false;
  const auto ordered = make_user_op(first);
  CHECK_THAT(reason(kDataFirst, *ordered, DType::f32), Catch::Contains("not commutative"));
  CHECK_THAT(ordered->atomic_unsupported(DType::f32).value_or(""), Catch::Contains("not commutative"));
  // A post-map other than the plain `a`.
  Reduction norm = sum_of_squares();
  norm.post = "sqrt(a)";
  CHECK_THAT(reason(kStrideFirst, *make_user_op(norm), DType::f32), Catch::Contains("post-map 'sqrt(a)'"));
  // A 16-byte struct accumulator: the compare-and-swap loop takes 4 or 8 bytes.
  Reduction quad;
  quad.preamble = "struct q4 { float a, b, c, d; };";
  quad.accumulator = "q4";
  quad.accumulator_bytes = 16;
  quad.identity = "{0.f, 0.f, 0.f, 0.f}";
  quad.map = "q4{x, x, x, x}";
  quad.combine = "q4{a.a + b.a, a.b + b.b, a.c + b.c, a.d + b.d}";
  quad.inputs = {DType::f32};
  CHECK_THAT(reason(kDataFirst, *make_user_op(quad), DType::f32), Catch::Contains("16 bytes"));
  // An 8-byte struct (logsumexp's) is not a scalar the result could be.
  Reduction lse = reduce_tune::testing::log_sum_exp();
  lse.post = "a";
  lse.result = DType::f32;
  CHECK_THAT(reason(kDataFirst, *make_user_op(lse), DType::f32), Catch::Contains("result is not its accumulator ('lse')"));
  // A bf16 result of a float32 accumulator would round at every block's combine.
  CHECK_THAT(reason(kDataFirst, *sumsq, DType::bf16),
             Catch::Contains("bfloat16 result is not its accumulator (float32)"));
  // A float64 result of a float32 accumulator.
  Reduction widened = sum_of_squares();
  widened.result = DType::f64;
  widened.inputs = {DType::f32};
  CHECK_THAT(reason(kDataFirst, *make_user_op(widened), DType::f32), Catch::Contains("float64 result"));
  // The segmented problems keep their finishes: no atomic one for a user reduction.
  CHECK(invalid_reason(Config{"columns_split", 256, 2, 4, 4, Tail::shfl, Finish::atomic},
                       target(*sumsq, DType::f32, Problem::columns)));
}

TEST_CASE("user first-block finish: the sweep's space offers it on data-sized grids", "[user][catalogue]") {
  const auto sumsq = make_user_op(sum_of_squares());
  for (const char* name : {"vectorized", "streaming"}) {
    INFO(name);
    const Variant& v = *find_variant(name);
    const std::vector<Config> builtin = space(v), user = space(v, true);
    CHECK(builtin.size() == user.size());
    auto has = [](const std::vector<Config>& s, int grid_zero, Finish f) {
      return std::any_of(s.begin(), s.end(), [&](const Config& c) { return (c.grid == 0) == bool(grid_zero) && c.finish == f; });
    };
    CHECK(has(builtin, 1, Finish::atomic));
    CHECK_FALSE(has(builtin, 1, Finish::firstblock));
    CHECK(has(user, 1, Finish::firstblock));
    CHECK_FALSE(has(user, 1, Finish::atomic));
    CHECK(has(user, 0, Finish::firstblock)); // grid-stride grids as the built-in ops'
    std::size_t admitted = 0;
    for (const Config& c : user) admitted += !invalid_reason(c, target(*sumsq, DType::f32)) && c.finish == Finish::firstblock;
    CHECK(admitted > 0);
  }
}

TEST_CASE("user first-block finish: a built-in op's atomic finish is taken as it", "[user][lookup]") {
  const auto sumsq = make_user_op(sum_of_squares());
  Reduction norm_r = sum_of_squares();
  norm_r.post = "sqrt(a)";
  const auto norm = make_user_op(norm_r);
  // for_user: the atomic finish becomes the first-block one where the reduction admits it.
  CHECK(key(for_user(cfg(kDataAtomic), target(*sumsq, DType::f32))) == kDataFirst);
  CHECK(key(for_user(cfg(kDataAtomic), target(*norm, DType::f32))) == kDataAtomic); // refused either way
  CHECK(key(for_user(cfg("atomic_shared.b256.atomic"), target(*sumsq, DType::f32))) == "atomic_shared.b256.atomic");
  CHECK(key(for_user(cfg(kStrideLast), target(*sumsq, DType::f32))) == kStrideLast);
  Target builtin = target(*sumsq, DType::f32);
  builtin.user = nullptr;
  CHECK(key(for_user(cfg(kDataAtomic), builtin)) == kDataAtomic);

  // The lookup: float32 sum rows, the data-sized atomic one fastest. The sum of squares takes it
  // (related) with the first-block finish; the norm, which has no atomic finish, the next one.
  db::Store s(":memory:");
  add(s, {stored_row(kDataAtomic, DType::f32, Op::sum, 5.0), stored_row(kStrideLast, DType::f32, Op::sum, 6.0)});
  const Choice c = lookup_user(&s, nullptr, h100(), *sumsq, DType::f32, Problem::array, {1, k20}, {});
  CHECK(c.match == Match::related);
  CHECK(key(c.config) == kDataFirst);
  const Choice n = lookup_user(&s, nullptr, h100(), *norm, DType::f32, Problem::array, {1, k20}, {});
  CHECK(n.match == Match::related);
  CHECK(key(n.config) == kStrideLast);
  CHECK_THAT(n.note, Catch::Contains(kDataAtomic)); // passed over, and said so
  // A deterministic call passes over the float32 atomic finish.
  Requirements det;
  det.deterministic = true;
  CHECK(key(lookup_user(&s, nullptr, h100(), *sumsq, DType::f32, Problem::array, {1, k20}, det).config) == kStrideLast);
  // An int32 sum of squares: its int32 rows, the same mapping.
  db::Store ints(":memory:");
  add(ints, {stored_row(kDataAtomic, DType::i32, Op::sum, 5.0)});
  CHECK(key(lookup_user(&ints, nullptr, h100(), *sumsq, DType::i32, Problem::array, {1, k20}, {}).config) == kDataFirst);
}

TEST_CASE("user first-block finish: a user reduction's guided search starts from a sum row's atomic finish as it",
          "[user][search]") {
  const auto sumsq = make_user_op(sum_of_squares());
  db::Store s(":memory:");
  add(s, {stored_row(kDataAtomic, DType::f32, Op::sum, 5.0)});
  const PointId p{DType::f32, Op::sum, Problem::array, Shape{1, k20}};
  // The sweep's candidates for the reduction: its space, valid for it.
  std::vector<Config> candidates;
  for (const char* v : {"vectorized", "streaming"})
    for (const Config& c : space(*find_variant(v), true))
      if (!invalid_reason(c, target(*sumsq, DType::f32))) candidates.push_back(c);
  const auto first_measured = [&](std::shared_ptr<const UserOp> user) {
    SweepSearch search = sweep_search(Strategy::guided, Budget{5}, {{p, candidates.size()}}, &s, h100(), user);
    std::vector<std::string> measured;
    search.run(p, candidates, [&](std::size_t i) {
      measured.push_back(key(candidates[i]));
      return 10.0;
    });
    REQUIRE_FALSE(measured.empty());
    return measured.front();
  };
  // Seeded as its calls look up: the sum's row with the first-block finish, measured first. As a
  // built-in sum's search would be seeded (no user), the row is no candidate of the reduction's,
  // and the nearest candidate is another.
  CHECK(first_measured(sumsq) == kDataFirst);
  CHECK(first_measured(nullptr) != kDataFirst);
}

TEST_CASE("user first-block finish: the defaults a user reduction takes are valid for it", "[user][defaults]") {
  const auto sumsq = make_user_op(sum_of_squares());
  const auto max = make_user_op(maximum());
  for (const UserOp* u : {sumsq.get(), max.get()})
    for (int lg = 10; lg <= 28; ++lg) {
      const Shape shape{1, std::uint64_t(1) << lg};
      Requirements req;
      req.user = u;
      const Config mine = builtin_config(Problem::array, DType::f32, Op::sum, shape, req, h100());
      const Config sum = builtin_config(Problem::array, DType::f32, Op::sum, shape, {}, h100());
      INFO(u->name << " 2^" << lg << ": " << key(mine) << " (sum: " << key(sum) << ")");
      CHECK_FALSE(invalid_reason(mine, target(*u, DType::f32)));
      // A compare-and-swap loop from every block of a data-sized grid is not a default.
      CHECK_FALSE((mine.grid == 0 && mine.finish == Finish::firstblock));
      // The sum's grid-stride first-block default serves the reduction as it is.
      if (sum.finish == Finish::firstblock && sum.grid > 0) CHECK(key(mine) == key(sum));
    }
}

// NVRTC needs no GPU.
TEST_CASE("user first-block finish: its kernels compile, with a compare-and-swap combine", "[user][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  const ArchTarget ptx = nvrtc.parse_target("compute_90");
  Reduction ints = maximum();
  ints.identity = "-2147483647 - 1";
  ints.inputs = {DType::i32};
  Reduction wide = sum_of_squares();
  wide.accumulator = "double";
  wide.map = "double(x) * double(x)";
  wide.result = DType::f64;
  const std::pair<Reduction, DType> cases[] = {{sum_of_squares(), DType::f32}, {maximum(), DType::f32},
                                               {sum_of_squares(), DType::f64}, {ints, DType::i32},
                                               {wide, DType::f32}};
  for (const auto& [r, d] : cases) {
    const auto u = make_user_op(r);
    for (const std::string& k : {kDataFirst2, kStrideFirst2}) {
      INFO(u->name << " " << name(d) << " " << k);
      REQUIRE_FALSE(invalid_reason(cfg(k), target(*u, d)));
      const std::string source = render(cfg(k), d, *u);
      CHECK_THAT(source, Catch::Contains("#define RT_FINISH_FIRSTBLOCK 1"));
      Compiled c;
      REQUIRE_NOTHROW(c = nvrtc.compile(source, "reduce_tune.cu", ptx));
      // PTX (compute_90): the block's value goes into the result by atom.cas, 32 or 64 bits.
      const std::string bits = size_of(*u->accumulator_dtype(d)) == 8 ? "b64" : "b32";
      CHECK_THAT(c.image, Catch::Contains("atom.global.cas." + bits) || Catch::Contains("atom.cas." + bits));
    }
  }
}
