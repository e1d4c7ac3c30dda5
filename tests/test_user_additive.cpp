// Tests of additive user reductions (kernels/additive.h): which descriptions the library reads as
// an addition, the catalogue's atomic finishes for them (and not for other combines, nor into a
// result the post-map changes), their source and, with NVRTC (no GPU needed), their atomic-finish
// kernels compiled to PTX that adds with the hardware's atomics, not a compare-and-swap loop.
#include <catch2/catch.hpp>

#include "kernels/additive.h"
#include "kernels/catalogue.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "runtime/user_lookup.h"
#include "tests/config_fixture.h"
#include "tests/user_reductions.h"
#include "tuner/sweep.h"

#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::user_target;
using reduce_tune::testing::cfg;

namespace {

Reduction sumsq(const std::string& combine = "a + b", const std::string& identity = "0") {
  Reduction r;
  r.map = "x * x";
  r.combine = combine;
  r.identity = identity;
  r.post = "a";
  return r;
}

std::string why(const char* k, const Target& t) { return invalid_reason(cfg(k), t).value_or(""); }

constexpr const char* kAtomic = "streaming.b256.u4.v2.g0.shfl.atomic"; // v2: 16 bytes of any dtype
constexpr const char* kFirst = "streaming.b256.u4.v2.g8.shfl.firstblock";

} // namespace

TEST_CASE("additive: the combines, accumulators and identities read as an addition", "[user][additive]") {
  for (const char* c : {"a + b", "b + a", "a+b", "(a + b)", " ( ( a\t+\nb ) ) "}) {
    INFO(c);
    CHECK_FALSE(not_additive(sumsq(c)));
  }
  // Strict: parenthesised operands, comments and statements are not read.
  for (const char* c : {"a - b", "a * b", "max(a, b)", "a + b + 1", "a + 2 * b", "a + a", "(a) + (b)",
                        "((b)+a)", "(a + b) * 1", "a + b;", "a += b", "a + b // sum"}) {
    INFO(c);
    const auto no = not_additive(sumsq(c));
    REQUIRE(no);
    CHECK_THAT(*no, Catch::Contains("not a + b"));
  }
  for (const char* acc : {"", "float", "double", "int", "unsigned", "unsigned int", "long long",
                          "unsigned long long"}) {
    Reduction r = sumsq();
    r.accumulator = acc;
    INFO(acc);
    CHECK_FALSE(not_additive(r));
  }
  for (const char* zero : {"0", "00", "(0)", " 0 ", "0u", "0U", "0l", "0ll", "0LL", "0ull", "0ULL", "0llu",
                           "0.0", "0.", ".0", "0.0f", "0.f", "0.0F", "( 0.0f )"}) {
    INFO(zero);
    CHECK(is_zero_literal(zero));
    CHECK_FALSE(not_additive(sumsq("a + b", zero)));
  }
  for (const char* other : {"1", "-0", "-0.0", "0x0", "0e0", "0.0e0", "0.0L", "0lL", "0uu", "A(0)", "0 .0",
                            "{0}", "0.1", "", ".", "0.0ff", "false"}) {
    INFO(other);
    CHECK_FALSE(is_zero_literal(other));
  }
  CHECK_THAT(not_additive(sumsq("a + b", "1")).value_or(""), Catch::Contains("identity '1'"));
  // A struct accumulator, a combine declared not commutative, macros that change a or b.
  Reduction pair = sumsq();
  pair.preamble = "struct two { float x, y; };";
  pair.accumulator = "two";
  pair.accumulator_bytes = 8;
  CHECK_THAT(not_additive(pair).value_or(""), Catch::Contains("not a scalar"));
  Reduction ordered = sumsq();
  ordered.commutative = false;
  CHECK_THAT(not_additive(ordered).value_or(""), Catch::Contains("not commutative"));
  Reduction macro = sumsq();
  macro.preamble = "#define b (b * 2)";
  CHECK_THAT(not_additive(macro).value_or(""), Catch::Contains("macro 'b'"));
  macro.preamble = "  #  define float double\n";
  macro.accumulator = "float";
  CHECK_THAT(not_additive(macro).value_or(""), Catch::Contains("macro 'float'"));
  macro.preamble = "#define ab 2\n#define a_scale 3\n#define A_ONE 1";
  CHECK_FALSE(not_additive(macro)); // other names
  // The post-map: `a` alone.
  for (const char* post : {"a", "(a)", " ( a ) "}) {
    Reduction r = sumsq();
    r.post = post;
    CHECK(plain_post(r));
  }
  for (const char* post : {"sqrt(a)", "a / count", "a * 1", "-a", "A(a)"}) {
    Reduction r = sumsq();
    r.post = post;
    CHECK_FALSE(plain_post(r));
  }
  Reduction renamed = sumsq();
  renamed.preamble = "#define a 1";
  CHECK_FALSE(plain_post(renamed));
  // The dtype each spelling adds as.
  CHECK(scalar_accumulator("", DType::bf16) == DType::f32);
  CHECK(scalar_accumulator("", DType::i64) == DType::i64);
  CHECK(scalar_accumulator(" unsigned ", DType::f32) == DType::u32);
  CHECK(scalar_accumulator("unsigned long long", DType::f32) == DType::i64);
  CHECK_FALSE(scalar_accumulator("lse", DType::f32));
  CHECK_FALSE(scalar_accumulator("unsigned  int", DType::f32));
}

TEST_CASE("additive: the UserOp's traits and source", "[user][additive]") {
  const auto u = make_user_op(sumsq());
  REQUIRE(u->additive());
  CHECK(u->plain_post);
  CHECK(u->traits().atomic == OpAtomic::add);
  CHECK(u->traits().redux);
  CHECK(u->traits().plain_post);
  CHECK_FALSE(u->traits().host_combine);
  CHECK_FALSE(u->traits().plain_map);
  CHECK(u->accumulator_dtype(DType::f32) == DType::f32);
  CHECK(u->accumulator_dtype(DType::bf16) == DType::f32);
  const std::string src = u->source(DType::f32);
  CHECK_THAT(src, Catch::Contains("#define RT_ATOMIC_ADD 1"));
  CHECK_THAT(src, Catch::Contains("#define RT_REDUX_ADD 1"));
  CHECK_THAT(src, Catch::Contains("#define RT_ACC_F32 1"));
  CHECK_THAT(u->source(DType::f64), Catch::Contains("#define RT_ACC_F64 1"));
  CHECK_THAT(u->source(DType::i32), Catch::Contains("#define RT_ACC_I32 1"));
  CHECK_THAT(u->source(DType::u32), Catch::Contains("#define RT_ACC_U32 1"));
  CHECK_THAT(u->source(DType::bf16), Catch::Contains("#define RT_ACC_F32 1"));
  Reduction wide = sumsq();
  wide.accumulator = "unsigned long long";
  wide.inputs = {DType::u32};
  CHECK_THAT(make_user_op(wide)->source(DType::u32), Catch::Contains("#define RT_ACC_I64 1"));
  // Not additive: none of it.
  const auto product = make_user_op(sumsq("a * b", "1"));
  CHECK_FALSE(product->additive());
  CHECK(product->traits().atomic == OpAtomic::none);
  CHECK_FALSE(product->traits().redux);
  CHECK_FALSE(product->accumulator_dtype(DType::f32));
  CHECK_THAT(product->source(DType::f32), !Catch::Contains("RT_ATOMIC"));
  CHECK_THAT(product->source(DType::f32), !Catch::Contains("RT_ACC_"));
  // The description is unchanged by the reading: the same hash as before.
  CHECK(u->hash == sumsq().hash());
}

TEST_CASE("additive: the catalogue admits sum's atomic finishes, on the 1-D problem only into a plain result",
          "[user][additive]") {
  const auto u = make_user_op(sumsq());
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u32}) {
    INFO(name(d));
    CHECK(why(kAtomic, user_target(*u, d)) == "");
    CHECK(why(kFirst, user_target(*u, d)) == "");
    CHECK(why("atomic_shared.b256.atomic", user_target(*u, d)) == "");
    // Never the host finish or in place, whatever the combine.
    CHECK_THAT(why("unrolling.b512.u8.host", user_target(*u, d)), Catch::Contains("host finish"));
    CHECK_THAT(why("neighbored_gmem.b256.atomic", user_target(*u, d)), Catch::Contains("in place"));
  }
  // Each finish at 16-byte vectors and at v2, on a data-sized and a grid-stride grid, for 4- and
  // 8-byte elements.
  for (DType d : {DType::f32, DType::f64, DType::u32}) {
    const std::string v = d == DType::f64 ? "v2" : "v4";
    for (const std::string& k : {"streaming.b256.u4." + v + ".g0.shfl.atomic", std::string("vectorized.b512.u2.v2.g0.shfl.atomic"),
                                 "streaming.b256.u4." + v + ".g8.shfl.firstblock",
                                 std::string("vectorized.b512.u2.v2.g4.shfl.firstblock")}) {
      INFO(k << " " << name(d));
      CHECK(why(k.c_str(), user_target(*u, d)) == "");
    }
  }
  // The redux tail on 32-bit integer accumulators, as the built-in sum's.
  CHECK(why("streaming.b256.u4.v4.g8.redux.firstblock", user_target(*u, DType::u32)) == "");
  CHECK(why("streaming.b256.u4.v4.g8.redux.firstblock", user_target(*u, DType::i32)) == "");
  CHECK_THAT(why("streaming.b256.u4.v4.g8.redux.firstblock", user_target(*u, DType::f32)), Catch::Contains("32-bit"));
  // A product: no atomic and no redux, with the reason.
  const auto product = make_user_op(sumsq("a * b", "1"));
  CHECK_THAT(why(kAtomic, user_target(*product, DType::f32)), Catch::Contains("not a + b"));
  CHECK_THAT(why(kFirst, user_target(*product, DType::f32)), Catch::Contains("no atomic combine"));
  CHECK_THAT(why("streaming.b256.u4.v4.g8.redux.lastblock", user_target(*product, DType::i32)),
             Catch::Contains("__reduce"));
  CHECK(why("streaming.b256.u4.v4.g0.shfl.lastblock", user_target(*product, DType::f32)) == "");
  // A post-map that is not `a`: not into the result.
  Reduction norm = sumsq();
  norm.post = "sqrt(a)";
  norm.inputs = {DType::f32};
  const auto n2 = make_user_op(norm);
  REQUIRE(n2->additive());
  CHECK_THAT(why(kAtomic, user_target(*n2, DType::f32)), Catch::Contains("post-map is not `a`"));
  CHECK_THAT(why(kFirst, user_target(*n2, DType::f32)), Catch::Contains("post-map"));
  // A result of another type than the accumulator: int32 elements summed in int64 into an int32.
  Reduction widened = sumsq();
  widened.accumulator = "long long";
  widened.inputs = {DType::i32};
  const auto narrow = make_user_op(widened);
  CHECK_THAT(why(kAtomic, user_target(*narrow, DType::i32)), Catch::Contains("is not its accumulator"));
  widened.result = DType::i64;
  CHECK(why(kAtomic, user_target(*make_user_op(widened), DType::i32)) == "");
  // bf16 elements in a float accumulator: a bf16 result would round at every combine; a float32
  // result is the accumulator.
  Reduction half = sumsq();
  half.inputs = {DType::bf16};
  CHECK_THAT(why(kFirst, user_target(*make_user_op(half), DType::bf16)), Catch::Contains("round"));
  half.result = DType::f32;
  CHECK(why(kFirst, user_target(*make_user_op(half), DType::bf16)) == "");
  CHECK(why("streaming.b256.u4.v8.g0.shfl.atomic", user_target(*make_user_op(half), DType::bf16)) == "");
  // float64 atomicAdd needs sm_60, as the built-in sum's.
  CHECK_THAT(why(kAtomic, user_target(*u, DType::f64, Problem::array, 52)), Catch::Contains("sm_60"));
}

TEST_CASE("additive: the segmented atomic finishes, directly or through the post pass", "[user][additive]") {
  const auto u = make_user_op(sumsq());
  const char* const kRows = "rows_split.b256.u2.v4.g4.atomic";
  const char* const kColumns = "columns_split.b256.u2.v4.g4.atomic";
  const char* const kSegments = "segments_flat.b128.u4.v4.g16.atomic";
  const Shape rows{64, 1 << 16}, columns{4096, 4096}, segments{1 << 14, 0};
  for (DType d : {DType::f32, DType::i32}) { // 4-byte elements: v4 is a 16-byte load
    INFO(name(d));
    CHECK(why(kRows, user_target(*u, d, Problem::rows)) == "");
    CHECK(why(kColumns, user_target(*u, d, Problem::columns)) == "");
    CHECK(why(kSegments, user_target(*u, d, Problem::segments)) == "");
    // Added into the results themselves.
    CHECK_FALSE(atomic_post_pass(*u, d, Problem::rows));
    const SegmentedPlan p = segmented_plan(cfg(kRows), user_target(*u, d, Problem::rows), rows);
    CHECK(p.fill);
    CHECK_FALSE(p.post);
    CHECK(p.post_bytes == 0);
  }
  // sqrt(a): the accumulators are the float32 results, then the post pass writes them.
  Reduction norm = sumsq();
  norm.post = "sqrt(a)";
  const auto n2 = make_user_op(norm);
  CHECK(why(kRows, user_target(*n2, DType::f32, Problem::rows)) == "");
  CHECK(atomic_post_pass(*n2, DType::f32, Problem::columns));
  const SegmentedPlan p = segmented_plan(cfg(kColumns), user_target(*n2, DType::f32, Problem::columns), columns);
  CHECK(p.post);
  CHECK(p.post_bytes == 0);
  // bf16 elements, float accumulators, bf16 results: accumulators in the workspace, rounded once.
  CHECK(why(kSegments, user_target(*u, DType::bf16, Problem::segments)) == "");
  const SegmentedPlan h = segmented_plan(cfg(kSegments), user_target(*u, DType::bf16, Problem::segments), segments);
  CHECK(h.post);
  CHECK(h.post_bytes == segments.count * 4);
  const std::string src = render(cfg(kSegments), DType::bf16, *u);
  CHECK_THAT(src, Catch::Contains("#define RT_POST_PASS 1"));
  CHECK_THAT(render(cfg(kRows), DType::f32, *u), !Catch::Contains("#define RT_POST_PASS 1"));
  // A map that reads the index `i`: the merge and flat mappings, which stream elements across
  // segments without it, are refused; the others finish atomically.
  Reduction indexed = sumsq();
  indexed.map = "x * float(i)";
  indexed.inputs = {DType::f32};
  const auto ix = make_user_op(indexed);
  REQUIRE(ix->reads_index());
  CHECK(why("segments_merge.b256.u4.g4.atomic", user_target(*u, DType::f32, Problem::segments)) == "");
  CHECK_THAT(why("segments_merge.b256.u4.g4.atomic", user_target(*ix, DType::f32, Problem::segments)),
             Catch::Contains("index"));
  CHECK_THAT(why(kSegments, user_target(*ix, DType::f32, Problem::segments)), Catch::Contains("index"));
  CHECK(why(kRows, user_target(*ix, DType::f32, Problem::rows)) == "");
  // Not additive: no atomic finish on any problem.
  const auto product = make_user_op(sumsq("a * b", "1"));
  CHECK_THAT(why(kRows, user_target(*product, DType::f32, Problem::rows)), Catch::Contains("not a + b"));
  CHECK_FALSE(atomic_post_pass(*product, DType::f32, Problem::rows));
}

TEST_CASE("additive: float accumulators are not deterministic with an atomic finish, whatever the elements",
          "[user][additive]") {
  Reduction r = sumsq();
  r.accumulator = "float";
  r.inputs = {DType::i32};
  r.result = DType::f32;
  const auto f = make_user_op(r);
  CHECK_FALSE(deterministic(cfg(kAtomic), user_target(*f, DType::i32)));
  CHECK(deterministic(cfg("streaming.b256.u4.v4.g0.shfl.lastblock"), user_target(*f, DType::i32)));
  const auto i = make_user_op(sumsq());
  CHECK(deterministic(cfg(kAtomic), user_target(*i, DType::i32)));
  CHECK_FALSE(deterministic(cfg(kAtomic), user_target(*i, DType::f32)));
}

TEST_CASE("additive: a related op with a scalar accumulator, whose rows may finish atomically", "[user][additive]") {
  Reduction r = sumsq();
  CHECK(related_op(*make_user_op(r), DType::f32) == Op::sum);
  CHECK(related_op(*make_user_op(r), DType::f64) == Op::sum);
  r.accumulator = "double";
  r.result = DType::f64;
  // 8 bytes for float32 elements: count_nonzero's int64 sum, not logsumexp's struct.
  CHECK(related_op(*make_user_op(r), DType::f32) == Op::count_nonzero);
  // A product of 8 bytes keeps the first op of that size.
  Reduction p = sumsq("a * b", "1");
  p.accumulator = "double";
  p.result = DType::f64;
  CHECK(related_op(*make_user_op(p), DType::f32) == Op::logsumexp);
}

TEST_CASE("additive: tune --reduction sweeps the atomic finishes of an additive reduction", "[user][additive][tune]") {
  SweepOptions o;
  o.problem = Problem::array;
  o.dtypes = {DType::f32};
  o.ops = {Op::sum};
  o.user = make_user_op(sumsq());
  // The default space: its atomic (data-sized grids) and first-block (grid-stride) points are
  // valid, so the sweep measures them.
  std::size_t atomic = 0, first = 0;
  for (const Config& c : selected_configs(o))
    if (!invalid_reason(c, user_target(*o.user, DType::f32))) {
      atomic += c.finish == Finish::atomic;
      first += c.finish == Finish::firstblock;
    }
  CHECK(atomic > 0);
  CHECK(first > 0);
  // --keys of those finishes run for it; for a product they are refused before the GPU, with why.
  o.keys = {kAtomic, kFirst};
  CHECK_FALSE(refused_key(o, 90, 1024, 132));
  o.user = make_user_op(sumsq("a * b", "1"));
  CHECK_THAT(refused_key(o, 90, 1024, 132).value_or(""), Catch::Contains("not a + b"));
}

// NVRTC needs no GPU. PTX (compute_90) shows the atomic: red/atom.global.add, no atom.global.cas.
TEST_CASE("additive: the atomic-finish kernels compile to the hardware's atomic add", "[user][additive][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.parse_target("compute_90"));
  struct Case {
    DType dtype;
    Reduction r;
    std::vector<const char*> add; // the PTX atomic (one of)
  };
  Reduction half = sumsq();
  half.accumulator = "float";
  half.result = DType::f32;
  const std::vector<Case> cases = {{DType::f32, sumsq(), {"global.add.f32"}},
                                   {DType::f64, sumsq(), {"global.add.f64"}},
                                   {DType::i32, sumsq(), {"global.add.s32", "global.add.u32"}},
                                   {DType::i64, sumsq(), {"global.add.u64", "global.add.s64"}},
                                   {DType::bf16, half, {"global.add.f32"}}};
  std::vector<CompileJob> jobs;
  std::vector<std::vector<const char*>> want;
  for (const Case& k : cases) {
    const auto u = make_user_op(k.r);
    for (const char* key : {kAtomic, kFirst, "atomic_shared.b256.atomic"}) {
      const Config c = cfg(key);
      INFO(key << " " << name(k.dtype));
      REQUIRE_FALSE(invalid_reason(c, user_target(*u, k.dtype)));
      jobs.push_back({c, k.dtype, Op::sum, false, u});
      want.push_back(k.add);
    }
  }
  const auto outcomes = compile_all(loader, jobs, 0);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(key(jobs[i].config) << " " << name(jobs[i].dtype) << ": " << outcomes[i].error);
    REQUIRE(outcomes[i].error.empty());
    const std::string& ptx = outcomes[i].compiled.image;
    bool adds = false;
    for (const char* a : want[i]) adds = adds || ptx.find(a) != std::string::npos;
    CHECK(adds);
    CHECK_THAT(ptx, !Catch::Contains(".cas.b")); // no compare-and-swap loop
  }
}
