// A guided sweep on the GPU: each point measures at most its budget, every measurement checked as
// the exhaustive sweep checks it, and the progress counts the planned measurements.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "tuner/sweep.h"

#include <unistd.h>

#include <filesystem>
#include <map>

using namespace reduce_tune;

namespace {

std::string temp_db(const char* name) {
  std::string t = (std::filesystem::temp_directory_path() / "rt-search-XXXXXX").string();
  REQUIRE(mkdtemp(t.data()));
  return t + "/" + name;
}

} // namespace

TEST_CASE("search: a guided sweep keeps each point's budget", "[gpu][search]") {
  for (Problem problem : {Problem::array, Problem::rows}) {
    SweepOptions o;
    o.problem = problem;
    o.dtypes = {DType::f32};
    o.ops = {Op::sum};
    if (problem == Problem::array) o.sizes = {1u << 16, 1u << 20};
    else o.shapes = {{1024, 1000}, {64, 1u << 14}};
    o.reps = 5;
    o.search = Strategy::guided;
    o.budget = *parse_budget("6");
    o.db_path = temp_db("guided.db");
    std::size_t total = 0;
    const SweepResult r = sweep(o, [&](const Progress& p) { total = p.total; });
    REQUIRE_FALSE(r.interrupted);
    std::map<std::uint64_t, std::size_t> per_point;
    for (const auto& m : r.measurements) {
      ++per_point[m.count * (1ull << 32) + m.n];
      CHECK(m.valid); // the guided sweep checks as the exhaustive one does; these all pass
    }
    CHECK(per_point.size() == 2);
    for (const auto& [point, n] : per_point) CHECK(n <= 6);
    CHECK(total == 12);
    std::filesystem::remove_all(std::filesystem::path(o.db_path).parent_path());
  }
}
