// GPU tests of tuning on first use (Options::autotune): a first call at a point without an exact
// tuning searches it in the worker process, stores it and runs with it, its result checked against
// the CPU; later processes find it; a capturing call is never tuned (it records the point); a
// kernel that faults while tuning is recorded as failed and the call still succeeds; a user
// reduction's point is tuned under its hash. Each prints the first call's time, the tuning's.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/driver.h"
#include "reduce_tune/reducer.h"
#include "runtime/autotune.h"
#include "tests/cli_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/graph_fixture.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace reduce_tune;

namespace {

using testing::EnvVar;

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

/// n floats in [0, 1) on the device, and their sum in double precision.
struct Input {
  std::vector<float> host;
  cuda::Buffer dev;
  double sum = 0;
  explicit Input(std::uint64_t n, unsigned seed = 7) : host(n), dev(n * sizeof(float)) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& x : host) sum += double(x = u(gen));
    reduce_tune::cuda::upload_sync(dev.get(), host.data(), n * sizeof(float));
  }
  const float* ptr() const { return reinterpret_cast<const float*>(dev.get()); }
};

/// A float32 sum of non-negative terms is within n * 2^-23 of the exact one, relative; any
/// summation order the kernels take stays far inside it.
bool close(double got, double want, std::uint64_t n) {
  return std::abs(got - want) <= double(n) * std::ldexp(1.0, -23) * want + 1e-6;
}

/// The autotune runs of the store (the worker's provenance).
std::size_t first_use_runs(const db::Store& s, const std::string& status) {
  std::size_t k = 0;
  for (const auto& r : s.runs()) k += r.options.find("autotune-worker") != std::string::npos && r.status == status;
  return k;
}

/// Whether `c` serves from this GPU's own tuning at `bucket`, the shape a call is looked up and
/// tuned at: Choice grades a call of another size in the bucket nearest_size (relative to the
/// call), and only this GPU's rows in the user's store grade exact or nearest_size.
bool tuned_here(const Choice& c, Shape bucket) {
  return (c.match == Match::exact || c.match == Match::nearest_size) && c.tuned_shape == bucket;
}

using testing::cli;

/// Points the worker at the CLI of this build, the shipped tuning kept (its seeds).
struct WorkerEnv {
  EnvVar worker{"REDUCE_TUNE_WORKER", cli()};
  EnvVar on{"REDUCE_TUNE_AUTOTUNE", std::nullopt};
  WorkerEnv() { detail::stop_autotune_worker(); }
  ~WorkerEnv() { detail::stop_autotune_worker(); }
};

} // namespace

TEST_CASE("autotune: a first call tunes its point, runs checked, and later processes find it", "[gpu][autotune]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = 3 * (1ull << 20) + 17; // bucket [2^21, 2^22): looked up, and tuned, at 2^21
  const Input in(n);
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  CHECK(r.config_for(DType::f32, Op::sum, n).match != Match::exact);

  const auto t0 = Clock::now();
  const float first = r.sum(in.ptr(), n);
  const double first_ms = ms_since(t0);
  CHECK(close(first, in.sum, n));
  const Choice c = r.config_for(DType::f32, Op::sum, n);
  INFO(c.note);
  CHECK(tuned_here(c, Shape{1, 1ull << 21}));
  CHECK_THAT(c.note, Catch::Contains("tuned on first use"));

  const auto t1 = Clock::now();
  const float second = r.sum(in.ptr(), n);
  const double second_ms = ms_since(t1);
  CHECK(close(second, in.sum, n));

  db::Store s(path);
  const auto best = s.best(g.info.uuid, DType::f32, Op::sum, Problem::array, Shape{1, 1ull << 21});
  REQUIRE(best);
  CHECK(best->m.valid);
  CHECK(key(c.config) == best->m.key);
  const auto ms = s.measurements(g.info.uuid, {DType::f32, Op::sum, Problem::array, Shape{1, 1ull << 21}});
  CHECK(first_use_runs(s, "done") == 1);
  std::printf("first-use tuning of float32 sum n=2^21 on %s: first call %.1f ms (%s), second call %.3f ms, "
              "%zu measurements\n",
              g.info.name.c_str(), first_ms, c.note.c_str(), second_ms, ms.size());

  // Another Reducer (as another process would) finds the point tuned and measures nothing.
  {
    Reducer again(0, o);
    CHECK(close(again.sum(in.ptr(), n), in.sum, n));
    CHECK(tuned_here(again.config_for(DType::f32, Op::sum, n), Shape{1, 1ull << 21}));
    CHECK(first_use_runs(db::Store(path), "done") == 1);
  }
  // Another process: the CLI's lookup, as any program's, grades the point exact.
  const std::string out = testing::run_command(cli() + " query --lookup --uuid " + g.info.uuid +
                                               " --dtype float32 --op sum --n " + std::to_string(n) + " --db '" +
                                               path + "'");
  INFO(out);
  CHECK_THAT(out, Catch::Contains("exact"));
  CHECK_THAT(out, Catch::Contains(key(c.config)));
}

TEST_CASE("autotune: several points in one process, rows and an async call, each checked", "[gpu][autotune]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t rows = 512, cols = 3000; // looked up at 512 x 2048
  const Input in(rows * cols, 11);
  cuda::Buffer out(rows * sizeof(float));
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  const auto t0 = Clock::now();
  r.reduce_rows(DType::f32, Op::sum, in.ptr(), rows, cols, reinterpret_cast<float*>(out.get()));
  RT_CU(cuCtxSynchronize());
  const double ms = ms_since(t0);
  std::vector<float> got(rows);
  RT_CU(cuMemcpyDtoH(got.data(), out.get(), rows * sizeof(float)));
  for (std::uint64_t i = 0; i < rows; ++i) {
    double want = 0;
    for (std::uint64_t j = 0; j < cols; ++j) want += in.host[i * cols + j];
    INFO("row " << i);
    REQUIRE(close(got[i], want, cols));
  }
  const Choice c = r.config_for(DType::f32, Op::sum, Problem::rows, Shape{rows, cols});
  INFO(c.note);
  CHECK(tuned_here(c, Shape{512, 2048}));
  std::printf("first-use tuning of float32 sum rows 512 x 2048 on %s: first call %.1f ms (%s)\n", g.info.name.c_str(),
              ms, c.note.c_str());
  // An async call with a device result at a new 1-D point: tuned among what it may run.
  const std::uint64_t n = 1ull << 16;
  cuda::Buffer one(sizeof(float));
  r.reduce_async(DType::f32, Op::sum, in.ptr(), n, reinterpret_cast<float*>(one.get()));
  float sum = 0;
  RT_CU(cuCtxSynchronize());
  RT_CU(cuMemcpyDtoH(&sum, one.get(), sizeof sum));
  double want = 0;
  for (std::uint64_t i = 0; i < n; ++i) want += in.host[i];
  CHECK(close(sum, want, n));
  const Choice a = r.async_config_for(DType::f32, Op::sum, n);
  CHECK(tuned_here(a, Shape{1, 1ull << 16}));
  CHECK(a.config.finish != Finish::host);
}

TEST_CASE("autotune: a capturing call is not tuned, it records the point, and the next call tunes it", "[gpu][autotune][graphs]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = (1ull << 19) + 3; // bucket 2^19
  const Input in(n, 5);
  cuda::Buffer out(2 * sizeof(float));
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  const cuda::Stream cs;
  reduce_tune::testing::Graph graph;
  RT_CU(cuStreamBeginCapture(cs.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
  r.reduce_async(DType::f32, Op::sum, in.ptr(), n, reinterpret_cast<float*>(out.get()), cs.get());
  RT_CU(cuStreamEndCapture(cs.get(), &graph.graph));
  REQUIRE(graph.graph != nullptr);
  {
    db::Store s(path);
    CHECK(s.measurements(g.info.uuid).empty()); // nothing measured inside the capture
    const auto points = s.recorded(g.info.uuid);
    REQUIRE(points.size() == 1);
    CHECK(points[0].shape == Shape{1, 1ull << 19});
    CHECK(points[0].grade != "exact");
  }
  RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  RT_CU(cuGraphLaunch(graph.exec, cs.get()));
  cs.synchronize();
  float captured = 0;
  RT_CU(cuMemcpyDtoH(&captured, out.get(), sizeof captured));
  CHECK(close(captured, in.sum, n));
  // The next (eager) call at the point tunes it.
  r.reduce_async(DType::f32, Op::sum, in.ptr(), n, reinterpret_cast<float*>(out.get() + sizeof(float)), cs.get());
  cs.synchronize();
  float eager = 0;
  RT_CU(cuMemcpyDtoH(&eager, out.get() + sizeof(float), sizeof eager));
  CHECK(close(eager, in.sum, n));
  CHECK(tuned_here(r.async_config_for(DType::f32, Op::sum, n), Shape{1, 1ull << 19}));
  CHECK(db::Store(path).best(g.info.uuid, DType::f32, Op::sum, Problem::array, Shape{1, 1ull << 19}));
  // The graph still replays (its kernel is its own).
  RT_CU(cuGraphLaunch(graph.exec, cs.get()));
  cs.synchronize();
  RT_CU(cuMemcpyDtoH(&captured, out.get(), sizeof captured));
  CHECK(close(captured, in.sum, n));
}

TEST_CASE("autotune: a kernel that faults while tuning is recorded as failed and the call succeeds", "[gpu][autotune][fault]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  // The worker's catalogue holds the test variants, and its search measures the faulting one first.
  const EnvVar variants("REDUCE_TUNE_TEST_VARIANTS", "1");
  const EnvVar first("REDUCE_TUNE_TEST_AUTOTUNE_FIRST", "test_fault.b256.atomic");
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = (1ull << 18) + 5;
  const Input in(n, 3);
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  const auto t0 = Clock::now();
  const float got = r.sum(in.ptr(), n); // must not throw
  const double ms = ms_since(t0);
  CHECK(close(got, in.sum, n));
  db::Store s(path);
  bool recorded = false;
  for (const auto& m : s.measurements(g.info.uuid))
    if (m.key == "test_fault.b256.atomic") recorded = !m.valid && !m.error.empty();
  CHECK(recorded);
  const Choice c = r.config_for(DType::f32, Op::sum, n);
  INFO(c.note);
  CHECK(tuned_here(c, Shape{1, 1ull << 18})); // the new worker resumed the point past the faulting kernel
  CHECK(c.config.variant != "test_fault");
  CHECK(first_use_runs(s, "failed") >= 1);
  std::printf("first-use tuning through a faulting kernel: first call %.1f ms (%s)\n", ms, c.note.c_str());
  // The caller's context is untouched: another call works.
  CHECK(close(r.sum(in.ptr(), n), in.sum, n));
}

TEST_CASE("autotune: a kernel that hangs while tuning is killed, recorded as failed, and the call succeeds",
          "[gpu][autotune][fault]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const EnvVar variants("REDUCE_TUNE_TEST_VARIANTS", "1");
  const EnvVar first("REDUCE_TUNE_TEST_AUTOTUNE_FIRST", "test_hang.b32.lastblock");
  const EnvVar timeout("REDUCE_TUNE_AUTOTUNE_TIMEOUT_S", "3");
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = (1ull << 17) + 1;
  const Input in(n, 4);
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  const auto t0 = Clock::now();
  CHECK(close(r.sum(in.ptr(), n), in.sum, n));
  const double ms = ms_since(t0);
  db::Store s(path);
  bool recorded = false;
  for (const auto& m : s.measurements(g.info.uuid))
    if (m.key == "test_hang.b32.lastblock") recorded = !m.valid && m.error.find("timed out") != std::string::npos;
  CHECK(recorded);
  CHECK(s.claims().empty()); // the killed worker's claim let go
  const Choice c = r.config_for(DType::f32, Op::sum, n);
  INFO(c.note);
  CHECK(tuned_here(c, Shape{1, 1ull << 17}));
  std::printf("first-use tuning through a hanging kernel (3 s time-out): first call %.1f ms (%s)\n", ms,
              c.note.c_str());
}

TEST_CASE("autotune: no worker: the call runs with what the lookup has and records the point", "[gpu][autotune]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const EnvVar worker("REDUCE_TUNE_WORKER", (dir.path / "missing").string());
  detail::stop_autotune_worker();
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = 1ull << 20;
  const Input in(n, 9);
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  CHECK(close(r.sum(in.ptr(), n), in.sum, n));
  const Choice c = r.config_for(DType::f32, Op::sum, n);
  CHECK(c.match != Match::exact);
  CHECK_THAT(c.note, Catch::Contains("not tuned on first use"));
  const auto points = db::Store(path).recorded(g.info.uuid);
  REQUIRE(points.size() == 1);
  CHECK(points[0].shape == Shape{1, n});
  detail::stop_autotune_worker();
}

TEST_CASE("autotune: $REDUCE_TUNE_AUTOTUNE=1 leaves a Reducer with autotune_from_env false untuned", "[gpu][autotune]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const WorkerEnv env;
  const EnvVar on("REDUCE_TUNE_AUTOTUNE", "1");
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = 1ull << 18;
  const Input in(n, 11);
  Options o;
  o.store_path = path;
  o.autotune_from_env = false; // the Python package's reducer for the reductions it tunes itself
  {
    Reducer r(0, o);
    CHECK(close(r.sum(in.ptr(), n), in.sum, n));
    CHECK(r.config_for(DType::f32, Op::sum, n).match != Match::exact);
  }
  CHECK_FALSE(std::filesystem::exists(path)); // nothing searched, nothing recorded
  // The same options, the environment heard: the call tunes its point.
  o.autotune_from_env = true;
  Reducer tuned(0, o);
  CHECK(close(tuned.sum(in.ptr(), n), in.sum, n));
  CHECK(tuned.config_for(DType::f32, Op::sum, n).match == Match::exact);
}

TEST_CASE("autotune: a user reduction's first call tunes its point under its hash, and the next is served exact",
          "[gpu][autotune][user]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = (1ull << 20) + 9; // bucket 2^20
  const Input in(n, 21);
  double want = 0;
  for (float x : in.host) want += double(x) * double(x);
  Reduction sq; // a sum of squares, with no CPU evaluation: the worker cannot check it
  sq.map = "x * x";
  const std::uint64_t hash = sq.hash();
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  CHECK(r.config_for(sq, DType::f32, Problem::array, Shape{1, n}).match != Match::exact);

  cuda::Buffer out(2 * sizeof(float));
  auto run = [&](int slot) {
    r.reduce_async(sq, DType::f32, in.ptr(), n, reinterpret_cast<float*>(out.get() + slot * sizeof(float)));
    RT_CU(cuCtxSynchronize());
    float got = 0;
    RT_CU(cuMemcpyDtoH(&got, out.get() + slot * sizeof(float), sizeof got));
    return got;
  };
  const auto t0 = Clock::now();
  const float first = run(0);
  const double first_ms = ms_since(t0);
  CHECK(close(first, want, n)); // non-negative terms: the bound of a float32 sum holds

  db::Store s(path);
  const auto best = s.best(g.info.uuid, DType::f32, db::OpKey::user(hash), Problem::array, Shape{1, 1ull << 20});
  REQUIRE(best);
  CHECK(best->user == hash);
  CHECK(best->m.valid);
  CHECK_THAT(best->m.expected, Catch::Contains("not checked")); // as tune --reduction says of it
  CHECK(s.reduction(hash));                                      // its description kept by hash
  CHECK_FALSE(s.best(g.info.uuid, DType::f32, Op::sum, Problem::array, Shape{1, 1ull << 20})); // not sum's
  CHECK(first_use_runs(s, "done") == 1);
  // The entry took the new exact tuning: an entry served without one would have been recorded.
  CHECK(s.recorded(g.info.uuid).empty());
  const Choice c = r.config_for(sq, DType::f32, Problem::array, Shape{1, n});
  INFO(c.note);
  CHECK(tuned_here(c, Shape{1, 1ull << 20}));
  CHECK(key(c.config) == best->m.key);

  const auto t1 = Clock::now();
  CHECK(close(run(1), want, n));
  const double second_ms = ms_since(t1);
  CHECK(first_use_runs(db::Store(path), "done") == 1); // nothing tuned again
  // Another Reducer (a later process) is served exact from the store and measures nothing.
  {
    Reducer again(0, o);
    CHECK(tuned_here(again.config_for(sq, DType::f32, Problem::array, Shape{1, n}), Shape{1, 1ull << 20}));
    cuda::Buffer one(sizeof(float));
    again.reduce_async(sq, DType::f32, in.ptr(), n, reinterpret_cast<float*>(one.get()));
    RT_CU(cuCtxSynchronize());
    float got = 0;
    RT_CU(cuMemcpyDtoH(&got, one.get(), sizeof got));
    CHECK(close(got, want, n));
    CHECK(first_use_runs(db::Store(path), "done") == 1);
  }
  std::printf("first-use tuning of %s (sum of squares) float32 n=2^20 on %s: first call %.1f ms (%s), second call "
              "%.3f ms\n",
              sq.name().c_str(), g.info.name.c_str(), first_ms, c.note.c_str(), second_ms);
}

TEST_CASE("autotune: a user reduction that does not compile throws its log, and tuning never hides it",
          "[gpu][autotune][user]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const WorkerEnv env;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t n = 1ull << 16;
  const Input in(n, 2);
  Reduction broken;
  broken.map = "x * not_declared_anywhere";
  Options o;
  o.store_path = path;
  o.autotune = true;
  Reducer r(0, o);
  cuda::Buffer out(sizeof(float));
  CHECK_THROWS_AS(r.reduce_async(broken, DType::f32, in.ptr(), n, reinterpret_cast<float*>(out.get())),
                  ReductionError);
  // Again: it throws again, and the point is not sent to the worker again.
  CHECK_THROWS_AS(r.reduce_async(broken, DType::f32, in.ptr(), n, reinterpret_cast<float*>(out.get())),
                  ReductionError);
  // The worker answered without measuring: no row of it, no run left running, its one run failed.
  db::Store s(path);
  CHECK(first_use_runs(s, "failed") == 1);
  db::MeasurementFilter f;
  f.op = db::OpKey::user(broken.hash());
  CHECK(s.measurements(g.info.uuid, f).empty());
  CHECK(first_use_runs(s, "running") == 0);
  CHECK(s.claims().empty());
  // The reducer still serves other calls, tuned on first use as ever.
  Reduction sq;
  sq.map = "x * x";
  double want = 0;
  for (float x : in.host) want += double(x) * double(x);
  r.reduce_async(sq, DType::f32, in.ptr(), n, reinterpret_cast<float*>(out.get()));
  RT_CU(cuCtxSynchronize());
  float got = 0;
  RT_CU(cuMemcpyDtoH(&got, out.get(), sizeof got));
  CHECK(close(got, want, n));
}
