// tune --recorded: recorded call points grouped into the sweeps that tune exactly them, and the
// options that select each (as tune parses them).
#include <catch2/catch.hpp>

#include "tuner/cli.h"
#include "tuner/recorded.h"

using namespace reduce_tune;

namespace {

db::RecordedPoint point(const std::string& uuid, const std::string& model, DType d, Op op, Problem p, Shape s) {
  db::RecordedPoint r;
  r.device_uuid = uuid, r.device_name = model, r.dtype = d, r.op = op, r.problem = p, r.shape = s;
  r.grade = "related";
  return r;
}

} // namespace

TEST_CASE("recorded: points grouped by problem, dtype and op into sweeps of their shapes", "[record]") {
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  const std::vector<db::RecordedPoint> points = {
      point("GPU-a", h100, DType::f64, Op::max, Problem::array, {1, 1 << 20}),
      point("GPU-a", h100, DType::f64, Op::max, Problem::array, {1, 1 << 12}),
      point("GPU-b", h100, DType::f64, Op::max, Problem::array, {1, 1 << 12}), // same model: same point
      point("GPU-a", h100, DType::f32, Op::sum, Problem::columns, {4096, 16}),   // 16 rows x 4096 columns
      point("GPU-a", h100, DType::i32, Op::min, Problem::segments, {512, 0}),    // no lengths: unsweepable
      point("GPU-c", "NVIDIA A100", DType::f32, Op::sum, Problem::rows, {8, 8}),  // another GPU model
  };
  std::vector<db::RecordedPoint> unsweepable;
  const auto sweeps = recorded_sweeps(points, "GPU-a", h100, &unsweepable);
  REQUIRE(sweeps.size() == 2);
  REQUIRE(unsweepable.size() == 1);
  CHECK(unsweepable[0].problem == Problem::segments);
  // Ordered by problem: the array sweep first, its sizes smallest first, each once.
  CHECK(sweeps[0].problem == Problem::array);
  CHECK(sweeps[0].shapes == std::vector<Shape>{{1, 1 << 12}, {1, 1 << 20}});
  CHECK(sweeps[0].args() ==
        std::vector<std::string>{"--problem", "array", "--dtypes", "float64", "--ops", "max", "--sizes", "4096,1048576"});
  // Columns are given as rows x cols, which --shapes reads back as the recorded shape.
  const auto cols = sweeps[1].args();
  REQUIRE(cols.size() == 8);
  CHECK(cols[7] == "16x4096");
  CHECK(cli::parse_shapes(cols[7], Problem::columns) == std::vector<Shape>{{4096, 16}});
}
