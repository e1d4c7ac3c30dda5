// Configuration keys: round trip and parse errors.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"

using namespace reduce_tune;

TEST_CASE("every configuration of the space round-trips through its key", "[config]") {
  std::size_t n = 0;
  for (const Variant& v : variants())
    for (const Config& c : space(v)) {
      const std::string k = key(c);
      std::string why;
      auto back = parse_key(k, &why);
      INFO(k << ": " << why);
      REQUIRE(back);
      CHECK(*back == c);
      CHECK(key(*back) == k);
      ++n;
    }
  CHECK(n > 1000);
}

TEST_CASE("keys are written in a fixed order and parsed in any order", "[config]") {
  Config c{"unroll_warps", 512, 8, 1, 0, Tail::shfl, Finish::host};
  CHECK(key(c) == "unroll_warps.b512.u8.shfl.host");
  auto p = parse_key("unroll_warps.host.shfl.u8.b512");
  REQUIRE(p);
  CHECK(*p == c);
  CHECK(key(Config{"neighbored_gmem", 512, 1, 1, 0, Tail::none, Finish::host}) == "neighbored_gmem.b512.host");
  CHECK(key(Config{"vectorized", 256, 4, 4, 0, Tail::shfl, Finish::lastblock}) ==
        "vectorized.b256.u4.v4.g0.shfl.lastblock");
}

TEST_CASE("malformed keys are refused with a reason", "[config]") {
  std::string why;
  CHECK_FALSE(parse_key("nosuch.b256.host", &why));
  CHECK_THAT(why, Catch::Contains("unknown variant 'nosuch'"));
  CHECK_FALSE(parse_key("unrolling.b256.u4.frob", &why));
  CHECK_THAT(why, Catch::Contains("unknown token 'frob'"));
  CHECK_FALSE(parse_key("unrolling.b256.b512.u4.host", &why));
  CHECK_THAT(why, Catch::Contains("repeats"));
  CHECK_FALSE(parse_key("interleaved.b256.u4.host", &why));
  CHECK_THAT(why, Catch::Contains("takes no parameter 'u4'"));
  CHECK_FALSE(parse_key("unrolling.bx.host", &why));
  CHECK_FALSE(parse_key("", &why));
}

TEST_CASE("dtype, op, tail and finish names round-trip", "[config]") {
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64, DType::bf16, DType::f16})
    CHECK(parse_dtype(name(d)) == d);
  for (Op o : {Op::sum, Op::min, Op::max}) CHECK(parse_op(name(o)) == o);
  for (Tail t : {Tail::none, Tail::volatile_, Tail::syncwarp, Tail::shfl, Tail::redux}) CHECK(parse_tail(name(t)) == t);
  for (Finish f : {Finish::host, Finish::atomic, Finish::twopass, Finish::lastblock, Finish::firstblock}) CHECK(parse_finish(name(f)) == f);
  CHECK_FALSE(parse_dtype("float8"));
  CHECK(size_of(DType::f64) == 8);
  CHECK(size_of(DType::i32) == 4);
}
