// A user reduction tuned like a built-in op (SweepOptions::user, `reduce-tune tune --reduction`):
// swept into a temporary store, each measurement checked against the reduction's CPU evaluation,
// its rows and description stored under its hash; the Reducer's later lookup is then exact from
// those rows, and its results match the CPU evaluation. Without a CPU evaluation every
// measurement says that it was not checked; with supplied check data (tuner/check_data.h) every
// one is checked against it. test_gpu_main.cpp skips them without a GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/driver.h"
#include "kernels/user_op.h"
#include "reduce_tune/reducer.h"
#include "tests/fixtures.h"
#include "tuner/check_data.h"
#include "tuner/npy.h"
#include "tuner/reference.h"
#include "tuner/sweep.h"
#include "tuner/user_check.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace reduce_tune;
using reduce_tune::testing::TempDir;

namespace {

Reduction sum_of_squares(bool with_check) {
  Reduction r;
  r.map = "x * x";
  r.combine = "a + b";
  r.identity = "0";
  r.post = "a";
  if (with_check)
    r.check = [](const double* x, std::size_t n) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
      return s;
    };
  return r;
}

/// float32 values of `n` elements in [-1, 1), as bytes and as doubles.
std::vector<float> values(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = float(int((i * 2654435761u) % 2001) - 1000) / 1000.f;
  return v;
}

bool close(double got, double want) { return std::abs(got - want) <= 1e-4 * std::max(1.0, std::abs(want)); }

} // namespace

TEST_CASE("user reductions tuned: swept into a store, then looked up exactly from their own rows",
          "[gpu][user][tune]") {
  const TempDir dir;
  const Reduction r = sum_of_squares(true);
  const std::uint64_t n = std::uint64_t(1) << 20;
  const Shape rows_shape{1024, 1024};
  for (Problem problem : {Problem::array, Problem::rows}) {
    SweepOptions o;
    o.problem = problem;
    o.dtypes = {DType::f32};
    o.ops = {Op::sum};
    o.user = make_user_op(r);
    if (problem == Problem::array) o.sizes = {n};
    else o.shapes = {rows_shape};
    o.reps = 3;
    o.search = Strategy::guided;
    o.budget = *parse_budget("6");
    o.db_path = dir.file("tuned.db");
    const SweepResult res = sweep(o);
    REQUIRE_FALSE(res.interrupted);
    REQUIRE_FALSE(res.measurements.empty());
    for (const auto& m : res.measurements) {
      INFO(m.key << ": " << m.error);
      CHECK(m.valid); // checked against r.check
      CHECK(m.user == r.hash());
      CHECK(m.expected != kNotChecked);
    }
  }
  {
    db::Store s(dir.file("tuned.db"));
    const auto kept = s.reduction(r.hash());
    REQUIRE(kept);
    CHECK(kept->canonical == r.canonical());
    const std::string uuid = cuda::device_info(0).uuid;
    CHECK(s.best(uuid, DType::f32, db::OpKey::user(r.hash()), Problem::array, {1, n}));
    CHECK(s.best(uuid, DType::f32, db::OpKey::user(r.hash()), Problem::rows, rows_shape));
    CHECK_FALSE(s.best(uuid, DType::f32, Op::sum, Problem::array, {1, n})); // not sum's rows
  }

  cuda::Context ctx(0);
  Options opt;
  opt.store_path = dir.file("tuned.db");
  Reducer reducer(0, opt);
  const Choice c = reducer.config_for(r, DType::f32, Problem::array, {1, n});
  CHECK(c.match == Match::exact);
  CHECK_THAT(c.note, Catch::Contains(r.name()));
  const Choice cr = reducer.config_for(r, DType::f32, Problem::rows, rows_shape);
  CHECK(cr.match == Match::exact);

  // The tuned configurations run and agree with the CPU evaluation.
  const std::vector<float> x = values(n);
  std::vector<double> xd(x.begin(), x.end());
  cuda::Buffer d_in(n * 4), d_out(rows_shape.count * 4);
  reduce_tune::cuda::upload_sync(d_in.get(), x.data(), n * 4);
  reducer.reduce_async(r, DType::f32, reinterpret_cast<const void*>(d_in.get()), n,
                       reinterpret_cast<void*>(d_out.get()));
  RT_CU(cuCtxSynchronize());
  float got = 0;
  RT_CU(cuMemcpyDtoH(&got, d_out.get(), 4));
  CHECK(close(got, r.check(xd.data(), n)));
  reducer.reduce_rows(r, DType::f32, reinterpret_cast<const void*>(d_in.get()), rows_shape.count,
                      rows_shape.length, reinterpret_cast<void*>(d_out.get()));
  RT_CU(cuCtxSynchronize());
  std::vector<float> rows(rows_shape.count);
  RT_CU(cuMemcpyDtoH(rows.data(), d_out.get(), rows.size() * 4));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    bad += !close(rows[i], r.check(&xd[i * rows_shape.length], rows_shape.length));
  CHECK(bad == 0);
}

TEST_CASE("user reductions tuned without a CPU evaluation: every measurement says it was not checked",
          "[gpu][user][tune]") {
  const TempDir dir;
  SweepOptions o;
  o.dtypes = {DType::f32};
  o.ops = {Op::sum};
  o.user = make_user_op(sum_of_squares(false));
  o.sizes = {std::uint64_t(1) << 16};
  o.reps = 3;
  o.search = Strategy::guided;
  o.budget = *parse_budget("3");
  o.db_path = dir.file("unchecked.db");
  const SweepResult res = sweep(o);
  REQUIRE_FALSE(res.measurements.empty());
  for (const auto& m : res.measurements) {
    CHECK(m.valid);
    CHECK(m.expected == kNotChecked);
  }
  db::MeasurementFilter f;
  f.op = db::OpKey::user(o.user->hash);
  for (const auto& m : db::Store(o.db_path).measurements(res.device.uuid, f)) CHECK(m.expected == kNotChecked);
}

TEST_CASE("user reductions tuned on supplied check data: checked against it, and a wrong expected value fails",
          "[gpu][user][tune]") {
  // A reduction without a CPU evaluation (as from a file), checked by the supplied expected
  // results: right ones pass, the same plus 1 fail every measurement.
  const TempDir dir;
  const std::uint64_t n = 4096, rows = 333, cols = 77;
  const std::vector<float> x = values(rows * cols);
  for (bool wrong : {false, true})
    for (Problem problem : {Problem::array, Problem::columns}) {
      const std::string sub = dir.file(std::string(wrong ? "wrong-" : "right-") + std::string(name(problem)));
      std::filesystem::create_directories(sub);
      NpyArray in, e;
      in.dtype = DType::f32, e.dtype = DType::f64;
      std::vector<double> sums;
      if (problem == Problem::array) {
        in.shape = {n};
        double s = 0;
        for (std::uint64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
        sums = {s};
        e.shape = {};
      } else {
        in.shape = {rows, cols};
        sums.assign(cols, 0.0);
        for (std::uint64_t i = 0; i < rows; ++i)
          for (std::uint64_t j = 0; j < cols; ++j) sums[j] += double(x[i * cols + j]) * double(x[i * cols + j]);
        e.shape = {cols};
      }
      in.bytes.resize(in.elements() * 4);
      std::memcpy(in.bytes.data(), x.data(), in.bytes.size());
      NpyArray m = e; // a sum of squares is its own magnitude
      for (double& s : sums) s += wrong ? 1.0 : 0.0;
      e.bytes.resize(sums.size() * 8);
      std::memcpy(e.bytes.data(), sums.data(), e.bytes.size());
      m.bytes = e.bytes;
      if (wrong) { // the magnitudes stay right: the bound is not widened by the error
        for (double& s : sums) s -= 1.0;
        std::memcpy(m.bytes.data(), sums.data(), m.bytes.size());
      }
      write_npy(sub + "/x.npy", in);
      write_npy(sub + "/e.npy", e);
      write_npy(sub + "/m.npy", m);
      std::ofstream(sub + "/index.txt") << name(problem) << " " << (problem == Problem::array ? std::to_string(n) : "333x77")
                                        << " float32 x.npy e.npy m.npy\n";
      SweepOptions o;
      o.problem = problem;
      o.dtypes = {DType::f32};
      o.ops = {Op::sum};
      o.user = make_user_op(sum_of_squares(false));
      o.check_data = std::make_shared<CheckData>(read_check_data(sub));
      if (problem == Problem::array) o.sizes = {n};
      else o.shapes = {Shape{cols, rows}};
      o.reps = 3;
      o.search = Strategy::guided;
      o.budget = *parse_budget("4");
      o.db_path = dir.file("supplied.db");
      const SweepResult res = sweep(o);
      REQUIRE_FALSE(res.measurements.empty());
      for (const auto& m : res.measurements) {
        INFO(name(problem) << (wrong ? " wrong " : " right ") << m.key << ": " << m.error);
        CHECK(m.valid == !wrong);
        CHECK(m.expected != kNotChecked);
        if (wrong) CHECK_THAT(m.error, Catch::Contains("wrong result"));
      }
    }
}
