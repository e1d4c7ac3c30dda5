// Tests of a user reduction's lookup (runtime/user_lookup.h) on stored fixtures: its own rows by
// hash first, then the related op's, then the defaults; and of to_text, the form a store keeps a
// reduction in.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "runtime/user_lookup.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"

using namespace reduce_tune;
using reduce_tune::testing::sum_of_squares;
using reduce_tune::testing::stored_row;
using reduce_tune::testing::add;
using reduce_tune::testing::h100;

namespace {

constexpr std::uint64_t k20 = std::uint64_t(1) << 20, k24 = std::uint64_t(1) << 24;
const std::string kLast = "vectorized.b256.u4.v4.g0.shfl.lastblock";
const std::string kLast512 = "vectorized.b512.u2.v4.g0.shfl.lastblock";
const std::string kAtomic = "atomic_shared.b256.atomic";
const std::string kHost = "unrolling.b512.u8.host";

db::Measurement user_row(const std::string& key, std::uint64_t hash, double us, std::uint64_t n = k20) {
  db::Measurement m = stored_row(key, DType::f32, Op::sum, us, Problem::array, {1, n});
  m.user = hash;
  return m;
}

} // namespace

TEST_CASE("user lookup: its own rows first (exact, then nearest), before a faster related op's", "[lookup][user]") {
  const auto u = make_user_op(sum_of_squares());
  db::Store s(":memory:");
  // sum's rows are faster at 2^20 than the reduction's own: its own still win.
  add(s, "GPU-a", {stored_row(kLast512, DType::f32, Op::sum, 3.0), user_row(kLast, u->hash, 9.0),
                   user_row(kHost, u->hash, 1.0) /* invalid for it: passed over */});
  const Choice c = lookup_user(&s, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, {1, k20}, {});
  CHECK(c.match == Match::exact);
  CHECK(key(c.config) == kLast);
  CHECK_THAT(c.note, Catch::Contains(u->name));
  CHECK_THAT(c.note, Catch::Contains(kHost)); // named as passed over
  // At another size: its nearest row.
  const Choice n = lookup_user(&s, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, {1, k24}, {});
  CHECK(n.match == Match::nearest_size);
  CHECK(key(n.config) == kLast);
  // Another GPU of the architecture: same_arch from GPU-a's own rows.
  const Choice other = lookup_user(&s, nullptr, h100("GPU-b"), *u, DType::f32, Problem::array, {1, k20}, {});
  CHECK(other.match == Match::same_arch);
  CHECK(key(other.config) == kLast);
}

TEST_CASE("user lookup: without rows of its own, the related op's, then the defaults", "[lookup][user]") {
  const auto u = make_user_op(sum_of_squares());
  db::Store s(":memory:");
  Reduction other_r = sum_of_squares();
  other_r.post = "sqrt(a)";
  const auto other = make_user_op(other_r);
  REQUIRE(other->hash != u->hash);
  // Only sum's rows and another reduction's: sum's are related; the other reduction's are not its own.
  add(s, "GPU-a", {stored_row(kLast512, DType::f32, Op::sum, 3.0), user_row(kLast, other->hash, 1.0)});
  const Choice rel = lookup_user(&s, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, {1, k20}, {});
  CHECK(rel.match == Match::related);
  CHECK(key(rel.config) == kLast512);
  CHECK_THAT(rel.note, Catch::Contains("float32 sum"));
  // No store at all: the defaults, valid for the reduction.
  const Choice none = lookup_user(nullptr, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, {1, k20}, {});
  CHECK(none.match == Match::builtin);
  Requirements req;
  req.user = u.get();
  CHECK_FALSE(invalid_reason(none.config, target_of(h100("GPU-a"), DType::f32, Op::sum, Problem::array, req)));
  CHECK(related_op(*u, DType::f32) == Op::sum);
}

TEST_CASE("user lookup: an additive reduction takes the related op's atomic finishes", "[lookup][user][additive]") {
  const auto u = make_user_op(sum_of_squares());
  REQUIRE(u->additive());
  Reduction product_r = sum_of_squares();
  product_r.combine = "a * b";
  product_r.identity = "1";
  const auto product = make_user_op(product_r);
  db::Store s(":memory:");
  // sum's rows: an atomic finish fastest at 2^24 (the data-sized grid), a last-block one next.
  add(s, "GPU-a", {stored_row(kAtomic, DType::f32, Op::sum, 2.0, Problem::array, {1, k24}),
                   stored_row(kLast512, DType::f32, Op::sum, 3.0, Problem::array, {1, k24})});
  const Choice c = lookup_user(&s, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, {1, k24}, {});
  CHECK(c.match == Match::related);
  CHECK(key(c.config) == kAtomic);
  CHECK_THAT(c.note, !Catch::Contains("passed over"));
  // A combine that is not additive passes over it, naming why.
  const Choice p = lookup_user(&s, nullptr, h100("GPU-a"), *product, DType::f32, Problem::array, {1, k24}, {});
  CHECK(p.match == Match::related);
  CHECK(key(p.config) == kLast512);
  CHECK_THAT(p.note, Catch::Contains(kAtomic));
  CHECK_THAT(p.note, Catch::Contains("not a + b"));
  // The defaults serve it too: whatever they answer is valid for it.
  const Choice none = lookup_user(nullptr, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, {1, k24}, {});
  Requirements req;
  req.user = u.get();
  CHECK_FALSE(invalid_reason(none.config, target_of(h100("GPU-a"), DType::f32, Op::sum, Problem::array, req)));
}

TEST_CASE("to_text: parse_reduction reads back the same description", "[user]") {
  std::vector<Reduction> all;
  all.push_back(sum_of_squares());
  Reduction lse;
  lse.preamble = "struct lse { float m; float s; };\n// a line that says END alone follows\nEND\n"
                 "__device__ lse merge(lse a, lse b) { return a; }";
  lse.accumulator = "lse";
  lse.accumulator_bytes = 8;
  lse.map = "A{x, 1.f}";
  lse.combine = "merge(a, b)";
  lse.identity = "{-INFINITY, 0.f}";
  lse.post = "a.m + logf(a.s)";
  lse.inputs = {DType::f32, DType::bf16};
  lse.result = DType::f32;
  lse.commutative = false;
  all.push_back(lse);
  Reduction spaced;
  spaced.map = "  x < 0 ? -x : x  ";
  spaced.combine = "fmaxf(a, b) /* = max */";
  all.push_back(spaced);
  all.push_back(Reduction{}); // the defaults: no line at all
  for (const Reduction& r : all) {
    const std::string text = to_text(r);
    INFO(text);
    const Reduction back = parse_reduction(text);
    CHECK(back.canonical() == r.canonical());
    CHECK(back.hash() == r.hash());
  }
  CHECK(to_text(Reduction{}).empty());
  CHECK_THAT(to_text(lse), Catch::Contains("preamble <<END0"));
}
