// bf16 and f16 without a GPU: host conversions, test data, the CPU reference and its rounding
// bound, the catalogue's rules for them, and NVRTC compiling every code path for them.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/half.h"
#include "kernels/runner.h"
#include "tests/code_paths.h"
#include "tuner/reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

using namespace reduce_tune;

namespace {

constexpr DType kHalves[] = {DType::bf16, DType::f16};

Target sm(int cc, DType d, Op op = Op::sum) { return Target{d, op, cc, 1024, 132, false}; }
Config cfg(const char* k) {
  auto c = parse_key(k);
  REQUIRE(c);
  return *c;
}

// The usual float -> bf16 rounding on the bit pattern: an independent check of narrow_half for
// values that are floats.
std::uint16_t bf16_of_float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u);
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

bool is_nan_bits(std::uint16_t b, DType d) { return std::isnan(widen_half(b, d)); }

HostArray array_of(DType d, const std::vector<double>& v) {
  HostArray a;
  a.dtype = d;
  a.n = v.size();
  a.bytes.resize(v.size() * 2);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint16_t b = narrow_half(v[i], d);
    std::memcpy(a.bytes.data() + 2 * i, &b, 2);
  }
  return a;
}

} // namespace

TEST_CASE("half: names, sizes and the accumulator", "[half]") {
  CHECK(name(DType::bf16) == "bfloat16");
  CHECK(name(DType::f16) == "float16");
  CHECK(parse_dtype("bfloat16") == DType::bf16);
  CHECK(parse_dtype("float16") == DType::f16);
  for (DType d : kHalves) {
    CHECK(size_of(d) == 2);
    CHECK(is_float(d));
    CHECK(is_half(d));
    CHECK(accumulator_of(d) == DType::f32);
  }
  CHECK_FALSE(is_half(DType::f32));
  CHECK(accumulator_of(DType::f64) == DType::f64);
}

TEST_CASE("half: every bit pattern widens and narrows back to itself", "[half]") {
  for (DType d : kHalves)
    for (std::uint32_t b = 0; b < 0x10000u; ++b) {
      const auto bits = std::uint16_t(b);
      const float f = widen_half(bits, d);
      INFO(name(d) << " 0x" << std::hex << b);
      if (std::isnan(f)) REQUIRE(is_nan_bits(narrow_half(f, d), d));
      else REQUIRE(narrow_half(f, d) == bits);
    }
}

TEST_CASE("half: narrowing rounds to nearest, ties to even, once", "[half]") {
  // bf16: 8 significant bits. 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even 1.
  CHECK(narrow_half(1.0, DType::bf16) == 0x3f80);
  CHECK(narrow_half(1 + std::ldexp(1.0, -8), DType::bf16) == 0x3f80);
  CHECK(narrow_half(1 + 3 * std::ldexp(1.0, -8), DType::bf16) == 0x3f82);
  // Just above the tie rounds up: a double that float would first round to the tie (double
  // rounding) must not come out even.
  CHECK(narrow_half(1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), DType::bf16) == 0x3f81);
  CHECK(narrow_half(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), DType::f16) == 0x3c01);
  // f16: the largest finite is 65504; from 65520 (the tie with 2^16) it overflows.
  CHECK(narrow_half(65504, DType::f16) == 0x7bff);
  CHECK(narrow_half(65519.99, DType::f16) == 0x7bff);
  CHECK(narrow_half(65520, DType::f16) == 0x7c00);
  CHECK(narrow_half(-1e300, DType::bf16) == 0xff80);
  // Subnormals: f16's spacing is 2^-24; 2^-25 is a tie with 0 (even), 3 * 2^-25 one with 2.
  CHECK(narrow_half(std::ldexp(1.0, -24), DType::f16) == 0x0001);
  CHECK(narrow_half(std::ldexp(1.0, -25), DType::f16) == 0x0000);
  CHECK(narrow_half(3 * std::ldexp(1.0, -25), DType::f16) == 0x0002);
  CHECK(narrow_half(-std::ldexp(1.0, -133), DType::bf16) == 0x8001);
  CHECK(narrow_half(-0.0, DType::f16) == 0x8000);
  CHECK(is_nan_bits(narrow_half(std::nan(""), DType::bf16), DType::bf16));
  CHECK(widen_half(0x7c00, DType::f16) == std::numeric_limits<float>::infinity());
  CHECK(widen_half(0x0001, DType::f16) == std::ldexp(1.0f, -24));
  CHECK(widen_half(0x3555, DType::f16) == 0x155 * std::ldexp(1.0f, -12) + 0.25f);
}

TEST_CASE("half: narrowing agrees with independent roundings", "[half]") {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns of floats (all exponents, NaN and infinity included).
    const auto u = std::uint32_t(rng());
    float f;
    std::memcpy(&f, &u, 4);
    const std::uint16_t want = bf16_of_float_bits(f);
    const std::uint16_t got = narrow_half(f, DType::bf16);
    INFO("float bits 0x" << std::hex << u);
    if (std::isnan(f)) REQUIRE(is_nan_bits(got, DType::bf16));
    else REQUIRE(got == want);
  }
#if defined(__FLT16_MAX__)
  // The compiler's _Float16 (correctly rounded from double) for f16.
  for (int i = 0; i < 200000; ++i) {
    const double v = std::ldexp(double(std::int64_t(rng() >> 11)) - double(1ll << 52), -52 - int(rng() % 30));
    const _Float16 h = static_cast<_Float16>(v);
    std::uint16_t want;
    std::memcpy(&want, &h, 2);
    INFO("value " << v);
    REQUIRE(narrow_half(v, DType::f16) == want);
  }
#endif
}

TEST_CASE("half: test data is reproducible, of the type's values, never zero, with spikes",
          "[half]") {
  for (DType d : kHalves) {
    const auto a = make_input(d, 100003, 7), b = make_input(d, 100003, 7);
    CHECK(a.bytes == b.bytes);
    CHECK(a.bytes.size() == 2 * 100003);
    visit(d, [&](auto t) {
      using T = decltype(t);
      if constexpr (is_half_float_v<T>) {
        for (std::uint64_t i = 0; i < a.n; ++i) {
          const double v = double(a.data<T>()[i]);
          REQUIRE(v != 0);
          REQUIRE(std::fabs(v) <= 1024);
        }
        CHECK(double(a.data<T>()[0]) == 1024);
        CHECK(double(a.data<T>()[a.n - 1]) == -1024);
      }
    });
  }
}

TEST_CASE("half: the reference, the identities and the host finish", "[half]") {
  for (DType d : kHalves) {
    INFO(name(d));
    // 1 + 255 * 2^-8 ... : in bf16 every add to 256 would be lost; the float sum keeps them.
    std::vector<double> v(300, 1.0);
    v[0] = 256;
    const HostArray a = array_of(d, v);
    const Reference r = reference(a, Op::sum);
    CHECK(r.exact == 555.0);
    CHECK(r.value.dtype == d);
    CHECK(r.value.to_double() == double(widen_half(narrow_half(555.0, d), d)));
    CHECK(reference(a, Op::max).value.to_double() == 256);
    CHECK(reference(a, Op::min).value.to_double() == 1);
    CHECK(identity(d, Op::sum).bits == 0);
    CHECK(identity(d, Op::min).to_double() == std::numeric_limits<double>::infinity());
    CHECK(identity(d, Op::max).to_double() == -std::numeric_limits<double>::infinity());
    // The host finish: float32 partials combined in double, rounded once to the element type.
    HostArray p;
    p.dtype = DType::f32;
    p.n = 3;
    const float parts[] = {256.f, 1.75f, 0.25f}; // 258: a bf16 value too
    p.bytes.resize(12);
    std::memcpy(p.bytes.data(), parts, 12);
    const Scalar s = combine_on_host(p, 3, Op::sum, d);
    CHECK(s.dtype == d);
    CHECK(s.to_double() == 258);
    CHECK(combine_on_host(p, 3, Op::min, d).to_double() == 0.25);
  }
}

TEST_CASE("half: the sum bound accepts one rounding of a float sum and rejects a dropped spike",
          "[half]") {
  const std::uint64_t n = (1u << 16) + 3;
  for (DType d : kHalves) {
    INFO(name(d));
    const HostArray a = make_input(d, n, 3);
    const Reference ref = reference(a, Op::sum);
    const Config c{"vectorized", 256, 4, 8, 0, Tail::shfl, Finish::lastblock};
    const std::uint64_t depth = summation_depth(c, sm(90, d), n);
    // What a kernel computes: float partials of 256 elements, summed in float, rounded once.
    auto gpu_like = [&](std::uint64_t skip) {
      float total = 0;
      visit(d, [&](auto t) {
        using T = decltype(t);
        if constexpr (is_half_float_v<T>)
          for (std::uint64_t b = 0; b < n; b += 256) {
            float s = 0;
            for (std::uint64_t i = b; i < std::min(n, b + 256); ++i)
              if (i != skip) s += float(a.data<T>()[i]);
            total += s;
          }
      });
      Scalar r;
      r.dtype = d;
      r.bits = narrow_half(total, d);
      return r;
    };
    const Check good = check(ref, gpu_like(~0ull), Op::sum, depth);
    INFO("error " << good.error << " bound " << good.bound);
    CHECK(good.ok);
    for (std::uint64_t drop : {std::uint64_t(0), n - 1, std::uint64_t(255), std::uint64_t(256)}) {
      INFO("dropped " << drop);
      CHECK_FALSE(check(ref, gpu_like(drop), Op::sum, depth).ok);
    }
    // A result rounded at every add is far outside the bound in bf16.
    if (d == DType::bf16) {
      float running = 0;
      for (std::uint64_t i = 0; i < n; ++i)
        running = widen_half(narrow_half(double(running) + double(float(a.data<bf16_t>()[i])), d), d);
      Scalar bad;
      bad.dtype = d;
      bad.bits = narrow_half(running, d);
      CHECK_FALSE(check(ref, bad, Op::sum, depth).ok);
    }
  }
}

TEST_CASE("half: catalogue rules", "[half][catalogue]") {
  auto reason = [](const char* k, Target t) { return invalid_reason(cfg(k), t).value_or(""); };
  for (DType d : kHalves) {
    INFO(name(d));
    // 16-byte vectors are 8 elements.
    CHECK(reason("vectorized.b256.u4.v8.g0.shfl.lastblock", sm(90, d)).empty());
    CHECK(reason("vectorized.b256.u4.v8.g4.shfl.twopass", sm(90, d)).empty());
    // Sums round once: no atomic finish into the result, no in-place partials.
    CHECK_THAT(reason("vectorized.b256.u4.v8.g4.shfl.firstblock", sm(90, d)), Catch::Contains("rounds once"));
    CHECK_THAT(reason("vectorized.b256.u4.v8.g0.shfl.atomic", sm(90, d)), Catch::Contains("rounds once"));
    CHECK_THAT(reason("atomic_global.b256.atomic", sm(90, d)), Catch::Contains("atomic"));
    CHECK_THAT(reason("unrolling.b256.u2.atomic", sm(90, d)), Catch::Contains("atomic"));
    CHECK_THAT(reason("neighbored_gmem.b256.host", sm(90, d)), Catch::Contains("in place"));
    CHECK(reason("unrolling.b256.u2.host", sm(90, d)).empty());
    // Min and max are exact: atomics (a 16-bit CAS, sm_70+) and in place are fine.
    for (Op op : {Op::min, Op::max}) {
      CHECK(reason("vectorized.b256.u4.v8.g4.shfl.firstblock", sm(90, d, op)).empty());
      CHECK(reason("atomic_global.b256.atomic", sm(90, d, op)).empty());
      CHECK(reason("neighbored_gmem.b256.host", sm(90, d, op)).empty());
      CHECK_THAT(reason("atomic_shared.b256.atomic", sm(61, d, op)), Catch::Contains("sm_70"));
    }
    CHECK_THAT(reason("unroll_warps.b512.u8.redux.host", sm(90, d, Op::max)), Catch::Contains("32-bit integers"));
    // Shared memory and partials are float32; determinism as for float.
    CHECK(plan(cfg("unrolling.b256.u2.host"), sm(90, d), 1 << 20).smem_bytes == 256 * 4);
    CHECK(deterministic(cfg("vectorized.b256.u4.v8.g0.shfl.lastblock"), d));
    CHECK_FALSE(deterministic(cfg("vectorized.b256.u4.v8.g4.shfl.firstblock"), d));
    // The sweep's space has them.
    bool v8 = false;
    for (const Config& c : space(*find_variant("streaming")))
      v8 |= c.vec == 8 && !invalid_reason(c, sm(90, d));
    CHECK(v8);
  }
  // 8 four-byte elements are 32 bytes: not a load.
  CHECK_THAT(reason("vectorized.b256.u4.v8.g0.shfl.lastblock", sm(90, DType::f32)), Catch::Contains("16-byte"));
  const std::string s = render(cfg("vectorized.b256.u4.v8.g0.shfl.lastblock"), DType::bf16, Op::sum);
  CHECK_THAT(s, Catch::Contains("typedef unsigned short T;") && Catch::Contains("typedef float A;") &&
                    Catch::Contains("#define RT_DTYPE_BF16 1") && Catch::Contains("#define RT_HALF 1") &&
                    !Catch::Contains("#include"));
  CHECK(render(cfg("vectorized.b256.u4.v8.g0.shfl.lastblock"), DType::f16, Op::sum) != s);
  CHECK_THAT(render(cfg("vectorized.b256.u4.v4.g0.shfl.lastblock"), DType::f32, Op::sum),
             Catch::Contains("typedef float A;") && !Catch::Contains("#define RT_HALF"));
}

TEST_CASE("half: a float32 result, and the atomic sums it admits", "[half][catalogue]") {
  auto reason = [](const char* k, Target t) { return invalid_reason(cfg(k), t).value_or(""); };
  auto wide = [](Target t) {
    t.wide_result = true;
    return t;
  };
  for (DType d : kHalves) {
    INFO(name(d));
    const Target t = sm(90, d);
    // The atomic finishes of a sum: not with the element type, valid with a float32 result.
    for (const char* k : {"vectorized.b256.u4.v8.g4.shfl.firstblock", "vectorized.b256.u4.v8.g0.shfl.atomic",
                          "atomic_global.b256.atomic", "unrolling.b256.u2.atomic"}) {
      INFO(k);
      CHECK(reason(k, wide(t)).empty());
      CHECK(valid_wide_only(cfg(k), t));
    }
    // What the element type admits stays valid and is not "wide only"; in place still rounds.
    CHECK(reason("vectorized.b256.u4.v8.g0.shfl.lastblock", wide(t)).empty());
    CHECK_FALSE(valid_wide_only(cfg("vectorized.b256.u4.v8.g0.shfl.lastblock"), t));
    CHECK_THAT(reason("neighbored_gmem.b256.host", wide(t)), Catch::Contains("in place"));
    CHECK_FALSE(valid_wide_only(cfg("neighbored_gmem.b256.host"), t));
    CHECK_FALSE(valid_wide_only(cfg("vectorized.b256.u4.v8.g4.shfl.firstblock"), sm(90, d, Op::max)));
    // The array problem only.
    Target rows = wide(t);
    rows.problem = Problem::rows;
    CHECK_THAT(reason("rows_block.b256.u4.v8.direct", rows), Catch::Contains("array problem only"));
    // The kernel writes float: R is A.
    const std::string w = render(cfg("vectorized.b256.u4.v8.g4.shfl.firstblock"), d, Op::sum, true);
    CHECK_THAT(w, Catch::Contains("typedef A R;") && Catch::Contains("#define RT_WIDE_RESULT 1"));
    CHECK_THAT(render(cfg("vectorized.b256.u4.v8.g4.shfl.firstblock"), d, Op::sum),
               Catch::Contains("typedef T R;") && !Catch::Contains("#define RT_WIDE_RESULT"));
  }
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.lastblock", wide(sm(90, DType::f32))),
             Catch::Contains("float32 result is for bf16 and f16"));
  CHECK_FALSE(valid_wide_only(cfg("vectorized.b256.u4.v4.g4.shfl.firstblock"), sm(90, DType::f32)));

  // The check of a float32 result: a sum within the float32 bound, without the rounding to bf16
  // that an element-typed result is allowed; min and max the exact element.
  const HostArray a = array_of(DType::bf16, {256.0, 1.0, 0.5});
  const Reference ref = reference(a, Op::sum); // 257.5; in bf16 (spacing 2 there) 258
  CHECK(check(ref, Scalar::of(257.5f), Op::sum, 3).ok);
  CHECK(check(ref, Scalar::of(bf16_t(258.0)), Op::sum, 3).ok); // the one rounding to bf16
  CHECK_FALSE(check(ref, Scalar::of(258.0f), Op::sum, 3).ok);  // a float32 result has no such slack
  CHECK(check(reference(a, Op::max), Scalar::of(256.0f), Op::max, 0).ok);
  CHECK_FALSE(check(reference(a, Op::max), Scalar::of(257.0f), Op::max, 0).ok);
}

TEST_CASE("half: every code path of every problem compiles with NVRTC for bf16 and f16",
          "[half][catalogue][nvrtc]") {
  // sm_90 takes the cvt.rn.bf16.f32 conversion, sm_75 the integer rounding of bf16; both the
  // 16-bit CAS of the atomic min/max.
  Nvrtc nvrtc;
  CompileCache none("");
  for (int cc : {75, 90}) {
    KernelLoader loader(nvrtc, none, nvrtc.target_for(cc));
    std::vector<CompileJob> jobs;
    for (Problem problem : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
      for (DType d : kHalves)
        for (Op op : {Op::sum, Op::max}) {
          if (cc == 75 && (problem != Problem::array || d == DType::f16)) continue; // bf16's own path
          Target t = sm(cc, d, op);
          t.problem = problem;
          Target w = t; // the float32 result: every array code path a sum takes with it
          w.wide_result = true;
          test::CodePaths narrow, wide;
          std::set<std::string> once; // float16's variants compiled with a finish that adds no atomic
          for (const Variant& v : variants(problem))
            for (const Config& c : space(v)) {
              // float16 takes bfloat16's paths but for its conversions (element.cuh) and its
              // atomics: each of its atomic paths, and each variant once otherwise.
              const bool sampled = d == DType::f16 && c.finish != Finish::atomic && c.finish != Finish::firstblock;
              if (sampled && once.count(c.variant)) continue;
              const std::size_t before = jobs.size();
              if (!invalid_reason(c, t) && narrow.first(c)) jobs.push_back({c, d, op});
              if (op == Op::sum && !invalid_reason(c, w) && wide.first(c)) jobs.push_back({c, d, op, true});
              if (sampled && jobs.size() > before) once.insert(c.variant);
            }
        }
    const auto outcomes = compile_all(loader, jobs, 0);
    std::size_t failed = 0;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (!outcomes[i].error.empty()) {
        ++failed;
        FAIL_CHECK(key(jobs[i].config) << " " << name(jobs[i].dtype) << " " << name(jobs[i].op)
                                       << (jobs[i].wide_result ? " (float32 result)" : "")
                                       << " sm_" << cc << ": " << outcomes[i].error);
      }
    INFO("sm_" << cc << ": " << jobs.size() << " configurations");
    CHECK(failed == 0);
    CHECK(jobs.size() > (cc == 90 ? 500u : 100u));
  }
}
