// Sum references with small accumulators against the general reference, bit for bit, on data
// whose sums round (the order of additions matters) and on the sweeps' test data.
#include <catch2/catch.hpp>

#include "tuner/reference.h"
#include "tuner/sum_reference.h"

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

using namespace reduce_tune;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_shape(const HostArray& a, const Segmentation& s) {
  std::vector<Reference> fast;
  REQUIRE(sum_reference(a, s, Op::sum, fast));
  const std::vector<Reference> slow = segmented_reference(a, s, Op::sum);
  REQUIRE(fast.size() == slow.size());
  for (std::size_t i = 0; i < fast.size(); ++i) {
    INFO(name(a.dtype) << " " << name(s.problem) << " result " << i << " of " << s.shape.count << " x "
                       << s.shape.length);
    REQUIRE(fast[i].value == slow[i].value);
    REQUIRE(same_bits(fast[i].exact, slow[i].exact));
    REQUIRE(same_bits(fast[i].abs_sum, slow[i].abs_sum));
    REQUIRE(fast[i].count == slow[i].count);
  }
}

Segmentation dense(Problem p, std::uint64_t count, std::uint64_t length) {
  Segmentation s;
  s.problem = p;
  s.shape = {count, length};
  s.stride = p == Problem::rows ? length : count;
  return s;
}

// make_input's floats scaled by 2^-20 .. 2^19 in turn: sums of these round in double, so only
// the same order of additions gives the same bits.
HostArray rounding(DType d, std::uint64_t n) {
  HostArray a = make_input(d, n, 31);
  visit(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) {
      T* x = a.data<T>();
      for (std::uint64_t i = 0; i < n; ++i) x[i] = T(std::ldexp(double(x[i]), int(i % 40) - 20));
    }
  });
  return a;
}

} // namespace

TEST_CASE("sum references with small accumulators equal the general ones bit for bit", "[reference][sum_reference]") {
  const std::uint64_t n = (std::uint64_t(1) << 21) + 3;
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::u32, DType::i64, DType::bf16, DType::f16}) {
    std::vector<HostArray> inputs{make_input(d, n, 11)};
    if (d == DType::f32 || d == DType::f64) inputs.push_back(rounding(d, n));
    for (const HostArray& a : inputs) {
      // Columns: one column over 2^21 rows (ranges of rows merged where columns are fewer than
      // cores), three (a range of columns a thread), many short ones, and a small shape.
      for (const auto& [count, length] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
               {1, n}, {3, n / 3}, {std::uint64_t(1) << 20, 2}, {1000, 1000}, {5, 7}, {0, 4}})
        check_shape(a, dense(Problem::columns, count, length));
      for (const auto& [count, length] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
               {n, 1}, {1000, 2097}, {64, 4096}, {5, 7}})
        check_shape(a, dense(Problem::rows, count, length));
      Segmentation seg;
      seg.problem = Problem::segments;
      seg.offsets = skewed_offsets(1 << 12, n, 5);
      seg.shape = {1 << 12, n >> 12};
      check_shape(a, seg);
    }
  }
}

TEST_CASE("sum references with small accumulators decline what the general reference splits", "[reference][sum_reference]") {
  const HostArray a = make_input(DType::f32, std::uint64_t(1) << 21, 3);
  std::vector<Reference> out;
  CHECK_FALSE(sum_reference(a, dense(Problem::rows, 4, 1000), Op::max, out)); // sums only
  CHECK(out.empty());
  if (std::thread::hardware_concurrency() > 1) // one row of 2^21 elements: split across cores there
    CHECK_FALSE(sum_reference(a, dense(Problem::rows, 1, std::uint64_t(1) << 21), Op::sum, out));
  Segmentation arr = dense(Problem::rows, 1, 1000);
  arr.problem = Problem::array;
  CHECK_FALSE(sum_reference(a, arr, Op::sum, out));
}
