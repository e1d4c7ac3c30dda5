// The variant catalogue: coverage of the material, validity rules, launch plans, rendering, and
// that every valid configuration compiles (NVRTC needs no GPU).
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/runner.h"
#include "tuner/material.h"
#include "tuner/test_variants.h"

#include <cstdlib>
#include <fstream>
#include <set>

#include <unistd.h>

using namespace reduce_tune;

namespace {
Target sm(int cc, DType d = DType::f32, Op op = Op::sum) { return Target{d, op, cc, 1024, 132, false}; }
Config cfg(const char* k) {
  auto c = parse_key(k);
  REQUIRE(c);
  return *c;
}
} // namespace

TEST_CASE("the catalogue holds every kernel family of the material", "[catalogue]") {
  for (const char* v : {"neighbored_gmem", "neighbored", "neighbored_less", "interleaved", "unrolling",
                        "unroll_warps", "complete_unroll", "complete_unroll_template", "atomic_global",
                        "atomic_shared", "multi_seq", "vectorized", "streaming"})
    CHECK(find_variant(v));
}

TEST_CASE("every material kernel maps to a valid configuration on its own GPUs", "[catalogue]") {
  std::set<std::string> names;
  for (const MaterialKernel& k : material_kernels()) {
    INFO(k.doc << " " << k.name << " " << k.key);
    std::string why;
    auto c = parse_key(k.key, &why);
    REQUIRE(c);
    // The material ran on Kepler..Turing; sm_35 admits every tail it used.
    const DType d = k.doc.starts_with("004") ? DType::f32 : DType::i32;
    CHECK_FALSE(invalid_reason(*c, sm(35, d)));
    names.insert(std::string(k.name));
  }
  for (const char* n : {"reduceNeighbored", "reduceNeighboredLess", "reduceInterleaved", "reduceUnrolling2",
                        "reduceUnrolling4", "reduceUnrolling8", "reduceUnrollWarps8",
                        "reduceCompleteUnrollWarps8", "reduceCompleteUnroll", "reduceNeighboredGmem_1",
                        "reduceCompleteUnrolling8Template_8", "atomic global", "atomic shared", "reduction",
                        "anti divergence", "anti conflicts", "dual load", "unrolled last", "unrolled all",
                        "shuffle", "multi seq"})
    CHECK(names.count(n));
}

TEST_CASE("validity rules give a reason for each invalid point", "[catalogue]") {
  auto reason = [](const char* k, Target t) { return invalid_reason(cfg(k), t).value_or(""); };
  CHECK_THAT(reason("unroll_warps.b512.u8.volatile.host", sm(90)), Catch::Contains("independent thread scheduling"));
  CHECK(reason("unroll_warps.b512.u8.volatile.host", sm(61)).empty());
  Target study = sm(90);
  study.allow_unsafe = true;
  CHECK(reason("unroll_warps.b512.u8.volatile.host", study).empty());
  CHECK_THAT(reason("unroll_warps.b32.u8.shfl.host", sm(90)), Catch::Contains("at least 64"));
  CHECK_THAT(reason("unroll_warps.b512.u8.redux.host", sm(90)), Catch::Contains("32-bit integers"));
  CHECK_THAT(reason("unroll_warps.b512.u8.redux.host", sm(75, DType::i32)), Catch::Contains("sm_80"));
  CHECK(reason("unroll_warps.b512.u8.redux.host", sm(90, DType::i32)).empty());
  CHECK_THAT(reason("unrolling.b512.u2.atomic", sm(50, DType::f64)), Catch::Contains("sm_60"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.lastblock", sm(90, DType::f64)), Catch::Contains("16-byte"));
  Target small = sm(90);
  small.max_block = 512;
  CHECK_THAT(reason("interleaved.b1024.host", small), Catch::Contains("device limit"));
  Config c = cfg("unrolling.b256.u2.host");
  c.unroll = 3;
  CHECK_THAT(invalid_reason(c, sm(90)).value_or(""), Catch::Contains("unroll 3"));
  c.unroll = 2, c.block = 48;
  CHECK_THAT(invalid_reason(c, sm(90)).value_or(""), Catch::Contains("not a power of two"));
  CHECK_THAT(reason("atomic_global.b256.atomic", sm(90)), Catch::Equals(""));
  Config host_atomic = cfg("atomic_global.b256.atomic");
  host_atomic.finish = Finish::host;
  CHECK_THAT(invalid_reason(host_atomic, sm(90)).value_or(""), Catch::Contains("not available"));
}

TEST_CASE("launch plans cover every element with at least one block", "[catalogue]") {
  const Target t = sm(90);
  for (const Variant& v : variants())
    for (const Config& c : space(v)) {
      if (invalid_reason(c, t)) continue;
      for (std::uint64_t n : {1ull, 33ull, 1ull << 24, 3ull << 32}) {
        const LaunchPlan p = plan(c, t, n);
        INFO(key(c) << " n=" << n);
        REQUIRE(p.grid >= 1);
        CHECK(p.block == unsigned(c.block));
        const std::uint64_t per_block = std::uint64_t(c.block) * c.unroll * c.vec;
        const bool stride = c.variant == "multi_seq" || ((v.params & P_VEC) && c.grid > 0);
        if (!stride) CHECK(std::uint64_t(p.grid) * per_block >= n);
        CHECK(summation_depth(c, t, n) >= 1);
      }
    }
  CHECK(plan(cfg("unrolling.b512.u8.host"), t, 1 << 24).grid == 4096);
  CHECK(plan(cfg("multi_seq.b256.g8.shfl.atomic"), t, 1 << 28).grid == 8 * 132);
  CHECK(plan(cfg("neighbored_gmem.b512.host"), t, 100).scratch);
  CHECK(plan(cfg("vectorized.b256.u4.v4.g0.shfl.lastblock"), t, 100).counter);
}

TEST_CASE("rendering leaves out what the template does not use", "[catalogue]") {
  CHECK(render(cfg("neighbored.b128.host"), DType::f32, Op::sum) ==
        render(cfg("neighbored.b512.host"), DType::f32, Op::sum));
  CHECK(render(cfg("complete_unroll_template.b128.u2.shfl.host"), DType::f32, Op::sum) !=
        render(cfg("complete_unroll_template.b256.u2.shfl.host"), DType::f32, Op::sum));
  const std::string s = render(cfg("unrolling.b256.u4.atomic"), DType::i64, Op::max);
  CHECK_THAT(s, Catch::Contains("typedef long long T;") && Catch::Contains("// op: max") &&
                    Catch::Contains("#define RT_UNROLL 4") && Catch::Contains("#define RT_FINISH_ATOMIC 1"));
  CHECK(deterministic(cfg("unrolling.b256.u4.atomic"), DType::i32));
  CHECK_FALSE(deterministic(cfg("unrolling.b256.u4.atomic"), DType::f32));
  CHECK(deterministic(cfg("vectorized.b256.u4.v4.g0.shfl.lastblock"), DType::f32));
}

TEST_CASE("a registered variant is found and rendered, never listed", "[catalogue]") {
  static constexpr int kU1[] = {1};
  static constexpr Tail kNone[] = {Tail::none};
  static constexpr Finish kHost[] = {Finish::host};
  static const ExtraVariant kProbe[] = {
      {{"probe_registered", "a registered variant", P_BLOCK | P_FINISH, kU1, kNone, kHost, false,
        false, 64},
       "// the probe's own template text\n"}};
  CHECK_FALSE(find_variant("probe_registered"));
  register_variants(kProbe);
  const Variant* v = find_variant("probe_registered");
  REQUIRE(v == &kProbe[0].variant);
  for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
    for (const Variant& listed : variants(p)) CHECK(listed.name != "probe_registered");
  const std::string s = render(cfg("probe_registered.b64.host"), DType::f32, Op::sum);
  CHECK_THAT(s, Catch::Contains("// the probe's own template text") && Catch::Contains("rt_identity"));
  CHECK_FALSE(invalid_reason(cfg("probe_registered.b64.host"), sm(90)));
  // Swept at its smallest block only.
  const std::vector<Config> points = space(*v);
  REQUIRE(points.size() == 1);
  CHECK(points[0].block == 64);
}

TEST_CASE("the test-only variants are the tuner's, registered with REDUCE_TUNE_TEST_VARIANTS=1",
          "[catalogue]") {
  ::unsetenv("REDUCE_TUNE_TEST_VARIANTS");
  CHECK_FALSE(register_test_variants_from_env());
  CHECK_FALSE(find_variant("test_fault"));
  CHECK_FALSE(find_variant("test_hang"));
  ::setenv("REDUCE_TUNE_TEST_VARIANTS", "1", 1);
  const bool registered = register_test_variants_from_env();
  ::unsetenv("REDUCE_TUNE_TEST_VARIANTS");
  REQUIRE(registered);
  CHECK(register_test_variants_from_env()); // once registered, for the life of the process
  CHECK_THAT(render(cfg("test_fault.b32.atomic"), DType::i32, Op::sum), Catch::Contains("0xdead0000"));
  CHECK_THAT(render(cfg("test_hang.b32.lastblock"), DType::i32, Op::sum), Catch::Contains("0xfffffff0u"));
  for (const Variant& listed : variants(Problem::array)) CHECK_FALSE(listed.name.starts_with("test_"));
}

TEST_CASE("streaming is the vectorized template with evict-first loads", "[catalogue]") {
  const std::string vec = render(cfg("vectorized.b256.u4.v4.g0.shfl.atomic"), DType::f32, Op::sum);
  const std::string str = render(cfg("streaming.b256.u4.v4.g0.shfl.atomic"), DType::f32, Op::sum);
  CHECK_THAT(str, Catch::Contains("#define RT_EVICT_FIRST 1") && Catch::Contains("__ldcs"));
  CHECK_THAT(vec, !Catch::Contains("#define RT_EVICT_FIRST"));
  // Apart from the first line (the variant's name) and the macro, the sources are the same.
  auto body = [](const std::string& s) { return s.substr(s.find('\n')); };
  std::string without = body(str);
  without.erase(without.find("#define RT_EVICT_FIRST 1\n"), std::string("#define RT_EVICT_FIRST 1\n").size());
  CHECK(without == body(vec));
}

TEST_CASE("every valid configuration compiles with NVRTC for sm_75 and sm_90", "[catalogue][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  for (int cc : {75, 90}) {
    KernelLoader loader(nvrtc, none, nvrtc.target_for(cc));
    std::vector<CompileJob> jobs;
    for (DType d : {DType::i32, DType::f32})
      for (const Variant& v : variants())
        for (const Config& c : space(v))
          if (!invalid_reason(c, sm(cc, d))) jobs.push_back({c, d, Op::sum});
    const auto outcomes = compile_all(loader, jobs, 0);
    std::size_t failed = 0;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (!outcomes[i].error.empty()) {
        ++failed;
        FAIL_CHECK(key(jobs[i].config) << " " << name(jobs[i].dtype) << " sm_" << cc << ": " << outcomes[i].error);
      }
    CHECK(failed == 0);
    CHECK(jobs.size() > 500);
    // ptxas reports resources for cubin targets.
    CHECK(outcomes.front().compiled.resources.registers > 0);
  }
}

TEST_CASE("the first-block finish: an atomic finish with no init, for the vector variants",
          "[catalogue]") {
  auto reason = [](const char* k, Target t) { return invalid_reason(cfg(k), t).value_or(""); };
  const Target t = sm(90);
  const LaunchPlan p = plan(cfg("vectorized.b256.u4.v4.g8.shfl.firstblock"), t, 1 << 20);
  CHECK_FALSE(p.init_out); // the kernel sets the result itself
  CHECK(p.counter);        // from its state in the workspace
  CHECK_FALSE(p.partials);
  CHECK(plan(cfg("vectorized.b256.u4.v4.g8.shfl.atomic"), t, 1 << 20).init_out);
  CHECK(deterministic(cfg("streaming.b256.u4.v4.g8.redux.firstblock"), DType::i32));
  CHECK_FALSE(deterministic(cfg("streaming.b256.u4.v4.g8.shfl.firstblock"), DType::f32));
  CHECK(reason("streaming.b256.u4.v2.g4.shfl.firstblock", sm(90, DType::f64)).empty());
  CHECK_THAT(reason("unroll_warps.b256.u8.shfl.firstblock", t), Catch::Contains("not available"));
  CHECK_THAT(reason("vectorized.b256.u4.v2.g4.shfl.firstblock", sm(50, DType::f64)),
             Catch::Contains("sm_60"));
  CHECK_THAT(render(cfg("vectorized.b256.u4.v4.g8.shfl.firstblock"), DType::f32, Op::sum),
             Catch::Contains("#define RT_FINISH_FIRSTBLOCK 1"));
  // The sweep: the memset's atomic finish with data-sized grids (many blocks at large n), the
  // first-block finish with grid-stride ones (at most 8 blocks per SM).
  for (const char* name : {"vectorized", "streaming"}) {
    int first = 0, atomic = 0;
    for (const Config& c : space(*find_variant(name))) {
      INFO(key(c));
      if (c.finish == Finish::firstblock) {
        CHECK(c.grid > 0);
        ++first;
      }
      if (c.finish == Finish::atomic) {
        CHECK(c.grid == 0);
        ++atomic;
      }
    }
    CHECK(first > 0);
    CHECK(first == 2 * atomic); // two grid-stride sizes for one data-sized
  }
}

TEST_CASE("a two-pass finish over one block has no second pass", "[catalogue]") {
  // The one block writes the result itself (templates/common.cuh, rt_finish_block).
  const Config two = cfg("vectorized.b256.u4.v4.g0.shfl.twopass");
  CHECK_FALSE(plan(two, sm(90), 1000).second_pass);
  CHECK(plan(two, sm(90), 1 << 20).second_pass);
  CHECK(plan(two, sm(90), 1 << 20).partials);
}

TEST_CASE("the programmatic-launch wait is compiled in exactly for the targets whose second pass "
          "the host launches programmatically (sm_90+)", "[catalogue][nvrtc]") {
  // kernels/runner.cpp launches the two-pass finish's second kernel programmatically when the
  // compile target is sm_90 or later; that kernel must then wait for the reduction.
  Nvrtc nvrtc;
  CHECK(nvrtc.parse_target("sm_90").number() == 90);
  CHECK(nvrtc.parse_target("compute_80").number() == 80);
  for (const char* arch : {"compute_80", "compute_90"}) {
    const std::string ptx = nvrtc.compile(render(cfg("vectorized.b256.u4.v4.g0.shfl.twopass"),
                                                 DType::f32, Op::sum),
                                          "k.cu", nvrtc.parse_target(arch))
                                .image;
    INFO(arch);
    const bool pdl = nvrtc.parse_target(arch).number() >= 90;
    CHECK((ptx.find("griddepcontrol.wait") != std::string::npos) == pdl);
    CHECK((ptx.find("griddepcontrol.launch_dependents") != std::string::npos) == pdl);
  }
}

TEST_CASE("NVRTC target selection", "[catalogue][nvrtc]") {
  Nvrtc nvrtc;
  CHECK(nvrtc.target_for(90).arch == "sm_90");
  CHECK(nvrtc.target_for(90).cubin);
  if (nvrtc.major() >= 13) {
    CHECK_THROWS_WITH(nvrtc.target_for(35), Catch::Contains("CUDA 11"));
    CHECK_THROWS_WITH(nvrtc.parse_target("sm_35"), Catch::Contains("does not target sm_35"));
  }
  CHECK_THROWS_WITH(nvrtc.parse_target("banana"), Catch::Contains("not an architecture"));
  CHECK(nvrtc.parse_target("compute_90").cubin == false);
}

TEST_CASE("a compile error carries the full log and the options", "[catalogue][nvrtc]") {
  Nvrtc nvrtc;
  try {
    nvrtc.compile("__global__ void k() { this is not cuda; }", "bad.cu", nvrtc.target_for(90));
    FAIL("compiled invalid source");
  } catch (const CompileError& e) {
    CHECK_THAT(e.log(), Catch::Contains("error"));
    CHECK_THAT(e.options(), Catch::Contains("--gpu-architecture=sm_90"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("bad.cu"));
  }
}

TEST_CASE("the compile cache returns what it stored and survives a corrupt file", "[catalogue][nvrtc]") {
  const auto dir = std::filesystem::temp_directory_path() / ("rt_cache_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Nvrtc nvrtc;
  CompileCache cache(dir);
  const std::string src = render(cfg("interleaved.b256.host"), DType::f32, Op::sum);
  const Compiled first = cache.get(nvrtc, src, nvrtc.target_for(90));
  CHECK_FALSE(first.from_cache);
  const Compiled second = cache.get(nvrtc, src, nvrtc.target_for(90));
  CHECK(second.from_cache);
  CHECK(second.image == first.image);
  CHECK(second.resources.registers == first.resources.registers);
  CHECK(cache.hits() == 1);
  for (const auto& f : std::filesystem::directory_iterator(dir)) std::ofstream(f.path()) << "garbage";
  const Compiled third = cache.get(nvrtc, src, nvrtc.target_for(90));
  CHECK_FALSE(third.from_cache);
  CHECK(third.image == first.image);
  std::filesystem::remove_all(dir);
}
