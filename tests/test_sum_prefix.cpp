// Sum references from prefix sums against the element-by-element reference, bit for bit.
#include <catch2/catch.hpp>

#include "tuner/reference.h"
#include "tuner/sum_prefix.h"
#include "tests/segmentation_fixture.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

using namespace reduce_tune;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every result of `s` from the prefix sums equals segmented_reference's: value, exact, abs_sum
// and count, bit for bit.
void check_shape(const HostArray& a, const SumPrefix& p, const Segmentation& s) {
  REQUIRE(p.serves(s, Op::sum));
  std::vector<Reference> fast;
  p.reference(s, fast);
  const std::vector<Reference> slow = segmented_reference(a, s, Op::sum);
  REQUIRE(fast.size() == slow.size());
  for (std::size_t i = 0; i < fast.size(); ++i) {
    INFO(name(a.dtype) << " result " << i << " of " << s.shape.count << " x " << s.shape.length);
    REQUIRE(fast[i].value == slow[i].value);
    REQUIRE(same_bits(fast[i].exact, slow[i].exact));
    REQUIRE(same_bits(fast[i].abs_sum, slow[i].abs_sum));
    REQUIRE(fast[i].count == slow[i].count);
  }
}

Segmentation rows(std::uint64_t count, std::uint64_t length, std::uint64_t stride) {
  return testing::rows_of({count, length}, stride);
}

Segmentation segments(std::uint64_t count, std::uint64_t total, std::uint64_t seed) {
  Segmentation s;
  s.problem = Problem::segments;
  s.offsets = skewed_offsets(count, total, seed);
  s.shape = {count, std::max<std::uint64_t>(1, total / std::max<std::uint64_t>(count, 1))};
  return s;
}

HostArray floats(std::vector<float> v) {
  HostArray a;
  a.dtype = DType::f32;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(float));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

} // namespace

TEST_CASE("prefix sums give the sum reference of every rows and offsets shape bit for bit",
          "[reference][sum_prefix]") {
  // Over 2^21 elements: built in parallel chunks where the machine has several cores.
  const std::uint64_t n = (std::uint64_t(1) << 21) + 17;
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64, DType::bf16, DType::f16}) {
    const HostArray a = make_input(d, n, 20261121 + std::uint64_t(d));
    const SumPrefix p(a);
    INFO(name(d));
    REQUIRE(p.exact()); // the test data is on a grid the double sums hold exactly
    for (std::uint64_t len : {std::uint64_t(1), std::uint64_t(3), std::uint64_t(1000), std::uint64_t(1) << 12, n})
      check_shape(a, p, rows(n / len, len, len));
    check_shape(a, p, rows(1000, 999, 1003)); // padded rows: every stride-th element starts one
    check_shape(a, p, rows(0, 5, 5));
    for (std::uint64_t count : {std::uint64_t(1), std::uint64_t(7), std::uint64_t(1) << 9, std::uint64_t(1) << 20})
      check_shape(a, p, segments(count, n, 99 + count));
  }
}

TEST_CASE("prefix sums refuse what they cannot answer exactly", "[reference][sum_prefix]") {
  const HostArray grid = make_input(DType::f32, 4096, 5);
  const SumPrefix p(grid);
  REQUIRE(p.exact());
  CHECK_FALSE(p.serves(rows(4, 1024, 1024), Op::max));      // sums only
  CHECK_FALSE(p.serves(rows(4, 1025, 1025), Op::sum));      // past the input
  Segmentation cols = rows(64, 64, 64);
  cols.problem = Problem::columns;
  CHECK_FALSE(p.serves(cols, Op::sum));
  Segmentation beyond = segments(4, 4096, 1);
  beyond.offsets.back() = 5000;
  CHECK_FALSE(p.serves(beyond, Op::sum));

  // Values 2^-60 apart in scale: partial sums round in double, so the differences would not be
  // the element-by-element sums.
  const SumPrefix wide(floats({1e30f, 1e-30f, -1e30f, 3.0f}));
  CHECK_FALSE(wide.exact());
  CHECK_FALSE(wide.serves(rows(2, 2, 2), Op::sum));
  std::vector<Reference> out;
  CHECK_THROWS_AS(wide.reference(rows(2, 2, 2), out), std::invalid_argument);
  // Not finite: no exact differences.
  CHECK_FALSE(SumPrefix(floats({1.0f, std::numeric_limits<float>::infinity(), 2.0f})).exact());
  CHECK_FALSE(SumPrefix(floats({1.0f, std::numeric_limits<float>::quiet_NaN()})).exact());
  // At the bound: 2^24 ones and one 2^-29 need 2^53 units of 2^-29 in all, one too many;
  // without the small value they are exact.
  std::vector<float> ones(std::size_t(1) << 24, 1.0f);
  CHECK(SumPrefix(floats(ones)).exact());
  ones.push_back(std::ldexp(1.0f, -29));
  CHECK_FALSE(SumPrefix(floats(ones)).exact());
  // A small exact case, with its values checked directly.
  const HostArray small = floats({0.5f, -0.25f, 1024.0f, 0.75f, -1024.0f, 0.125f});
  const SumPrefix sp(small);
  REQUIRE(sp.exact());
  sp.reference(rows(3, 2, 2), out);
  REQUIRE(out.size() == 3);
  CHECK(out[0].exact == 0.25);
  CHECK(out[0].abs_sum == 0.75);
  CHECK(out[1].exact == 1024.75);
  CHECK(out[2].exact == -1023.875);
  CHECK(out[2].value == Scalar::of(-1023.875f));
  CHECK(out[2].count == 2);
}
