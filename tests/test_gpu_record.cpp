// GPU tests of recording call points (Options::record): a call without an exact tuning notes its
// point once, in a store made for it; an exactly tuned call notes nothing; without the option
// nothing is written, not even a store; a user reduction's point is noted under its hash, and
// tune --recorded tunes it.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/driver.h"
#include "reduce_tune/reducer.h"
#include "reduce_tune/reduction.h"
#include "tests/cli_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/store_fixture.h"

#include <filesystem>
#include <vector>

using namespace reduce_tune;

namespace {

cuda::Buffer ones(std::uint64_t n) {
  const std::vector<float> host(n, 1.0f);
  cuda::Buffer b(n * sizeof(float));
  reduce_tune::cuda::upload_sync(b.get(), host.data(), n * sizeof(float));
  return b;
}

} // namespace

TEST_CASE("record: calls without an exact tuning note their point once, and tuned calls do not", "[gpu][record]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const std::string path = (dir.path / "tuning.db").string();
  const std::uint64_t k20 = 1ull << 20;
  cuda::Buffer in = ones(k20);
  cuda::Buffer out(64 * sizeof(float));

  SECTION("off: no store is made") {
    Options o;
    o.store_path = path;
    Reducer r(0, o);
    CHECK(r.sum(reinterpret_cast<const float*>(in.get()), 1000) == 1000.0f);
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("on, no store yet: made, each bucket noted once") {
    Options o;
    o.store_path = path;
    o.record = true;
    {
      Reducer r(0, o);
      CHECK(r.sum(reinterpret_cast<const float*>(in.get()), 1000) == 1000.0f);
      CHECK(r.sum(reinterpret_cast<const float*>(in.get()), 700) == 700.0f); // the same bucket [512, 1024)
      r.reduce_rows(DType::f32, Op::sum, reinterpret_cast<const float*>(in.get()), 64, 1000,
                    reinterpret_cast<float*>(out.get()));
      RT_CU(cuCtxSynchronize());
    }
    Reducer again(0, o); // another Reducer (a later process): the same point, still one row
    CHECK(again.sum(reinterpret_cast<const float*>(in.get()), 1000) == 1000.0f);
    const auto points = db::Store(path).recorded(g.info.uuid);
    REQUIRE(points.size() == 2);
    CHECK(points[0].problem == Problem::array);
    CHECK(points[0].shape == Shape{1, 512});
    CHECK(points[0].grade != "exact");
    CHECK(points[0].device_name == g.info.name);
    CHECK(points[1].problem == Problem::rows);
    CHECK(points[1].shape == Shape{64, 512});
  }
  SECTION("on, tuned exactly at the call's point: nothing noted") {
    reduce_tune::testing::write_gpu_store(path, g.info, {reduce_tune::testing::stored_row("vectorized.b512.u2.v2.g4.shfl.twopass",
                                                                DType::f32, Op::sum, 6.0)});
    Options o;
    o.store_path = path;
    o.record = true;
    Reducer r(0, o);
    CHECK(r.sum(reinterpret_cast<const float*>(in.get()), k20) == float(k20));
    CHECK(db::Store(path).recorded().empty());
  }
}

TEST_CASE("record: a user reduction's calls note their point under its hash, its description kept", "[gpu][record][user]") {
  const reduce_tune::testing::GpuContext g;
  const reduce_tune::testing::TempDir dir;
  const std::string path = (dir.path / "tuning.db").string();
  cuda::Buffer in = ones(64 * 1000);
  cuda::Buffer out(64 * sizeof(float));
  Reduction sq;
  sq.map = "x * x";
  sq.post = "a + 1"; // a reduction of its own: the rows' results tell it from a plain sum
  Options o;
  o.store_path = path;
  o.record = true;
  auto rows_call = [&](Reducer& r) {
    r.reduce_rows(sq, DType::f32, reinterpret_cast<const float*>(in.get()), 64, 1000, reinterpret_cast<float*>(out.get()));
    RT_CU(cuCtxSynchronize());
    std::vector<float> got(64);
    RT_CU(cuMemcpyDtoH(got.data(), out.get(), 64 * sizeof(float)));
    for (float x : got) REQUIRE(x == 1001.0f);
  };
  {
    Reducer r(0, o);
    rows_call(r);
    rows_call(r); // the same entry: noted once
  }
  db::Store s(path);
  const auto points = s.recorded(g.info.uuid);
  REQUIRE(points.size() == 1);
  CHECK(points[0].user == sq.hash());
  CHECK(points[0].op_key().name() == sq.name());
  CHECK(points[0].problem == Problem::rows);
  CHECK(points[0].shape == Shape{64, 512});
  CHECK(points[0].grade != "exact");
  // What tune --recorded runs it from: the description, by hash.
  const auto kept = s.reduction(sq.hash());
  REQUIRE(kept);
  CHECK(parse_reduction(kept->text).canonical() == sq.canonical());
  // tune --recorded tunes it from that description, under its hash, at the recorded shape.
  int rc = -1;
  const std::string log = reduce_tune::testing::run_command(
      reduce_tune::testing::cli() + " tune --recorded --device 0 --budget 3 --db '" + path + "'", &rc);
  INFO(log);
  CHECK(rc == 0);
  CHECK_THAT(log, Catch::Contains("--reduction"));
  const auto best = db::Store(path).best(g.info.uuid, DType::f32, db::OpKey::user(sq.hash()), Problem::rows,
                                         Shape{64, 512});
  REQUIRE(best);
  CHECK(best->m.valid);
  CHECK_FALSE(db::Store(path).best(g.info.uuid, DType::f32, Op::sum, Problem::rows, Shape{64, 512})); // not sum's
  {
    // Now exact for the reduction, and a new Reducer's rows with it are right.
    Reducer r(0, o);
    CHECK(r.config_for(sq, DType::f32, Problem::rows, Shape{64, 1000}).match == Match::exact);
    rows_call(r);
  }

  // Tuned exactly under its hash at the point: nothing more noted.
  const std::string tuned = (dir.path / "tuned.db").string();
  db::Measurement own = reduce_tune::testing::stored_row("rows_group.b256.w8.u2.v4.direct", DType::f32, Op::sum, 6.0,
                                                         Problem::rows, Shape{64, 512});
  own.user = sq.hash();
  reduce_tune::testing::write_gpu_store(tuned, g.info, {own});
  Options t = o;
  t.store_path = tuned;
  Reducer r(0, t);
  INFO(r.config_for(sq, DType::f32, Problem::rows, Shape{64, 1000}).note);
  REQUIRE(r.config_for(sq, DType::f32, Problem::rows, Shape{64, 1000}).match == Match::exact);
  rows_call(r);
  CHECK(db::Store(tuned).recorded().empty());
}
