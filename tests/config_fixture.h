// Configurations and targets as the catalogue's tests write them: a key parsed (the test stops
// where it does not parse, saying why), a GPU of compute capability `cc` with 132 SMs and 1024
// threads a block, and the reason a configuration is not valid there.
#pragma once

#include <catch2/catch.hpp>

#include "kernels/catalogue.h"

#include <string>

namespace reduce_tune::testing {

/// The configuration of key `k`.
inline Config cfg(const char* k) {
  std::string why;
  auto c = parse_key(k, &why);
  INFO(why);
  REQUIRE(c);
  return *c;
}

/// A GPU of compute capability `cc` (sm_90 as 90) reducing `d` by `op` for `p`.
inline Target sm(int cc, DType d, Op op, Problem p = Problem::array) {
  Target t{d, op, cc, 1024, 132, false};
  t.problem = p;
  return t;
}

/// Why key `k` is not valid for `t`; empty where it is.
inline std::string reason(const char* k, const Target& t) {
  return invalid_reason(cfg(k), t).value_or("");
}

} // namespace reduce_tune::testing
