// The sweep the fast checks' GPU tests share (tests/test_gpu_fast_check.cpp,
// tests/test_gpu_fast_check_offsets.cpp): a guided one that compiles only what its search
// measures, each of whose measurements must be valid and decided by the GPU's fast pass.
#pragma once

#include "tuner/search.h"
#include "tuner/sweep.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace reduce_tune::testing {

/// The points `o` names (problem, dtypes, ops, shapes) swept guided at 2 measurements a point, in
/// a store of its own (removed after). Checks that the sweep ran to its end and measured, that
/// every measurement is valid, that every one was checked on the GPU and that none failed there
/// to pass on the CPU after; returns its result for the caller's own checks.
inline SweepResult gpu_checked_sweep(SweepOptions o) {
  std::string dir = (std::filesystem::temp_directory_path() / "rt-fast-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  o.reps = 3;
  o.search = Strategy::guided;
  o.budget = *parse_budget("2");
  o.lazy_compile = true; // only what the search measures
  o.db_path = dir + "/fast.db";
  const SweepResult r = sweep(o, {});
  std::filesystem::remove_all(dir);
  REQUIRE_FALSE(r.interrupted);
  REQUIRE_FALSE(r.measurements.empty());
  for (const auto& m : r.measurements) {
    INFO(m.key << " " << name(m.dtype) << " " << name(m.op) << ": " << m.error);
    CHECK(m.valid);
  }
  CHECK(r.times.gpu_checked == r.measurements.size());
  CHECK(r.times.cpu_after_gpu == 0);
  return r;
}

} // namespace reduce_tune::testing
