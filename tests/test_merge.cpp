// Tests of bringing stores together and of the published table (db/store.cpp: merge_from,
// import_published, migration 2).
#include <catch2/catch.hpp>

#include "db/store.h"
#include "tests/fixtures.h"
#include "tests/sqlite_fixture.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

using namespace reduce_tune;
using namespace reduce_tune::db;
using reduce_tune::testing::raw_exec;
namespace fs = std::filesystem;

namespace {

using reduce_tune::testing::TempDir;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every file of the directory (a store and its -wal/-shm side files), name -> bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out[e.path().filename().string()] = bytes_of(e.path());
  return out;
}

/// Turns a store of this build into one of schema 2, as the code before segmented problems wrote
/// it: no problem or count columns, best keyed by (device, dtype, op, n).
void downgrade_to_v2(const std::string& path) {
  raw_exec(path, R"sql(
DROP TABLE IF EXISTS recorded;
DROP TABLE IF EXISTS claims;
DROP INDEX measurements_lookup;
ALTER TABLE measurements DROP COLUMN problem;
ALTER TABLE measurements DROP COLUMN count;
CREATE INDEX measurements_lookup ON measurements (device_uuid, dtype, op, n);
CREATE TABLE best_v2 (
  device_uuid TEXT NOT NULL REFERENCES devices (uuid),
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  n INTEGER NOT NULL,
  measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  PRIMARY KEY (device_uuid, dtype, op, n)
) WITHOUT ROWID;
INSERT INTO best_v2 SELECT device_uuid, dtype, op, n, measurement_id FROM best;
DROP TABLE best;
ALTER TABLE best_v2 RENAME TO best;
PRAGMA user_version = 2;
PRAGMA journal_mode = DELETE;
)sql");
}

DeviceRecord gpu(const std::string& uuid, const std::string& name, const std::string& host) {
  DeviceRecord d = reduce_tune::testing::h100_record(uuid);
  d.name = name;
  d.host = host;
  return d;
}

Measurement meas(const std::string& key, std::uint64_t n, double median_us, std::uint64_t seed = 7, bool valid = true) {
  Measurement m;
  m.key = key;
  m.variant = key.substr(0, key.find('.'));
  m.block = 256;
  m.tail = "shfl";
  m.finish = "atomic";
  m.dtype = DType::f32;
  m.op = Op::sum;
  m.n = n;
  m.median_us = m.min_us = m.max_us = median_us;
  m.reps = 20;
  m.gbps = double(n) * 4 / median_us / 1e3;
  m.pct_peak = m.gbps / 33.523;
  m.valid = valid;
  m.error = valid ? "" : "wrong sum";
  m.seed = seed;
  return m;
}

/// A store file on one GPU with one finished run of three measurements.
std::int64_t fill(Store& s, const std::string& uuid, const std::string& name, const std::string& host,
                  double scale = 1.0) {
  s.upsert_device(gpu(uuid, name, host));
  const auto run = s.begin_run({0, uuid, "0.1.0", "13.0", "reduce-tune --device 0", "cuda-events median of 20", "", "", ""});
  s.add_measurements(run, {meas("unrolling.b256.u4.atomic", 1 << 20, 10 * scale),
                           meas("vectorized.b512.u4.v4.g0.shfl.atomic", 1 << 20, 6 * scale),
                           meas("neighbored.b256.atomic", 1 << 20, 3 * scale, 7, false)});
  s.end_run(run, "done");
  return run;
}

std::size_t count_measurements(const Store& s) {
  std::size_t n = 0;
  for (const auto& d : s.devices()) n += s.measurements(d.uuid).size();
  return n;
}

/// A run without its id, for comparing provenance across stores.
auto provenance(const RunRecord& r) {
  return std::make_tuple(r.device_uuid, r.tool_version, r.nvrtc_version, r.options, r.timing_method, r.started,
                         r.ended, r.status);
}

PublishedRecord pub(const std::string& kernel, double ms) {
  PublishedRecord r;
  r.doc = "004_012f064147cfd0ff.txt";
  r.gpu = "Titan V";
  r.arch = "Volta";
  r.kernel = kernel;
  r.order = 1;
  r.dtype = "float32";
  r.n = 1 << 28;
  r.block = 256;
  r.time_ms = ms;
  r.gbps = std::nan("");
  r.step_speedup = std::nan("");
  r.cumulative_speedup = 2.5;
  r.note = "test";
  return r;
}

} // namespace

TEST_CASE("merging brings devices, runs and measurements in once, keeping provenance", "[store][merge]") {
  TempDir dir;
  const std::string a_path = dir.file("h100.db"), b_path = dir.file("h200.db");
  {
    Store a(a_path);
    fill(a, "GPU-h100", "NVIDIA H100 80GB HBM3", "node1");
    Store b(b_path);
    fill(b, "GPU-h200", "NVIDIA H200", "node2", 0.5);
  }
  Store a(a_path);
  const auto a_runs = a.runs();
  Store b(b_path);
  const auto b_runs = b.runs();

  const MergeStats first = a.merge_from(b_path);
  CHECK(first.devices == 1);
  CHECK(first.runs == 1);
  CHECK(first.measurements == 3);
  CHECK(first.duplicates == 0);
  CHECK(a.devices().size() == 2);
  CHECK(count_measurements(a) == 6);
  // Provenance: the other run's fields, under a new id of this store.
  const auto runs = a.runs();
  REQUIRE(runs.size() == 2);
  CHECK(provenance(runs[1]) == provenance(b_runs[0]));
  CHECK(runs[0].id == a_runs[0].id);
  CHECK(a.device("GPU-h200")->host == "node2");
  // The best rows of the merged GPU: the invalid faster measurement is never best.
  const auto best = a.best("GPU-h200", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20});
  REQUIRE(best);
  CHECK(best->m.key == "vectorized.b512.u4.v4.g0.shfl.atomic");
  CHECK(best->m.median_us == 3.0);
  CHECK(best->run_id == runs[1].id);
  CHECK(a.best("GPU-h100", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20})->m.median_us == 6.0);

  // Idempotent: the second merge adds nothing.
  const MergeStats again = a.merge_from(b_path);
  CHECK(again.total() == 0);
  CHECK(again.duplicates == 3);
  CHECK(count_measurements(a) == 6);
  CHECK(a.runs().size() == 2);

  // And the other way round: both stores end with the same content.
  CHECK(b.merge_from(a_path).measurements == 3);
  CHECK(count_measurements(b) == 6);
  CHECK(b.merge_from(a_path).total() == 0);
  CHECK(a.merge_from(b_path).total() == 0);
  // A store merged into itself changes nothing.
  CHECK(a.merge_from(a_path).total() == 0);
  CHECK(count_measurements(a) == 6);
}

TEST_CASE("merging a copy that grew adds only what is new", "[store][merge]") {
  TempDir dir;
  const std::string a_path = dir.file("a.db"), copy_path = dir.file("copy.db");
  std::int64_t run = 0;
  {
    Store a(a_path);
    run = fill(a, "GPU-h100", "NVIDIA H100 80GB HBM3", "node1");
  }
  fs::copy_file(a_path, copy_path);
  {
    Store copy(copy_path);
    // The same run gets two more measurements (another size; another seed of a known point), and a
    // second run measures a known point again: all new.
    copy.add_measurements(run, {meas("unrolling.b256.u4.atomic", 1 << 22, 40), meas("unrolling.b256.u4.atomic", 1 << 20, 9, 8)});
    const auto later = copy.begin_run({0, "GPU-h100", "0.1.0", "13.0", "reduce-tune --resume", "cuda-events", "", "", ""});
    copy.add_measurements(later, {meas("unrolling.b256.u4.atomic", 1 << 20, 11)});
    copy.end_run(later, "interrupted");
  }
  Store a(a_path);
  const MergeStats s = a.merge_from(copy_path);
  CHECK(s.devices == 0);
  CHECK(s.runs == 1);
  CHECK(s.measurements == 3);
  CHECK(s.duplicates == 3);
  CHECK(count_measurements(a) == 6);
  CHECK(a.runs().back().status == "interrupted");
  CHECK(a.best("GPU-h100", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 22})->m.median_us == 40);
  CHECK(a.merge_from(copy_path).total() == 0);
}

TEST_CASE("a device seen later elsewhere takes that description", "[store][merge]") {
  TempDir dir;
  const std::string a_path = dir.file("a.db"), b_path = dir.file("b.db");
  {
    Store a(a_path);
    fill(a, "GPU-x", "old name", "node1");
    raw_exec(a_path, "UPDATE devices SET last_seen = '2020-01-01T00:00:00Z', first_seen = '2020-01-01T00:00:00Z'");
    Store b(b_path);
    fill(b, "GPU-x", "new name", "node2");
  }
  Store a(a_path);
  a.merge_from(b_path);
  CHECK(a.device("GPU-x")->name == "new name");
  Store b(b_path);
  b.merge_from(a_path); // older description: kept out
  CHECK(b.device("GPU-x")->name == "new name");
}

TEST_CASE("merge refuses foreign, newer and missing stores, changing neither file", "[store][merge]") {
  TempDir dir;
  const std::string ours = dir.file("ours.db"), other = dir.file("other.db");
  Store store(ours);
  fill(store, "GPU-a", "NVIDIA H100 80GB HBM3", "node1");
  SECTION("a foreign SQLite database") {
    raw_exec(other, "CREATE TABLE measurements (x); INSERT INTO measurements VALUES (1)");
  }
  SECTION("a newer reduce-tune store") {
    { Store s(other); fill(s, "GPU-b", "NVIDIA H200", "node2"); }
    raw_exec(other, "PRAGMA user_version = " + std::to_string(Store::schema_version() + 1));
  }
  SECTION("not SQLite") { std::ofstream(other) << "doc,gpu\n1,2\n"; }
  SECTION("an empty file") { std::ofstream(other) << ""; }
  SECTION("no file") {}
  const auto before = snapshot(dir.path);
  CHECK_THROWS_AS(store.merge_from(other), StoreError);
  CHECK(snapshot(dir.path) == before);
  CHECK(count_measurements(store) == 3);
  CHECK(store.runs().size() == 1);
}

TEST_CASE("an older store is merged without being migrated", "[store][merge]") {
  TempDir dir;
  const std::string ours = dir.file("ours.db"), old = dir.file("old.db");
  {
    Store s(old);
    fill(s, "GPU-old", "Tesla V100", "node3");
  }
  // Schema 1: no published table, no problem kinds.
  downgrade_to_v2(old);
  raw_exec(old, "DROP TABLE published; PRAGMA user_version = 1");
  const std::string before = bytes_of(old);
  Store store(ours);
  const MergeStats s = store.merge_from(old);
  CHECK(s.measurements == 3);
  CHECK(s.published == 0);
  CHECK(bytes_of(old) == before);
  // Opened as a store, the old file is migrated with its data intact.
  Store migrated(old);
  CHECK(migrated.user_version() == Store::schema_version());
  CHECK(migrated.published().empty());
  CHECK(count_measurements(migrated) == 3);
}

TEST_CASE("a schema-2 store opens migrated to segmented problems, its data kept", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.file("v2.db");
  {
    Store s(path);
    fill(s, "GPU-old", "NVIDIA H100 80GB HBM3", "node1");
  }
  downgrade_to_v2(path);
  Store s(path);
  CHECK(s.user_version() == Store::schema_version());
  const auto ms = s.measurements("GPU-old");
  REQUIRE(ms.size() == 3);
  for (const auto& m : ms) {
    CHECK(m.problem == Problem::array);
    CHECK(m.count == 1);
    CHECK(m.n == 1u << 20);
  }
  const auto b = s.best("GPU-old", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20});
  REQUIRE(b);
  CHECK(b->m.key == "vectorized.b512.u4.v4.g0.shfl.atomic");
  CHECK(b->shape == Shape{1, 1 << 20});
  // The migrated store takes segmented rows beside the array ones: same n, another problem.
  const auto run = s.begin_run({0, "GPU-old", "0.2.0", "13.0", "reduce-tune tune --problem rows", "events", "", "", ""});
  Measurement rows = meas("rows_block.b256.u4.v4.direct", 1 << 20, 2.0);
  rows.problem = Problem::rows;
  rows.count = 16;
  s.add_measurements(run, {rows});
  CHECK(s.best("GPU-old", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20})->m.median_us == 6);
  CHECK(s.best("GPU-old", DType::f32, Op::sum, Problem::rows, Shape{16, 1 << 20})->m.median_us == 2);
  CHECK_FALSE(s.best("GPU-old", DType::f32, Op::sum, Problem::rows, Shape{1, 1 << 20}));
  // Merging the original v2 file again finds nothing new (identity includes the problem kind).
  const std::string copy = dir.file("v2-copy.db");
  {
    Store c(copy);
    fill(c, "GPU-old", "NVIDIA H100 80GB HBM3", "node1");
  }
  downgrade_to_v2(copy);
  const MergeStats first = s.merge_from(copy);
  CHECK(first.measurements + first.duplicates == 3); // new, unless both runs started in one second
  CHECK(s.merge_from(copy).measurements == 0);
  CHECK(s.merge_from(copy).duplicates == 3);
}

TEST_CASE("published rows: idempotent import, own table, merged along", "[store][published]") {
  TempDir dir;
  Store s(dir.file("a.db"));
  const std::vector<PublishedRecord> rows = {pub("atomic global", 1800.5), pub("shuffle", 9.89)};
  CHECK(s.import_published(rows) == 2);
  CHECK(s.import_published(rows) == 0);
  auto changed = rows;
  changed[1].time_ms = 9.9;
  CHECK(s.import_published(changed) == 1);
  const auto got = s.published();
  REQUIRE(got.size() == 2);
  CHECK(got[0].kernel == "atomic global");
  CHECK(got[1].time_ms == 9.9);
  CHECK(std::isnan(got[0].gbps));
  CHECK(std::isnan(got[0].step_speedup));
  CHECK(got[0].cumulative_speedup == 2.5);
  CHECK(got[0].block == 256);
  CHECK(got[0].order == 1);
  CHECK(s.published("000").empty());
  CHECK(s.published("004").size() == 2);
  // Never measurements: no device, no run, no best row appears.
  CHECK(s.devices().empty());
  CHECK(s.runs().empty());

  Store b(dir.file("b.db"));
  CHECK(b.merge_from(dir.file("a.db")).published == 2);
  CHECK(b.merge_from(dir.file("a.db")).published == 0);
  CHECK(b.published().size() == 2);
  CHECK(b.devices().empty());
}

TEST_CASE("merge carries the recorded call points, each once", "[store][merge][record]") {
  TempDir dir;
  const std::string a_path = dir.file("a.db"), b_path = dir.file("b.db");
  auto point = [](const std::string& uuid, Problem p, Shape shape, const std::string& grade) {
    RecordedPoint r;
    r.device_uuid = uuid, r.device_name = "NVIDIA H100 80GB HBM3", r.dtype = DType::f32, r.op = Op::sum;
    r.problem = p, r.shape = shape, r.grade = grade;
    return r;
  };
  {
    Store a(a_path);
    fill(a, "GPU-h100", "NVIDIA H100 80GB HBM3", "node1");
    a.record_point(point("GPU-h100", Problem::rows, {1024, 16}, "builtin"));
  }
  {
    Store b(b_path);
    fill(b, "GPU-h100", "NVIDIA H100 80GB HBM3", "node2");
    b.record_point(point("GPU-h100", Problem::rows, {1024, 16}, "related"));
    b.record_point(point("GPU-h100", Problem::segments, {256, 0}, "nearest_size"));
    b.record_point(point("GPU-other", Problem::columns, {64, 4096}, "builtin"));
  }
  // b saw the shared point earlier and later than a did.
  raw_exec(b_path, "UPDATE recorded SET first_seen = '2020-01-01T00:00:00Z', last_seen = '2999-01-01T00:00:00Z' "
                   "WHERE problem = 'rows'");
  Store a(a_path);
  const MergeStats s = a.merge_from(b_path);
  CHECK(s.recorded == 2);
  std::vector<RecordedPoint> all = a.recorded("");
  REQUIRE(all.size() == 3);
  const auto rows = std::find_if(all.begin(), all.end(), [](const RecordedPoint& r) { return r.problem == Problem::rows; });
  REQUIRE(rows != all.end());
  CHECK(rows->first_seen == "2020-01-01T00:00:00Z");
  CHECK(rows->last_seen == "2999-01-01T00:00:00Z");
  CHECK(rows->grade == "related"); // the grade of the later sighting
  const auto segs = std::find_if(all.begin(), all.end(), [](const RecordedPoint& r) { return r.problem == Problem::segments; });
  REQUIRE(segs != all.end());
  CHECK(segs->shape == Shape{256, 0});
  CHECK(segs->grade == "nearest_size");
  CHECK(a.recorded("GPU-other").size() == 1);
  // Again: nothing new, nothing twice.
  const MergeStats again = a.merge_from(b_path);
  CHECK(again.recorded == 0);
  CHECK(again.total() == 0);
  CHECK(a.recorded("").size() == 3);
  // The other way: a's own sighting of the shared point (earlier last seen) changes neither date
  // nor grade there.
  Store b(b_path);
  CHECK(b.merge_from(a_path).recorded == 0);
  all = b.recorded("GPU-h100");
  REQUIRE(all.size() == 2);
  CHECK(all[0].problem == Problem::rows);
  CHECK(all[0].first_seen == "2020-01-01T00:00:00Z");
  CHECK(all[0].last_seen == "2999-01-01T00:00:00Z");
  CHECK(all[0].grade == "related");
}
