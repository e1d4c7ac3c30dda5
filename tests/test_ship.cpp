// The shipped-tuning form of a store (reduce-tune ship, the fleet's merge step): one device per GPU
// model without its UUID or host, no failed checks, the `keep` fastest configurations of each point,
// best rows the fastest, a rollback-journal file the library reads in place.
#include <catch2/catch.hpp>

#include "db/ship.h"
#include "db/store.h"
#include "tests/fixtures.h"

#include <fstream>

using namespace reduce_tune;
using testing::TempDir;

namespace {

db::Measurement row(const std::string& key, double us, bool valid = true, Shape shape = {1, 1u << 20}) {
  db::Measurement m;
  m.key = key;
  m.variant = key.substr(0, key.find('.'));
  m.dtype = DType::f32, m.op = Op::sum, m.count = shape.count, m.n = shape.length;
  m.median_us = m.min_us = m.max_us = us;
  m.reps = 3;
  m.valid = valid;
  if (!valid) m.error = "wrong result";
  return m;
}

void tune(db::Store& s, const std::string& uuid, const std::string& host, const std::vector<db::Measurement>& rows) {
  db::DeviceRecord d = testing::h100_record(uuid);
  d.host = host;
  s.upsert_device(d);
  db::RunRecord r;
  r.device_uuid = uuid, r.tool_version = "test", r.nvrtc_version = "13.0", r.timing_method = "fixture";
  r.options = "reduce-tune tune --device all";
  const auto id = s.begin_run(r);
  s.add_measurements(id, rows);
  s.end_run(id, "done");
}

} // namespace

TEST_CASE("ship: two GPUs of one model become the model, failed checks and slow rows go", "[ship]") {
  TempDir t;
  const std::string from = t.file("fleet.db"), out = t.file("tuning.db");
  {
    db::Store s(from);
    std::vector<db::Measurement> a, b;
    for (int i = 0; i < 6; ++i) a.push_back(row("vectorized.b256.u" + std::to_string(i) + ".v4.g0.shfl.atomic", 10.0 + i));
    for (int i = 0; i < 6; ++i) b.push_back(row("vectorized.b512.u" + std::to_string(i) + ".v4.g0.shfl.atomic", 9.5 + 2 * i));
    b.push_back(row("interleaved.b128.host", 1.0, false)); // failed its check: never shipped
    tune(s, "GPU-aaaa", "node1", a);
    tune(s, "GPU-bbbb", "node2", b);
    db::RecordedPoint p; // a program's call point: the user's, named by GPU UUID
    p.device_uuid = "GPU-aaaa", p.device_name = "NVIDIA H100 80GB HBM3", p.grade = "builtin";
    s.record_point(p);
  }
  const db::ShipStats st = db::write_shipped(from, out, 4);
  CHECK(st.models == 1);
  CHECK(st.measurements == 4);
  CHECK(st.best == 1);
  db::Store shipped(out, db::Store::Mode::read_only);
  const auto devices = shipped.devices();
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].uuid == "model:NVIDIA H100 80GB HBM3");
  CHECK(devices[0].host.empty());
  const auto ms = shipped.measurements(devices[0].uuid);
  REQUIRE(ms.size() == 4);
  std::vector<double> times;
  for (const auto& m : ms) {
    CHECK(m.valid);
    times.push_back(m.median_us);
  }
  std::sort(times.begin(), times.end());
  CHECK(times == std::vector<double>{9.5, 10.0, 11.0, 11.5});
  const auto best = shipped.best(devices[0].uuid, DType::f32, Op::sum, Problem::array, {1, 1u << 20});
  REQUIRE(best);
  CHECK(best->m.key == "vectorized.b512.u0.v4.g0.shfl.atomic");
  CHECK(shipped.runs().size() == 2); // the provenance of both
  CHECK(shipped.recorded().empty());  // no call points, no GPU UUIDs
  // A rollback journal: the file alone is the database (the library embeds it).
  std::ifstream f(out, std::ios::binary);
  char header[20] = {};
  f.read(header, sizeof header);
  CHECK(header[18] == 1); // file format write version 1: legacy (not WAL)
  // The source is left as it was.
  CHECK(db::Store(from).devices().size() == 2);
}

TEST_CASE("ship: refuses a missing store and keep below 1, writing nothing", "[ship]") {
  TempDir t;
  CHECK_THROWS_WITH(db::write_shipped(t.file("none.db"), t.file("out.db")), Catch::Contains("no such file"));
  { db::Store s(t.file("s.db")); }
  CHECK_THROWS(db::write_shipped(t.file("s.db"), t.file("out.db"), 0));
  CHECK_FALSE(std::filesystem::exists(t.file("out.db")));
}

TEST_CASE("ship: with a margin, a later run replaces a point's choice only where it measured it slower by more", "[ship]") {
  TempDir t;
  const std::string from = t.file("fleet.db"), out = t.file("tuning.db");
  const Shape a{1, 1u << 20}, b{1, 1u << 22}, c{1, 1u << 24};
  {
    db::Store s(from);
    // The first sweep's choices: X at a and b, P at c.
    tune(s, "GPU-aaaa", "node1", {row("x.b256", 10.0, true, a), row("y.b256", 10.4, true, a),
                                  row("x.b256", 20.0, true, b), row("p.b256", 30.0, true, c)});
    // A later sweep (another day: its times run higher): at a it measured X 3 % slower than Y,
    // within the margin; at b 10 % slower than Z; at c it did not measure P, and its best is
    // slower than P's own time.
    tune(s, "GPU-aaaa", "node1", {row("x.b256", 10.3, true, a), row("y.b256", 10.0, true, a),
                                  row("x.b256", 22.0, true, b), row("z.b256", 20.0, true, b),
                                  row("q.b256", 31.0, true, c), row("r.b256", 32.0, true, c)});
  }
  const auto best_key = [&](const std::string& file, Shape s) {
    db::Store shipped(file, db::Store::Mode::read_only);
    const auto r = shipped.best("model:NVIDIA H100 80GB HBM3", DType::f32, Op::sum, Problem::array, s);
    REQUIRE(r);
    return r->m.key;
  };
  SECTION("5 %") {
    db::write_shipped(from, out, 1, 0.05);
    CHECK(best_key(out, a) == "x.b256"); // kept: 3 % is noise
    CHECK(best_key(out, b) == "z.b256"); // replaced: measured side by side, 10 % slower
    CHECK(best_key(out, c) == "p.b256"); // kept: no time of P in the later run, which is slower
    // The choice's measurement is kept beside the fastest (keep 1: y at a is the fastest).
    db::Store shipped(out, db::Store::Mode::read_only);
    CHECK(shipped.measurements("model:NVIDIA H100 80GB HBM3").size() == 4);
  }
  SECTION("0 %: any run's faster best replaces the choice it measured") {
    db::write_shipped(from, out, 1, 0.0);
    CHECK(best_key(out, a) == "y.b256");
    CHECK(best_key(out, b) == "z.b256");
    CHECK(best_key(out, c) == "p.b256");
  }
  SECTION("no margin: the fastest of any run") {
    db::write_shipped(from, out, 1);
    CHECK(best_key(out, a) == "x.b256"); // 10.0 of the first run against 10.0 of the second: the first
    CHECK(best_key(out, b) == "x.b256"); // 20.0 of the first run
    CHECK(best_key(out, c) == "p.b256");
  }
  CHECK_THROWS_WITH(db::write_shipped(from, out, 1, 1.0), Catch::Contains("below 100"));
}

TEST_CASE("ship: what supersede ships keeps its best rows when merged or shipped again", "[ship]") {
  TempDir t;
  const std::string from = t.file("fleet.db"), out = t.file("tuning.db"), again = t.file("again.db");
  const Shape a{1, 1u << 20}, b{1, 1u << 22};
  {
    db::Store s(from);
    tune(s, "GPU-aaaa", "node1", {row("x.b256", 10.0, true, a), row("y.b256", 10.4, true, a),
                                  row("x.b256", 20.0, true, b), row("w.b256", 21.0, true, b)});
    // Within the margin at a (y measured faster, not shipped); past it at b (x replaced by z).
    tune(s, "GPU-aaaa", "node1", {row("x.b256", 10.3, true, a), row("y.b256", 9.9, true, a),
                                  row("x.b256", 22.0, true, b), row("z.b256", 19.0, true, b)});
  }
  db::write_shipped(from, out, 8, 0.05);
  const auto keys = [](const std::string& file) {
    db::Store st(file, db::Store::Mode::read_only);
    std::vector<std::string> k;
    for (Shape s : {Shape{1, 1u << 20}, Shape{1, 1u << 22}})
      k.push_back(st.best("model:NVIDIA H100 80GB HBM3", DType::f32, Op::sum, Problem::array, s)->m.key);
    return k;
  };
  CHECK(keys(out) == std::vector<std::string>{"x.b256", "z.b256"});
  {
    db::Store st(out, db::Store::Mode::read_only);
    for (const auto& m : st.measurements("model:NVIDIA H100 80GB HBM3"))
      if (m.n == a.length) CHECK(m.median_us >= 10.0); // y's 9.9, faster than the choice (x, 10.0): not shipped
  }
  db::write_shipped(out, again, 8);
  CHECK(keys(again) == keys(out));
  { db::Store merged(t.file("merged.db")); merged.merge_from(out); }
  CHECK(keys(t.file("merged.db")) == keys(out));
  db::write_shipped(out, again, 8, 0.05);
  CHECK(keys(again) == keys(out));
}
