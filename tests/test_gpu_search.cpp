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

TEST_CASE("search: segmented sums checked against the references from prefix sums and small accumulators, "
          "made ahead, each input made ahead and read back once",
          "[gpu][search]") {
  for (Problem problem : {Problem::rows, Problem::segments, Problem::columns}) {
    INFO(name(problem));
    SweepOptions o;
    o.problem = problem;
    o.dtypes = {DType::f32, DType::i32};
    o.ops = {Op::sum};
    // Three shapes of 2^16 elements share one input (rows and offsets: prefix sums), one of 64000
    // has its own (small accumulators).
    o.shapes = {{256, 256}, {16, 4096}, {4096, 16}, {64, 1000}};
    o.reps = 5;
    o.search = Strategy::guided;
    o.budget = *parse_budget("4");
    o.db_path = temp_db("guided.db");
    const SweepResult r = sweep(o);
    REQUIRE_FALSE(r.interrupted);
    REQUIRE_FALSE(r.measurements.empty());
    for (const auto& m : r.measurements) {
      INFO(m.key << " " << m.count << " x " << m.n << ": " << m.error);
      CHECK(m.valid); // every result matched its CPU reference
    }
    CHECK(r.times.points == 8);
    CHECK(r.times.input_checks == 4);  // two inputs a dtype, each checked once
    CHECK(r.times.inputs_hashed == 4); // by the GPU's hash: none was read back
    CHECK(r.times.inputs_ahead == 3);  // all but the first made while the one before was measured
    CHECK(r.times.prefix_points == (problem == Problem::columns ? 0u : 6u));
    // The 2^16 input's second and third shapes' references were made while the shape before was
    // measured (its first shape's: the 64000 input has no other shape to take it early in).
    CHECK(r.times.references_ahead == 4);
    // Offsets: each shape's layout (in one device buffer kept from shape to shape, whose count
    // grows and shrinks here), drawn with those references where they were made ahead.
    CHECK(r.times.layouts == (problem == Problem::segments ? 8u : 0u));
    CHECK(r.times.layouts_ahead == (problem == Problem::segments ? 4u : 0u));
    CHECK(r.times.layout_s <= r.times.input_s);
    std::filesystem::remove_all(std::filesystem::path(o.db_path).parent_path());
  }
}
