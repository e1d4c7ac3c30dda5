// Size expressions.
#include <catch2/catch.hpp>

#include "tuner/sizes.h"
#include "tuner/sweep.h"

using namespace reduce_tune;

TEST_CASE("sizes in the forms users write", "[sizes]") {
  CHECK(parse_size("16777216") == 16777216u);
  CHECK(parse_size("2^24") == 16777216u);
  CHECK(parse_size("16M") == 16777216u);
  CHECK(parse_size("16m") == 16777216u);
  CHECK(parse_size("1K") == 1024u);
  CHECK(parse_size("3*2^22+5") == 3u * (1u << 22) + 5);
  CHECK(parse_size("2^20+1") == (1u << 20) + 1);
  CHECK(parse_size("3*2^32") == 3ull << 32);
  CHECK(parse_size("2^40") == 1ull << 40);
  auto list = parse_sizes("2^10,1000,4G");
  REQUIRE(list);
  CHECK(*list == std::vector<std::uint64_t>{1024, 1000, 4ull << 30});
  CHECK(format_size(1 << 20) == "2^20");
  CHECK(format_size(1000) == "1000");
}

TEST_CASE("malformed sizes are refused with a reason", "[sizes]") {
  for (const char* bad : {"2^x", "-5", "1e99", "0", "", "2^41", "99999999999999999999", "16Q", "2^",
                          "3*", "+4", "1.5M", "2^24,", "0*5"}) {
    std::string why;
    INFO(bad);
    CHECK_FALSE(parse_size(bad, &why));
    CHECK_THAT(why, Catch::Contains("is not a size"));
  }
  std::string why;
  CHECK_FALSE(parse_sizes("2^10,,2^12", &why));
}

TEST_CASE("three times a power of two prints as it is written", "[sizes]") {
  CHECK(format_size(3u << 20) == "3*2^20");
  CHECK(parse_size(format_size(3u << 20)) == 3u << 20);
  CHECK(format_size(3) == "3");
  CHECK(format_size((3u << 20) + 17) == "3145745");
}

TEST_CASE("refine points lie between swept sizes at most 4x apart, up to 2^23", "[sizes][sweep]") {
  const auto p = refine_points({1u << 12, 1u << 10, 1u << 14, 1u << 12});
  const std::vector<RefinePoint> want{{3u << 9, 1u << 10, 1u << 12}, {1u << 11, 1u << 10, 1u << 12},
                                      {3u << 10, 1u << 10, 1u << 12}, {3u << 11, 1u << 12, 1u << 14},
                                      {1u << 13, 1u << 12, 1u << 14}, {3u << 12, 1u << 12, 1u << 14}};
  CHECK(p == want);
  // More than 4x apart: none; odd sizes: the points strictly between.
  CHECK(refine_points({1u << 10, (1u << 12) + 1}).empty());
  CHECK(refine_points({1000, 2000}) == std::vector<RefinePoint>{{1024, 1000, 2000}, {1536, 1000, 2000}});
  // None above kRefineMax.
  for (const RefinePoint& r : refine_points(default_sizes())) {
    CHECK(r.n <= kRefineMax);
    CHECK(r.below < r.n);
    CHECK(r.n < r.above);
  }
  CHECK(refine_points(default_sizes()).size() == 20); // 3 in each gap from 2^10 to 2^24, less 3*2^22
}

TEST_CASE("the default sweep refines; explicit sizes are exactly those asked for", "[sizes][sweep]") {
  SweepOptions o;
  CHECK(refine_finalists(o) == kDefaultRefine);
  CHECK(measured_sizes(o).size() == default_sizes().size() + 20);
  o.sizes = {1u << 20, 1u << 22};
  CHECK(refine_finalists(o) == 0);
  CHECK(measured_sizes(o) == o.sizes);
  o.refine = 2;
  CHECK(measured_sizes(o) == std::vector<std::uint64_t>{1u << 20, 1u << 22, 3u << 19, 1u << 21, 3u << 20});
}

TEST_CASE("finalists are the k fastest valid measurements at each neighbour", "[sweep]") {
  std::vector<db::Measurement> ms;
  auto add = [&](std::string key, std::uint64_t n, double us, bool valid = true, std::string op = "sum") {
    db::Measurement m;
    m.key = std::move(key), m.n = n, m.median_us = us, m.valid = valid;
    m.dtype = "int32", m.op = std::move(op);
    ms.push_back(m);
  };
  add("a", 1024, 5), add("b", 1024, 3), add("c", 1024, 1, false), add("d", 1024, 4);
  add("a", 4096, 9), add("e", 4096, 2), add("f", 4096, 1, true, "min");
  CHECK(finalists(ms, "int32", "sum", {1024, 4096}, 2) == std::set<std::string>{"b", "d", "e", "a"});
  CHECK(finalists(ms, "int32", "sum", {1024}, 1) == std::set<std::string>{"b"});
  CHECK(finalists(ms, "int32", "min", {1024, 4096}, 5) == std::set<std::string>{"f"});
  CHECK(finalists(ms, "float32", "sum", {1024}, 5).empty());
  CHECK(finalists(ms, "int32", "sum", {1024}, 0).empty());
}
