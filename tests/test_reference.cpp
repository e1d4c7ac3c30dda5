// The CPU reference, the test data and the float bound.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "tuner/reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

using namespace reduce_tune;

namespace {
HostArray from(std::vector<std::int32_t> v) {
  HostArray a;
  a.dtype = DType::i32;
  a.n = v.size();
  a.bytes.resize(v.size() * 4);
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

// A tree sum in float over blocks of `block` elements, partials summed in double: what a correct
// host-finish kernel computes, up to the order inside a block.
float tree_sum(const float* x, std::uint64_t n, std::uint64_t skip = ~0ull) {
  double total = 0;
  for (std::uint64_t b = 0; b < n; b += 512) {
    std::vector<float> s(512, 0.f);
    for (std::uint64_t i = 0; i < 512 && b + i < n; ++i) s[i] = b + i == skip ? 0.f : x[b + i];
    for (std::size_t w = 256; w > 0; w /= 2)
      for (std::size_t i = 0; i < w; ++i) s[i] += s[i + w];
    total += s[0];
  }
  return float(total);
}
} // namespace

TEST_CASE("int32 sums wrap like two's complement", "[reference]") {
  const auto r = reference(from({std::numeric_limits<std::int32_t>::max(), 1}), Op::sum);
  CHECK(r.value.as<std::int32_t>() == std::numeric_limits<std::int32_t>::min());
  CHECK(check(r, Scalar::of(std::numeric_limits<std::int32_t>::min()), Op::sum, 1).ok);
  CHECK_FALSE(check(r, Scalar::of(std::int32_t(0)), Op::sum, 1).ok);
  CHECK(reference(from({5, -7, 3}), Op::min).value.as<std::int32_t>() == -7);
  CHECK(reference(from({5, -7, 3}), Op::max).value.as<std::int32_t>() == 5);
}

TEST_CASE("test data is reproducible, random and never zero", "[reference]") {
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64}) {
    const auto a = make_input(d, 100003, 7), b = make_input(d, 100003, 7), c = make_input(d, 100003, 8);
    CHECK(a.bytes == b.bytes);
    CHECK(a.bytes != c.bytes);
    visit(d, [&](auto t) {
      using T = decltype(t);
      for (std::uint64_t i = 0; i < a.n; ++i) REQUIRE(a.data<T>()[i] != T(0));
    });
  }
}

TEST_CASE("the float bound accepts a correct sum and rejects one that drops an element", "[reference]") {
  const std::uint64_t n = (1u << 20) + 1;
  const auto a = make_input(DType::f32, n, 3);
  const auto ref = reference(a, Op::sum);
  const Config c{"unrolling", 512, 2, 1, 0, Tail::none, Finish::host};
  const Target t{DType::f32, Op::sum, 90, 1024, 132, false};
  const std::uint64_t depth = summation_depth(c, t, n);
  const float good = tree_sum(a.data<float>(), n);
  CHECK(check(ref, Scalar::of(good), Op::sum, depth).ok);
  // Dropping the first, the last, or an element at a block edge is caught.
  for (std::uint64_t drop : {std::uint64_t(0), n - 1, std::uint64_t(511), std::uint64_t(512),
                             std::uint64_t(1) << 19}) {
    INFO("dropped element " << drop);
    const auto r = check(ref, Scalar::of(tree_sum(a.data<float>(), n, drop)), Op::sum, depth);
    CHECK_FALSE(r.ok);
    CHECK(r.error > r.bound);
  }
  // Counting one edge element twice is caught too.
  CHECK_FALSE(check(ref, Scalar::of(good + a.data<float>()[n - 1]), Op::sum, depth).ok);
}

TEST_CASE("NaN and infinity follow IEEE rules in the check", "[reference]") {
  HostArray a;
  a.dtype = DType::f32;
  a.n = 3;
  a.bytes.resize(12);
  float* x = a.data<float>();
  x[0] = 1, x[1] = std::numeric_limits<float>::quiet_NaN(), x[2] = 2;
  const auto sum = reference(a, Op::sum);
  CHECK(check(sum, Scalar::of(std::numeric_limits<float>::quiet_NaN()), Op::sum, 3).ok);
  CHECK_FALSE(check(sum, Scalar::of(3.f), Op::sum, 3).ok);
  // min/max propagate NaN (IEEE 754-2019 minimum/maximum); check() wants NaN then, and only then.
  CHECK(std::isnan(reference(a, Op::min).value.as<float>()));
  CHECK(std::isnan(reference(a, Op::max).value.as<float>()));
  CHECK(check(reference(a, Op::max), Scalar::of(-std::numeric_limits<float>::quiet_NaN()), Op::max, 3).ok);
  CHECK_FALSE(check(reference(a, Op::max), Scalar::of(2.f), Op::max, 3).ok);
  x[1] = 0.5f;
  CHECK(reference(a, Op::min).value.as<float>() == 0.5f);
  CHECK_FALSE(check(reference(a, Op::min), Scalar::of(std::numeric_limits<float>::quiet_NaN()), Op::min, 3).ok);
  x[1] = std::numeric_limits<float>::infinity();
  const auto inf = reference(a, Op::sum);
  CHECK(check(inf, Scalar::of(std::numeric_limits<float>::infinity()), Op::sum, 3).ok);
  CHECK_FALSE(check(inf, Scalar::of(-std::numeric_limits<float>::infinity()), Op::sum, 3).ok);
}

TEST_CASE("host combine of partials", "[reference]") {
  const auto p = from({1, 2, 3, 4});
  CHECK(combine_on_host(p, 4, Op::sum).as<std::int32_t>() == 10);
  CHECK(combine_on_host(p, 3, Op::max).as<std::int32_t>() == 3);
}

TEST_CASE("the identity of each op and dtype leaves any value unchanged", "[reference]") {
  CHECK(identity(DType::i32, Op::sum).bits == 0);
  CHECK(identity(DType::f64, Op::sum).bits == 0);
  CHECK(identity(DType::i32, Op::min).as<std::int32_t>() == std::numeric_limits<std::int32_t>::max());
  CHECK(identity(DType::u32, Op::max).as<std::uint32_t>() == 0u);
  CHECK(identity(DType::i64, Op::max).as<std::int64_t>() == std::numeric_limits<std::int64_t>::lowest());
  CHECK(identity(DType::f32, Op::min).as<float>() == std::numeric_limits<float>::infinity());
  CHECK(identity(DType::f64, Op::max).as<double>() == -std::numeric_limits<double>::infinity());
  // Combined on the host with a value, the identity gives the value back.
  for (Op op : {Op::sum, Op::min, Op::max}) {
    HostArray a = from({-7, 0});
    const std::uint64_t id = identity(DType::i32, op).bits;
    std::memcpy(a.bytes.data() + 4, &id, 4);
    CHECK(combine_on_host(a, 2, op).as<std::int32_t>() == -7);
    CHECK(identity(DType::i64, op).dtype == DType::i64);
  }
}

namespace {
template <typename T> HostArray floats(const std::vector<T>& v) {
  HostArray a;
  a.dtype = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}
} // namespace

TEMPLATE_TEST_CASE("float min/max: NaN anywhere gives NaN, -0.0 is below +0.0", "[reference]",
                   float, double) {
  using T = TestType;
  using L = std::numeric_limits<T>;
  const T nan = L::quiet_NaN();
  // Long enough for the reference's parallel chunks (2^20 and more), NaN first, middle, last.
  const std::uint64_t n = (1u << 21) + 3;
  for (std::uint64_t at : {std::uint64_t(0), n / 2, n - 1}) {
    std::vector<T> v(n);
    for (std::uint64_t i = 0; i < n; ++i) v[i] = T(i % 1000) - T(500);
    v[at] = at == n - 1 ? -nan : nan; // a negative NaN too
    INFO("NaN at " << at);
    const HostArray a = floats(v);
    for (Op op : {Op::min, Op::max, Op::sum}) {
      const Reference r = reference(a, op);
      CHECK(std::isnan(r.value.template as<T>()));
      CHECK(check(r, Scalar::of(nan), op, 64).ok);
      CHECK_FALSE(check(r, Scalar::of(T(-500)), op, 64).ok);
      CHECK(std::isnan(combine_on_host(a, n, op).template as<T>())); // the host finish agrees
    }
    v[at] = T(7);
    const HostArray b = floats(v);
    CHECK(reference(b, Op::min).value.template as<T>() == T(-500));
    CHECK(reference(b, Op::max).value.template as<T>() == T(499));
    CHECK_FALSE(check(reference(b, Op::max), Scalar::of(nan), Op::max, 64).ok);
  }
  // Infinities are ordinary values; NaN wins over them.
  CHECK(reference(floats<T>({L::infinity(), T(1)}), Op::max).value.template as<T>() == L::infinity());
  CHECK(std::isnan(reference(floats<T>({-L::infinity(), nan}), Op::min).value.template as<T>()));
  // Signed zeros: min is -0.0 and max +0.0 in either order; the identity leaves a zero's sign.
  for (const auto& z : {std::vector<T>{T(0), -T(0)}, std::vector<T>{-T(0), T(0)},
                        std::vector<T>{T(0), T(0), -T(0), T(0)}}) {
    const Scalar lo = reference(floats(z), Op::min).value, hi = reference(floats(z), Op::max).value;
    CHECK(std::signbit(lo.template as<T>()));
    CHECK(lo.template as<T>() == T(0));
    CHECK_FALSE(std::signbit(hi.template as<T>()));
    CHECK(hi.template as<T>() == T(0));
    // check() compares min/max bit for bit: the other zero is wrong.
    CHECK_FALSE(check(reference(floats(z), Op::min), Scalar::of(T(0)), Op::min, 4).ok);
    CHECK_FALSE(check(reference(floats(z), Op::max), Scalar::of(-T(0)), Op::max, 4).ok);
  }
  CHECK(std::signbit(reference(floats<T>({-T(0)}), Op::max).value.template as<T>()));
  CHECK_FALSE(std::signbit(reference(floats<T>({T(0)}), Op::min).value.template as<T>()));
}
