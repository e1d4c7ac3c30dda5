// The GPU fast pass's decisions on the CPU: its linear bounds never exceed the CPU check's bound
// (tuner/reference.cpp, tuner/user_check.cpp) and come close to it, so a result it passes the CPU
// check passes; its exact comparison is the CPU's; and its compare template compiles with NVRTC
// for every result dtype. The device side is tests/test_gpu_fast_check.cpp.
#include <catch2/catch.hpp>

#include "kernels/nvrtc.h"
#include "tests/result_values.h"
#include "tests/user_reductions.h"
#include "tuner/fast_bound.h"
#include "tuner/fast_check.h"
#include "tuner/sweep.h"
#include "tuner/user_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

using namespace reduce_tune;
using testing::as_dtype;

namespace {

constexpr Op kBounded[] = {Op::sum,       Op::norm1, Op::mean, Op::sumsq,          Op::dot,  Op::norm2,
                           Op::logsumexp, Op::var,   Op::std_, Op::var_population, Op::std_population};
constexpr DType kElements[] = {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64};


// A reference of a result of dtype `d`: the exact value, a scale and a count that fit the op.
Reference random_reference(std::mt19937_64& rng, Op op, DType d) {
  std::uniform_real_distribution<double> unit(0, 1);
  const double counts[] = {1, 2, 3, 33, 1000, 1 << 20};
  Reference r;
  r.count = counts[rng() % 6];
  const double magnitude = std::ldexp(unit(rng), int(rng() % 20) - 10); // 2^-10 .. 2^10
  // Every exact value within float16's range (|x| < 1100).
  if (op == Op::norm2) {
    r.abs_sum = magnitude * magnitude;
    r.exact = std::sqrt(r.abs_sum);
  } else if (op == Op::logsumexp) {
    r.abs_sum = std::log(1 + unit(rng) * r.count); // log S >= 0
    r.exact = (unit(rng) * 2 - 1) * magnitude + r.abs_sum;
  } else if (op == Op::var || op == Op::var_population || op == Op::std_ || op == Op::std_population) {
    r.exact = magnitude;
    r.abs_sum = r.exact * r.count * (1 + 4 * unit(rng));
  } else {
    r.exact = (unit(rng) * 2 - 1) * magnitude;
    r.abs_sum = std::fabs(r.exact) * (1 + unit(rng) * r.count) * (op == Op::mean ? r.count : 1);
  }
  r.value = as_dtype(r.exact, d);
  return r;
}

std::uint64_t random_depth(std::mt19937_64& rng) {
  const std::uint64_t depths[] = {0, 1, 2, 5, 17, 300, 4097, std::uint64_t(1) << 26};
  return depths[rng() % 8];
}

// The fast pass's bound on one result, as the device computes it.
double device_bound(const FastBound& b, Op op, const Reference& r) {
  return fast_limit(b, fast_want(r), scale_down(fast_scale(op, r)));
}

// The ops whose bound subtracts two square roots: their cancellation costs a few units of 2^-53 of
// the result, which matter only where the bound is that small.
bool roots(Op op) { return op == Op::norm2 || op == Op::std_ || op == Op::std_population; }

} // namespace

TEST_CASE("fast check: each op's linear bound is below the CPU check's bound and close to it",
          "[fast_check]") {
  std::mt19937_64 rng(42);
  std::size_t compared = 0;
  for (Op op : kBounded)
    for (DType e : kElements) {
      if (op_unsupported(op, e)) continue;
      const DType d = result_dtype(op, e);
      if (!is_float(d)) continue; // integer sums: exact (below)
      INFO(name(op) << " on " << name(e) << " (result " << name(d) << ")");
      REQUIRE(fast_form(op, d) == (op == Op::std_ || op == Op::std_population ? FastForm::root : FastForm::bound));
      for (int k = 0; k < 400; ++k) {
        const Reference r = random_reference(rng, op, d);
        const std::uint64_t depth = random_depth(rng);
        INFO("exact " << r.exact << ", scale " << r.abs_sum << ", count " << r.count << ", depth " << depth);
        // A result one unit off the value: the CPU reaches its bound for it.
        const Check cpu = check(r, as_dtype(r.exact * (1 + 1e-3) + 1e-3, d), op, depth);
        REQUIRE(cpu.bound > 0);
        const auto b = fast_bound(op, d, depth, r.count);
        REQUIRE(b);
        const double fast = device_bound(*b, op, r);
        REQUIRE(fast <= cpu.bound);
        // Close below it: the scale's rounding to float (2^-24) and the 1e-9 margin (and the
        // roots' cancellation).
        if (!roots(op) || cpu.bound > 1e-10 * r.exact) CHECK(fast >= cpu.bound * (roots(op) ? 0.99 : 1 - 1e-6));
        ++compared;
      }
    }
  CHECK(compared > 10000);
}

TEST_CASE("fast check: a bounded result the fast pass passes, the CPU check passes, NaN and infinity "
          "as the CPU decides them",
          "[fast_check]") {
  std::mt19937_64 rng(7);
  std::size_t passed = 0, failed = 0;
  for (Op op : kBounded)
    for (DType e : kElements) {
      if (op_unsupported(op, e)) continue;
      const DType d = result_dtype(op, e);
      if (!is_float(d)) continue;
      for (int k = 0; k < 200; ++k) {
        Reference r = random_reference(rng, op, d);
        const std::uint64_t depth = random_depth(rng);
        const auto b = fast_bound(op, d, depth, r.count);
        REQUIRE(b);
        const double fast = device_bound(*b, op, r), cpu = check(r, as_dtype(r.exact + 1, d), op, depth).bound;
        const float scale = scale_down(fast_scale(op, r));
        // Results around both bounds, rounded to the dtype, and the special values.
        std::vector<double> tries = {r.exact, r.value.to_double(), NAN, INFINITY, -INFINITY};
        for (double limit : {fast, cpu})
          for (double t : {0.5, 0.999999, 1.0, 1.000001, 1.5, 3.0})
            tries.push_back(r.exact + limit * t), tries.push_back(r.exact - limit * t);
        for (double g : tries) {
          const Scalar got = as_dtype(g, d);
          const bool fast_ok = fast_within(got.to_double(), fast_want(r), scale, *b);
          const bool cpu_ok = check(r, got, op, depth).ok;
          INFO(name(op) << " " << name(d) << ": exact " << r.exact << ", got " << got.to_string()
                        << ", depth " << depth << ", fast " << fast_ok << ", cpu " << cpu_ok);
          if (fast_ok) REQUIRE(cpu_ok);
          (fast_ok ? passed : failed) += 1;
        }
      }
    }
  CHECK(passed > 1000);
  CHECK(failed > 1000);

  // NaN references match NaN results only; an infinite one the same infinity; a finite sum past
  // the dtype's range (float16) the infinity it rounds to.
  for (double exact : {double(NAN), double(INFINITY), 70000.0}) {
    Reference r;
    r.exact = exact;
    r.abs_sum = std::isfinite(exact) ? exact : 1;
    r.count = 4;
    r.value = as_dtype(exact, DType::f16);
    const auto b = fast_bound(Op::sum, DType::f16, 3, r.count);
    for (double g : {double(NAN), double(INFINITY), -double(INFINITY), 65504.0, 1.0}) {
      const Scalar got = as_dtype(g, DType::f16);
      INFO("exact " << exact << ", got " << g);
      CHECK(fast_within(got.to_double(), fast_want(r), scale_down(r.abs_sum), *b) == check(r, got, Op::sum, 3).ok);
    }
  }
}

TEST_CASE("fast check: exact results compare as the CPU compares them", "[fast_check]") {
  // Bits, except that any NaN matches any NaN (payloads, signs); -0.0 is not +0.0.
  const float nan_a = std::numeric_limits<float>::quiet_NaN();
  const float nan_b = -std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> floats = {0.0f, -0.0f, 1.0f, 1.0000001f, nan_a, nan_b, INFINITY};
  for (float want : floats)
    for (float got : floats) {
      Reference r;
      r.value = Scalar::of(want);
      INFO(want << " vs " << got);
      CHECK(fast_form(Op::max, DType::f32) == FastForm::exact);
      CHECK(fast_equal(Scalar::of(got), r.value) == check(r, Scalar::of(got), Op::max, 0).ok);
    }
  for (DType d : {DType::bf16, DType::f16})
    for (double want : {0.0, -0.0, 1.5, double(NAN), -double(NAN)})
      for (double got : {0.0, -0.0, 1.5, 1.5078125, double(NAN), -double(NAN)}) {
        Reference r;
        r.value = as_dtype(want, d);
        CHECK(fast_equal(as_dtype(got, d), r.value) == check(r, as_dtype(got, d), Op::min, 0).ok);
      }
  // Integers, indices, counts, any and all: the same value only.
  for (Op op : {Op::sum, Op::argmax, Op::count_nonzero, Op::any, Op::sumsq})
    for (DType e : {DType::i32, DType::u32, DType::i64, DType::f32}) {
      if (op_unsupported(op, e)) continue;
      const DType d = result_dtype(op, e);
      if (is_float(d)) continue;
      CHECK(fast_form(op, d) == FastForm::exact);
      for (std::int64_t want : {0, 1, 7})
        for (std::int64_t got : {0, 1, 7}) {
          Reference r;
          r.value = as_dtype(double(want), d);
          CHECK(fast_equal(as_dtype(double(got), d), r.value) == check(r, as_dtype(double(got), d), op, 0).ok);
        }
    }
  // std: the root of a linear bound.
  CHECK(fast_form(Op::std_, DType::f32) == FastForm::root);
  CHECK(fast_form(Op::std_population, DType::f64) == FastForm::root);
}

TEST_CASE("fast check: a user reduction's bound is below check_user's and close to it", "[fast_check]") {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(-1, 1);
  for (const Reduction& red : {testing::log_sum_exp(), testing::first_nonzero_value()})
    for (DType dtype : red.inputs) {
      const auto u = make_user_op(red);
      const DType result = u->result_dtype(dtype);
      for (int k = 0; k < 500; ++k) {
        const std::uint64_t depth = random_depth(rng) % 100000;
        UserExpected e;
        e.checked = true;
        e.value = {unit(rng) * 100};
        e.magnitude = {std::fabs(e.value[0]) * (1 + 10 * std::fabs(unit(rng)))};
        const auto b = fast_user_bound(*u, dtype, depth);
        REQUIRE(b);
        const double got = e.value[0] + 1;
        const Check cpu = check_user(*u, dtype, e, 0, got, depth);
        const double fast = b->a * double(scale_down(e.magnitude[0])) + b->b * std::fabs(e.value[0]) + b->c;
        INFO(u->name << " " << name(dtype) << " (" << name(result) << "), depth " << depth);
        REQUIRE(fast <= cpu.bound);
        CHECK(fast >= cpu.bound * (1 - 1e-6));
        // Results on both sides of the fast bound: passed there, passed by the CPU.
        for (double t : {0.0, 0.5, 0.9999999, 1.0000001, 2.0})
          for (double sign : {-1.0, 1.0}) {
            const double g = e.value[0] + sign * t * fast;
            if (fast_within(g, e.value[0], scale_down(e.magnitude[0]), *b))
              REQUIRE(check_user(*u, dtype, e, 0, g, depth).ok);
          }
      }
    }
}

TEST_CASE("fast check: the compare template compiles with NVRTC for every result dtype",
          "[fast_check][nvrtc]") {
  Nvrtc nvrtc;
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u32, DType::bf16, DType::f16, DType::u8}) {
    INFO(name(d));
    const std::string source = render_compare(d);
    // PTX names the kernels; the float results have the bounded compare too.
    const Compiled ptx = nvrtc.compile(source, "compare.cu", nvrtc.parse_target("compute_90"));
    CHECK(ptx.image.find(".entry rt_check_exact") != std::string::npos);
    CHECK((ptx.image.find(".entry rt_check_bound") != std::string::npos) == is_float(d));
    CHECK((ptx.image.find(".entry rt_check_root") != std::string::npos) == is_float(d));
    // Offsets segments' bounds by length class.
    CHECK((ptx.image.find(".entry rt_check_bound_classes") != std::string::npos) == is_float(d));
    CHECK((ptx.image.find(".entry rt_check_root_classes") != std::string::npos) == is_float(d));
    // And cubins for the oldest and a current architecture.
    for (int cc : {75, 90}) CHECK_FALSE(nvrtc.compile(source, "compare.cu", nvrtc.target_for(cc)).image.empty());
  }
}

TEST_CASE("fast check: the profile says how the checked launches were decided and what the GPU check's "
          "setup took",
          "[fast_check][profile]") {
  SweepTimes t;
  t.total_s = 10, t.validate_s = 2, t.measured = 100, t.points = 10;
  const std::string plain = profile_text(t); // an array sweep: no paths, no setup row
  CHECK(plain.find("passed on the GPU") == std::string::npos);
  CHECK(plain.find("check setup") == std::string::npos);
  t.gpu_checked = 90, t.cpu_checked = 10, t.cpu_after_gpu = 2, t.check_setups = 8, t.check_setup_s = 0.4;
  const std::string counted = profile_text(t);
  CHECK(counted.find("90 passed on the GPU, 10 read back and checked on the CPU (2 after a GPU failure)") !=
        std::string::npos);
  CHECK(counted.find("check setup") != std::string::npos);
  CHECK(counted.find("50.00 ms a point") != std::string::npos);
  CHECK(counted.find("while the shape before was measured") == std::string::npos);
  CHECK(counted.find("prefix sums") == std::string::npos);
  t.check_staged = 6;
  CHECK(profile_text(t).find("6 made while the shape before was measured, with the references or from the prefix sums") !=
        std::string::npos);
  t.prefix_straight = 5;
  CHECK_THAT(profile_text(t), Catch::Contains("those made from the prefix sums on this thread count as the reference's time"));
  t.check_staged = 0, t.prefix_straight = 0;
  // The setup is accounted for: "other" is what is left of the total.
  CHECK(counted.find("other             7.60 s") != std::string::npos);
}

// Not a test (hidden; run it by its tag): what the CPU check of one checked launch costs at the
// sweeps' largest result counts, the time the fast pass saves each measurement besides the copy
// of the results (4 bytes a float32 result) to the host.
TEST_CASE("fast check: the CPU check's time per measurement at 2^20 and 2^24 results",
          "[.][fast_check_timing]") {
  for (std::uint64_t count : {std::uint64_t(1) << 20, std::uint64_t(1) << 24}) {
    Segmentation seg;
    seg.problem = Problem::rows;
    seg.shape = {count, 1};
    seg.stride = 1;
    const HostArray data = make_input(DType::f32, count, 1);
    const std::vector<Reference> refs = segmented_reference(data, seg, Op::sum);
    HostArray got;
    got.dtype = DType::f32;
    got.n = count;
    got.bytes.resize(count * 4);
    const auto depth = [](std::uint64_t) { return std::uint64_t(2); };
    {
      // What the fast pass stages once a point (FastCheck::prepare, before its upload of 12
      // bytes a result), on one thread here (it takes a thread a core, 2^15 results each at least).
      std::vector<double> want(count);
      std::vector<float> scale(count);
      const auto t0 = std::chrono::steady_clock::now();
      for (std::uint64_t i = 0; i < count; ++i)
        want[i] = fast_want(refs[i]), scale[i] = scale_down(fast_scale(Op::sum, refs[i]));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      REQUIRE(scale[count / 2] >= 0);
      WARN(count << " float32 sums: the fast pass's staging " << ms << " ms on one thread");
    }
    // The reference's own values (the CPU check's shortcut), then each one unit off (its bound).
    for (bool off : {false, true}) {
      for (std::uint64_t i = 0; i < count; ++i) {
        float v = refs[i].value.as<float>();
        if (off) v = std::nextafter(v, INFINITY);
        std::memcpy(got.bytes.data() + i * 4, &v, 4);
      }
      std::vector<double> ms;
      for (int rep = 0; rep < 5; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        REQUIRE(check_segmented(refs, got, seg, Op::sum, depth).ok);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      WARN(count << " float32 sums, results " << (off ? "one unit off their references" : "equal to their references")
                 << ": check_segmented " << ms[2] << " ms (median of 5, " << std::thread::hardware_concurrency()
                 << " threads)");
    }
  }
}
