// Tests of user reductions (reduce_tune/reduction.h, kernels/user_op.h): the canonical text and its
// stable hash, the checks of a description, the rendered source, the catalogue's rules for them,
// and, with NVRTC (no GPU needed), a description that does not compile and a sum of squares
// compiled through every variant the rules admit.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "runtime/lookup.h"
#include "tests/code_paths.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"

#include <set>
#include <sstream>

using namespace reduce_tune;
using reduce_tune::testing::user_target;
using reduce_tune::testing::sum_of_squares;
using reduce_tune::testing::log_sum_exp;

namespace {

// A product: commutative, not additive (kernels/additive.h).
Reduction product() {
  Reduction r;
  r.map = "x";
  r.combine = "a * b";
  r.identity = "1";
  r.post = "a";
  return r;
}

// The first non-zero element: associative, not commutative.
Reduction first_nonzero() {
  Reduction r;
  r.map = "x";
  r.combine = "a != 0 ? a : b";
  r.identity = "0";
  r.commutative = false;
  return r;
}

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

} // namespace

TEST_CASE("user ops: the hash is stable and covers exactly the description", "[user]") {
  const Reduction r = sum_of_squares();
  // Pinned: stores key tuning by this name, across builds and processes.
  CHECK(r.name() == "user:69f2b7ac46dfbd88");
  CHECK(r.hash() == 0x69f2b7ac46dfbd88ull);
  // White space around a field, the order of the inputs and the CPU check are not the description.
  Reduction same = r;
  same.map = "  x * x\n";
  same.check = [](const double*, std::size_t) { return 0.0; };
  CHECK(same.hash() == r.hash());
  Reduction a = r, b = r;
  a.inputs = {DType::f64, DType::f32};
  b.inputs = {DType::f32, DType::f64, DType::f32};
  CHECK(a.hash() == b.hash());
  CHECK(a.hash() != r.hash());
  // Every field that reaches the kernels changes it.
  std::set<std::uint64_t> hashes{r.hash()};
  const auto changed = [&](auto&& edit) {
    Reduction c = r;
    edit(c);
    return hashes.insert(c.hash()).second;
  };
  CHECK(changed([](Reduction& c) { c.map = "x * x * x"; }));
  CHECK(changed([](Reduction& c) { c.combine = "b + a"; }));
  CHECK(changed([](Reduction& c) { c.identity = "0.f"; }));
  CHECK(changed([](Reduction& c) { c.post = "sqrt(a)"; }));
  CHECK(changed([](Reduction& c) { c.accumulator = "double"; }));
  CHECK(changed([](Reduction& c) { c.accumulator_bytes = 4; }));
  CHECK(changed([](Reduction& c) { c.preamble = "// helpers"; }));
  CHECK(changed([](Reduction& c) { c.result = DType::f64; }));
  CHECK(changed([](Reduction& c) { c.commutative = false; }));
  // Length-prefixed fields: moving text between two fields is another description.
  Reduction x = r, y = r;
  x.map = "x";
  x.combine = "*x + a + b";
  y.map = "x*x";
  y.combine = " + a + b";
  CHECK(x.canonical() != y.canonical());
}

TEST_CASE("user ops: the file format gives the same description", "[user]") {
  const Reduction r = parse_reduction("# logsumexp\n"
                                      "preamble <<END\n"
                                      "struct lse { float m; float s; };\n"
                                      "__device__ lse lse_merge(lse a, lse b) {\n"
                                      "  const float m = fmaxf(a.m, b.m);\n"
                                      "  if (m == -INFINITY) return a;\n"
                                      "  return lse{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};\n"
                                      "}\n"
                                      "END\n"
                                      "\n"
                                      "accumulator = lse\n"
                                      "accumulator_bytes = 8\n"
                                      "identity = {-INFINITY, 0.f}\n"
                                      "map = lse{float(x), 1.f}\n"
                                      "combine = lse_merge(a, b)\n"
                                      "post = a.m + logf(a.s)\n"
                                      "inputs = bfloat16, float32\n");
  CHECK(r.name() == log_sum_exp().name());
  const Reduction o = parse_reduction("combine = a != 0 ? a : b\nidentity = 0\ncommutative = false\n");
  CHECK(o.name() == first_nonzero().name());
  CHECK(parse_reduction("result = float64").result == DType::f64);
  CHECK_THROWS_WITH(parse_reduction("map = x\nmapp = x"), Catch::Contains("line 2") && Catch::Contains("unknown key"));
  CHECK_THROWS_WITH(parse_reduction("map = x\nmap = x * x"), Catch::Contains("given twice"));
  CHECK_THROWS_WITH(parse_reduction("preamble <<END\nint f();\n"), Catch::Contains("END"));
  CHECK_THROWS_WITH(parse_reduction("inputs = float32, float128"), Catch::Contains("float128"));
  CHECK_THROWS_WITH(parse_reduction("commutative = yes"), Catch::Contains("true or false"));
  CHECK_THROWS_WITH(parse_reduction("accumulator_bytes = 8x"), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(parse_reduction("x * x"), Catch::Contains("key = value"));
}

TEST_CASE("user ops: descriptions out of place are refused, naming the field", "[user]") {
  Reduction r = sum_of_squares();
  r.post = "  ";
  CHECK_THROWS_WITH(make_user_op(r), Catch::Contains("post is empty"));
  r = log_sum_exp();
  r.accumulator_bytes = 0;
  CHECK_THROWS_WITH(make_user_op(r), Catch::Contains("accumulator_bytes"));
  r.accumulator_bytes = 6;
  CHECK_THROWS_WITH(make_user_op(r), Catch::Contains("multiple of 4"));
  r.accumulator_bytes = 8;
  const auto u = make_user_op(r);
  CHECK(u->compound);
  CHECK(u->accumulator_bytes(DType::f32) == 8);
  CHECK_THROWS_AS(u->result_dtype(DType::f64), ReductionError); // inputs: float32, bfloat16
  CHECK(u->unsupported(DType::i32).has_value());
  CHECK_FALSE(u->unsupported(DType::bf16).has_value());
  r = sum_of_squares();
  r.inputs = {DType::u8};
  CHECK_THROWS_WITH(make_user_op(r), Catch::Contains("uint8"));
  r.inputs = {};
  r.result = DType::bf16; // a bf16 result of float32 elements
  CHECK_THROWS_AS(r.result_dtype(DType::f32), ReductionError);
  CHECK(r.result_dtype(DType::bf16) == DType::bf16);
  r.result = DType::f64;
  CHECK(r.result_dtype(DType::i32) == DType::f64);
  // The default accumulator is the element's wide type.
  const auto plain = make_user_op(sum_of_squares());
  CHECK_FALSE(plain->compound);
  CHECK(plain->accumulator_bytes(DType::bf16) == 4);
  CHECK(plain->accumulator_bytes(DType::f64) == 8);
  CHECK(plain->result_dtype(DType::i64) == DType::i64);
}

TEST_CASE("user ops: the source is the op's pieces, each field under a #line of its own", "[user]") {
  const auto u = make_user_op(log_sum_exp());
  const std::string op = u->source(DType::bf16);
  CHECK(op.find("typedef lse A;") != std::string::npos);
  CHECK(op.find("typedef T R;") != std::string::npos);                  // bf16 elements, bf16 result
  CHECK(op.find("return rt_narrow(rt_v);") != std::string::npos);       // rounded once
  CHECK(op.find("static_assert(sizeof(A) == 8") != std::string::npos);
  CHECK(op.find("#define RT_ATOMIC") == std::string::npos);             // no atomic path
  CHECK(op.find("#define RT_REDUX") == std::string::npos);
  for (const char* field : {"preamble", "identity", "map", "combine", "post"})
    CHECK(op.find("#line 1 \"" + std::string(field) + "\"") != std::string::npos);
  // In a rendered kernel the markers become #line directives that give the generated source its
  // own line numbers back: the line after each is the line it names.
  Config c;
  c.variant = "rows_group";
  c.width = 4;
  c.tail = Tail::shfl;
  c.finish = Finish::direct;
  const std::string s = render(c, DType::bf16, *u);
  CHECK(s.find(kUserLineMarker) == std::string::npos);
  std::istringstream lines(s);
  std::string line;
  int physical = 0, restored = 0;
  std::optional<int> expect;
  while (std::getline(lines, line)) {
    ++physical;
    if (expect) {
      CHECK(*expect == physical);
      expect.reset();
      ++restored;
    }
    if (line.starts_with("#line ") && line.ends_with("\"reduce_tune.cu\"")) expect = std::stoi(line.substr(6));
  }
  CHECK(restored == 5);
  CHECK(count_of(s, "\"reduce_tune.cu\"") == 5);
}

TEST_CASE("user ops: a combine that is not additive has no atomic, host, in-place or redux path", "[user]") {
  const auto u = make_user_op(product());
  REQUIRE_FALSE(u->additive());
  const Target t = user_target(*u, DType::i32, Problem::array);
  std::size_t valid = 0;
  for (const Variant& v : variants(Problem::array))
    for (const Config& c : space(v)) {
      const auto why = invalid_reason(c, t);
      if (!why) ++valid;
      if (c.finish == Finish::atomic || c.finish == Finish::firstblock) CHECK(why.has_value());
      if (c.finish == Finish::host) CHECK(why.has_value());
      if (c.tail == Tail::redux) CHECK(why.has_value());
      if (v.in_place) CHECK(why.has_value());
    }
  CHECK(valid > 0);
  // A built-in sum of the same dtype has every one of those.
  Target sum = t;
  sum.user = nullptr;
  Config host{"unroll_warps", 256, 4, 1, 0, Tail::redux, Finish::host};
  CHECK_FALSE(invalid_reason(host, sum));
  CHECK(invalid_reason(host, t));
  // The accumulator's size sets the shared memory of a launch.
  const auto lse = make_user_op(log_sum_exp());
  const Config vec{"vectorized", 256, 4, 4, 0, Tail::shfl, Finish::lastblock};
  REQUIRE_FALSE(invalid_reason(vec, user_target(*lse, DType::f32, Problem::array)));
  CHECK(plan(vec, user_target(*lse, DType::f32, Problem::array), 1 << 20).smem_bytes == 256 * 8);
  CHECK(plan(vec, t, 1 << 20).smem_bytes == 256 * 4);
}

TEST_CASE("user ops: a non-commutative combine keeps the mappings that keep the order", "[user]") {
  const auto u = make_user_op(first_nonzero());
  REQUIRE(u->ordered());
  REQUIRE_FALSE(u->reads_index()); // its map does not read `i`: the flat mapping takes it
  for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments}) {
    std::vector<std::string> admitted;
    for (const Variant& v : variants(p))
      for (const Config& c : space(v))
        if (!invalid_reason(c, user_target(*u, DType::f32, p))) admitted.push_back(key(c));
    if (p == Problem::array) {
      CHECK(admitted.empty());
      continue;
    }
    REQUIRE_FALSE(admitted.empty());
    bool flat = false;
    for (const std::string& k : admitted) {
      INFO(k);
      const Config c = *parse_key(k);
      // Columns: rendered in row order (RT_ORDERED), finished directly or by an ordered finish
      // (the post pass's or the last block's).
      if (p == Problem::columns) {
        CHECK((c.finish == Finish::direct || c.finish == Finish::twopass || c.finish == Finish::lastblock));
        continue;
      }
      // Offsets: the flat mapping with the carry and the ordered finish.
      if (c.variant.starts_with("segments_flat_carry")) {
        CHECK(c.finish == Finish::twopass);
        flat = true;
        continue;
      }
      CHECK(c.width == 1);
      CHECK(c.unroll == 1);
      CHECK(c.vec == 1);
    }
    CHECK(flat == (p == Problem::segments));
  }
  const Config ordered_split{"columns_split", 256, 2, 4, 4, Tail::shfl, Finish::twopass};
  CHECK_FALSE(invalid_reason(ordered_split, user_target(*u, DType::f32, Problem::columns)));
  Config atomic_split = ordered_split;
  atomic_split.finish = Finish::atomic;
  CHECK(invalid_reason(atomic_split, user_target(*u, DType::f32, Problem::columns)));
  CHECK_THAT(render(ordered_split, DType::f32, *u), Catch::Contains("#define RT_ORDERED 1"));
  // A map that reads the index: the flat mapping does not track it in the segment.
  Reduction indexed = first_nonzero();
  indexed.map = "i == 0 ? x : x";
  const auto v = make_user_op(indexed);
  REQUIRE(v->ordered());
  REQUIRE(v->reads_index());
  const Config flat{"segments_flat_carry", 128, 4, 4, 8, Tail::shfl, Finish::twopass};
  CHECK_FALSE(invalid_reason(flat, user_target(*u, DType::f32, Problem::segments)));
  CHECK_THAT(invalid_reason(flat, user_target(*v, DType::f32, Problem::segments)).value_or(""),
             Catch::Contains("index"));
  Config flat_atomic = flat;
  flat_atomic.finish = Finish::atomic;
  CHECK(invalid_reason(flat_atomic, user_target(*u, DType::f32, Problem::segments)));
  CHECK_THAT(render(flat, DType::f32, *u), !Catch::Contains("#define RT_MAP_INDEXED 1"));
  CHECK_THAT(render(flat, DType::f32, *v), Catch::Contains("#define RT_MAP_INDEXED 1"));
  // The same description declared commutative takes the wider mappings.
  Reduction r = first_nonzero();
  r.commutative = true;
  const auto free = make_user_op(r);
  Config w8{"rows_group", 256, 1, 4, 0, Tail::shfl, Finish::direct, 8};
  CHECK_FALSE(invalid_reason(w8, user_target(*free, DType::f32, Problem::rows)));
  CHECK_THAT(invalid_reason(w8, user_target(*u, DType::f32, Problem::rows)).value_or(""),
             Catch::Contains("not commutative"));
}

TEST_CASE("user ops: the lookup takes the rows a user reduction's rules admit", "[user][lookup]") {
  // float32 sum rows on one GPU, fastest first: a float atomic finish, a host finish, then one
  // a user reduction may use.
  db::Store store(":memory:");
  db::DeviceRecord d;
  d.uuid = "GPU-u", d.name = "H100", d.cc_major = 9, d.cc_minor = 0, d.sm_count = 132;
  store.upsert_device(d);
  db::RunRecord run;
  run.device_uuid = d.uuid, run.tool_version = "test", run.nvrtc_version = "13.0";
  const auto id = store.begin_run(run);
  using reduce_tune::testing::stored_row;
  store.add_measurements(id, {stored_row("atomic_shared.b256.atomic", DType::f32, Op::sum, 5.0),
                              stored_row("unrolling.b512.u8.host", DType::f32, Op::sum, 6.0),
                              stored_row("vectorized.b256.u4.v4.g0.shfl.lastblock", DType::f32, Op::sum, 7.0)});
  store.end_run(id, "done");
  DeviceKey dev;
  dev.uuid = d.uuid, dev.name = d.name, dev.cc_major = 9, dev.sm_count = 132;
  const Shape shape{1, std::uint64_t(1) << 20};
  // The built-in sum takes the fastest.
  CHECK(key(lookup(store, dev, DType::f32, Op::sum, Problem::array, shape, {}).config) ==
        "atomic_shared.b256.atomic");
  // A user reduction with the same 4-byte accumulator that is not additive passes over the atomic
  // and host finishes.
  const auto u = make_user_op(product());
  Requirements req;
  req.user = u.get();
  const Choice c = lookup(store, dev, DType::f32, Op::sum, Problem::array, shape, req);
  CHECK(key(c.config) == "vectorized.b256.u4.v4.g0.shfl.lastblock");
  CHECK_THAT(c.note, Catch::Contains("atomic_shared.b256.atomic"));
  CHECK_THAT(c.note, Catch::Contains("unrolling.b512.u8.host"));
  // An additive one (a + b, identity 0) takes the atomic finish; deterministic calls do not.
  const auto add = make_user_op(sum_of_squares());
  req.user = add.get();
  CHECK(key(lookup(store, dev, DType::f32, Op::sum, Problem::array, shape, req).config) ==
        "atomic_shared.b256.atomic");
  req.deterministic = true;
  CHECK(key(lookup(store, dev, DType::f32, Op::sum, Problem::array, shape, req).config) ==
        "vectorized.b256.u4.v4.g0.shfl.lastblock");
  req.deterministic = false;
  // A non-commutative one has no array variant: whatever the lookup answers is invalid for it,
  // which the Reducer refuses (ReductionError) rather than run.
  const auto o = make_user_op(first_nonzero());
  req.user = o.get();
  const Choice none = lookup(store, dev, DType::f32, Op::sum, Problem::array, shape, req);
  CHECK(none.match == Match::builtin);
  CHECK(invalid_reason(none.config, target_of(dev, DType::f32, Op::sum, Problem::array, req)));
}

// NVRTC needs no GPU.
TEST_CASE("user ops: a description that does not compile throws with NVRTC's log", "[user][nvrtc]") {
  Reduction r = sum_of_squares();
  r.map = "x * y";
  try {
    compile_reduction(r, DType::f32);
    FAIL("compiled a map that names an undefined y");
  } catch (const ReductionError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains(r.name()));
    CHECK_THAT(what, Catch::Contains("map(1)"));  // the field and its line
    CHECK_THAT(what, Catch::Contains("\"y\""));
    CHECK_THAT(e.log(), Catch::Contains("map(1)"));
  }
  // A wrong accumulator_bytes is NVRTC's to find.
  Reduction lse = log_sum_exp();
  lse.accumulator_bytes = 12;
  CHECK_THROWS_WITH(compile_reduction(lse, DType::f32), Catch::Contains("accumulator_bytes"));
  // Good descriptions compile, for each dtype they take.
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64, DType::bf16, DType::f16})
    CHECK_NOTHROW(compile_reduction(sum_of_squares(), d));
  CHECK_NOTHROW(compile_reduction(log_sum_exp(), DType::bf16));
  CHECK_NOTHROW(compile_reduction(first_nonzero(), DType::f32));
}

TEST_CASE("user ops: a sum of squares compiles through every variant it admits", "[user][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  const auto sumsq = make_user_op(sum_of_squares());
  const auto lse = make_user_op(log_sum_exp());
  const auto ordered = make_user_op(first_nonzero());
  std::vector<CompileJob> jobs;
  std::set<std::string> variants_seen;
  for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
    for (const Variant& v : variants(p)) {
      std::set<std::tuple<Tail, Finish>> seen;
      test::CodePaths paths;
      for (const Config& c : space(v)) {
        // float32: every code path it admits (tests/code_paths.h).
        if (!invalid_reason(c, user_target(*sumsq, DType::f32, p)) && paths.first(c)) {
          jobs.push_back({c, DType::f32, Op::sum, false, sumsq});
          variants_seen.insert(c.variant);
        }
        // Other types and accumulators: one point of each variant, tail and finish.
        if (seen.insert({c.tail, c.finish}).second) {
          for (DType d : {DType::i64, DType::bf16})
            if (!invalid_reason(c, user_target(*sumsq, d, p))) jobs.push_back({c, d, Op::sum, false, sumsq});
          if (!invalid_reason(c, user_target(*lse, DType::bf16, p))) jobs.push_back({c, DType::bf16, Op::sum, false, lse});
        }
        if (!invalid_reason(c, user_target(*ordered, DType::f64, p))) jobs.push_back({c, DType::f64, Op::sum, false, ordered});
      }
    }
  const auto outcomes = compile_all(loader, jobs, 0);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i].error.empty()) continue;
    ++failed;
    FAIL_CHECK(key(jobs[i].config) << " " << name(jobs[i].dtype) << " " << jobs[i].user->name << ": "
                                   << outcomes[i].error);
  }
  CHECK(failed == 0);
  // Each problem has variants for it: on the 1-D problem the vector ones (every other variant
  // finishes on the host or atomically), and the segmented mappings.
  for (const char* v : {"vectorized", "streaming", "rows_group", "rows_block", "columns_tile", "segments_group"})
    CHECK(variants_seen.count(v) == 1);
}
