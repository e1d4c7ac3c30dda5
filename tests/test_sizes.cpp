// Size expressions.
#include <catch2/catch.hpp>

#include "tuner/sizes.h"

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
