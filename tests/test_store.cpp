// Tests of the SQLite store (db/store.cpp).
#include <catch2/catch.hpp>
#include <limits>

#include "db/store.h"
#include "tests/fixtures.h"
#include "tests/sqlite_fixture.h"

#include <sqlite3.h>

#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <thread>

using namespace reduce_tune;
using namespace reduce_tune::db;
using reduce_tune::testing::raw_exec;
namespace fs = std::filesystem;

namespace {

/// A unique path under the temp directory; removes it (and WAL side files) when done.
struct TempPath {
  fs::path path;
  explicit TempPath(const std::string& sub = "") {
    std::random_device rd;
    path = fs::temp_directory_path() /
           ("reduce-tune-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    root = path;
    if (!sub.empty()) path /= sub;
    path += ".db";
  }
  ~TempPath() {
    std::error_code ec;
    fs::remove_all(root, ec);
    for (const char* suffix : {".db", ".db-wal", ".db-shm"}) fs::remove(fs::path(root) += suffix, ec);
  }
  std::string str() const { return path.string(); }
  fs::path root;
};

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}


DeviceRecord gpu(const std::string& uuid, int cc_major = 9, int cc_minor = 0) {
  DeviceRecord d = reduce_tune::testing::h100_record(uuid);
  d.cc_major = cc_major;
  d.cc_minor = cc_minor;
  return d;
}

Measurement meas(const std::string& key, std::uint64_t n, double median_us, bool valid = true) {
  Measurement m;
  m.key = key;
  m.variant = "unrolling";
  m.block = 256;
  m.dtype = DType::f32;
  m.op = Op::sum;
  m.n = n;
  m.median_us = median_us;
  m.valid = valid;
  return m;
}

/// A store with one device and one run on it.
struct Fixture {
  Store store{":memory:"};
  std::int64_t run = 0;
  explicit Fixture(const std::string& uuid = "GPU-a") {
    store.upsert_device(gpu(uuid));
    run = store.begin_run({0, uuid, "0.1", "13.0", "--sweep", "events", "", "", ""});
  }
};

} // namespace

TEST_CASE("a new store gets the current schema", "[store]") {
  REQUIRE(Store::schema_version() >= 1);
  Store mem(":memory:");
  CHECK(mem.user_version() == Store::schema_version());

  TempPath tmp;
  { Store file(tmp.str()); CHECK(file.user_version() == Store::schema_version()); }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(tmp.str().c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master "
                                 "WHERE type = 'table' ORDER BY name)", -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const std::string tables = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const std::string mode = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  CHECK(tables == "best,claims,devices,measurements,published,recorded,reductions,runs");
  CHECK(mode == "wal");
}

TEST_CASE("upsert_device inserts, then updates by uuid", "[store]") {
  Store s(":memory:");
  CHECK_FALSE(s.device("GPU-a"));
  s.upsert_device(gpu("GPU-a"));
  DeviceRecord d = gpu("GPU-a");
  d.name = "renamed";
  d.driver_version = 13010;
  s.upsert_device(d);
  const auto all = s.devices();
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "renamed");
  CHECK(all[0].driver_version == 13010);
  const auto got = s.device("GPU-a");
  REQUIRE(got);
  CHECK(got->uuid == "GPU-a");
  CHECK(got->cc_major == 9);
  CHECK(got->cc_minor == 0);
  CHECK(got->sm_count == 132);
  CHECK(got->l2_bytes == 50 << 20);
  CHECK(got->total_mem_bytes == 85'000'000'000);
  CHECK(got->mem_clock_khz == 2'619'000);
  CHECK(got->bus_width_bits == 5120);
  CHECK(got->peak_gbps == 3352.3);
  CHECK(got->host == "node7");
}

TEST_CASE("begin_run and end_run round-trip", "[store]") {
  Fixture f;
  auto runs = f.store.runs();
  REQUIRE(runs.size() == 1);
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  CHECK(runs[0].id == f.run);
  CHECK(runs[0].device_uuid == "GPU-a");
  CHECK(runs[0].tool_version == "0.1");
  CHECK(runs[0].nvrtc_version == "13.0");
  CHECK(runs[0].options == "--sweep");
  CHECK(runs[0].timing_method == "events");
  CHECK(runs[0].status == "running");
  CHECK(std::regex_match(runs[0].started, iso));
  CHECK(runs[0].ended.empty());

  f.store.end_run(f.run, "done");
  runs = f.store.runs();
  CHECK(runs[0].status == "done");
  CHECK(std::regex_match(runs[0].ended, iso));
  CHECK_THROWS_AS(f.store.end_run(f.run + 1, "done"), StoreError);
  CHECK_THROWS_AS(f.store.end_run(f.run, "finished"), StoreError); // not a known status
  CHECK_THROWS_AS(f.store.begin_run({0, "GPU-unknown", "", "", "", "", "", "", ""}), StoreError); // foreign key
}

TEST_CASE("measurements round-trip every field", "[store]") {
  Fixture f;
  Measurement m;
  m.key = "unrolling.b512.u8.host";
  m.variant = "unrolling";
  m.block = 512;
  m.unroll = 8;
  m.vec = 4;
  m.grid = 1056;
  m.tail = "masked";
  m.finish = "host";
  m.dtype = DType::f64;
  m.op = Op::max;
  m.n = 3ull * (1ull << 32) + 5;
  m.median_us = 1234.5;
  m.min_us = 1200.25;
  m.max_us = 1300.75;
  m.host_us = 3.5;
  m.reps = 20;
  m.gbps = 2987.6;
  m.pct_peak = 89.1;
  m.valid = false;
  m.error = "mismatch";
  m.expected = "1.5";
  m.observed = "1.25";
  m.seed = 0xFEDCBA9876543210ull; // above INT64_MAX
  m.cold = false;
  Measurement nan = meas("k2", 1024, std::nan(""), false);
  f.store.add_measurements(f.run, {m, nan});

  const auto got = f.store.measurements("GPU-a");
  REQUIRE(got.size() == 2);
  const Measurement& g = got[0];
  CHECK(g.key == m.key);
  CHECK(g.variant == m.variant);
  CHECK(g.block == m.block);
  CHECK(g.unroll == m.unroll);
  CHECK(g.vec == m.vec);
  CHECK(g.grid == m.grid);
  CHECK(g.tail == m.tail);
  CHECK(g.finish == m.finish);
  CHECK(g.dtype == m.dtype);
  CHECK(g.op == m.op);
  CHECK(g.n == 12884901893ull);
  CHECK(g.median_us == m.median_us);
  CHECK(g.min_us == m.min_us);
  CHECK(g.max_us == m.max_us);
  CHECK(g.host_us == m.host_us);
  CHECK(g.reps == m.reps);
  CHECK(g.gbps == m.gbps);
  CHECK(g.pct_peak == m.pct_peak);
  CHECK(g.valid == m.valid);
  CHECK(g.error == m.error);
  CHECK(g.expected == m.expected);
  CHECK(g.observed == m.observed);
  CHECK(g.seed == m.seed);
  CHECK(g.cold == m.cold);
  CHECK(std::isnan(got[1].median_us));

  CHECK(f.store.measurements("GPU-a", db::MeasurementFilter{DType::f64, std::nullopt, std::nullopt, std::nullopt}).size() == 1);
  CHECK(f.store.measurements("GPU-a", db::MeasurementFilter{std::nullopt, Op::sum, std::nullopt, std::nullopt}).size() == 1);
  CHECK(f.store.measurements("GPU-a", db::MeasurementFilter{std::nullopt, std::nullopt, Problem::array, Shape{1, m.n}}).size() == 1);
  CHECK(f.store.measurements("GPU-b").empty());
  CHECK(f.store.measured_keys("GPU-a", DType::f64, Op::max, Problem::array, Shape{1, m.n}) == std::vector<std::string>{m.key});
  CHECK_THROWS_AS(f.store.add_measurements(f.run + 1, {m}), StoreError);
  CHECK_THROWS_AS(f.store.add_measurements(f.run, {meas("zero", 0, 1.0)}), StoreError);
}

TEST_CASE("best is the valid measurement with the lowest median", "[store]") {
  Fixture f;
  const std::uint64_t n = 1 << 20;
  CHECK_FALSE(f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, n}));
  f.store.add_measurements(f.run, {meas("slow", n, 30), meas("fast", n, 10), meas("wrong", n, 1, false),
                                   meas("tie", n, 10)});
  auto b = f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, n});
  REQUIRE(b);
  CHECK(b->m.key == "fast"); // not the invalid faster one, not the later tie
  CHECK(b->run_id == f.run);
  CHECK(b->device_uuid == "GPU-a");
  CHECK(b->dtype == DType::f32);
  CHECK(b->op == Op::sum);
  CHECK(b->shape.length == n);

  f.store.add_measurements(f.run, {meas("only-invalid", 2 * n, 1, false)});
  CHECK_FALSE(f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 2 * n}));

  const auto run2 = f.store.begin_run({0, "GPU-a", "0.2", "13.0", "", "", "", "", ""});
  f.store.add_measurements(run2, {meas("worse", n, 20), meas("wrong2", n, 0.5, false)});
  CHECK(f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, n})->m.key == "fast");
  f.store.add_measurements(run2, {meas("faster", n, 5)});
  b = f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, n});
  REQUIRE(b);
  CHECK(b->m.key == "faster");
  CHECK(b->run_id == run2);
  CHECK(f.store.bests("GPU-a").size() == 1);
}

TEST_CASE("best kept row by row is the best of all rows", "[store]") {
  // The store keeps best as rows arrive (one-row commits, as a sweep makes them, and batches);
  // it must equal the brute-force answer: the valid row with the lowest median, earliest of ties.
  Fixture f;
  std::mt19937 rng(7);
  std::vector<Measurement> all;
  const std::uint64_t sizes[] = {1024, 4096, 1 << 20};
  for (int step = 0; step < 400; ++step) {
    std::vector<Measurement> batch;
    const int rows = step % 3 == 0 ? int(rng() % 5) + 1 : 1;
    for (int r = 0; r < rows; ++r) {
      Measurement m = meas("k" + std::to_string(rng() % 50), sizes[rng() % 3],
                           double(rng() % 20) / 4, rng() % 5 != 0);
      if (rng() % 17 == 0) m.median_us = std::numeric_limits<double>::quiet_NaN();
      batch.push_back(m);
    }
    f.store.add_measurements(f.run, batch);
    all.insert(all.end(), batch.begin(), batch.end());
  }
  for (std::uint64_t n : sizes) {
    const Measurement* want = nullptr;
    for (const auto& m : all) // in insertion (id) order: a later tie never replaces
      if (m.n == n && m.valid && !std::isnan(m.median_us) && (!want || m.median_us < want->median_us))
        want = &m;
    const auto got = f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, n});
    REQUIRE(want);
    REQUIRE(got);
    INFO("n = " << n);
    CHECK(got->m.key == want->key);
    CHECK(got->m.median_us == want->median_us);
    // The earliest of the ties: no stored row of that median comes before it.
    for (const auto& m : f.store.measurements("GPU-a", db::MeasurementFilter{DType::f32, Op::sum, Problem::array, Shape{1, n}}))
      if (m.valid && m.median_us == want->median_us) {
        CHECK(m.key == got->m.key);
        break;
      }
  }
}

TEST_CASE("nearest picks the tuned size nearest in log2, ties to the larger", "[store]") {
  Fixture f;
  f.store.add_measurements(f.run, {meas("at20", 1 << 20, 10), meas("at24", 1 << 24, 100)});
  CHECK_FALSE(f.store.nearest("GPU-a", DType::f32, Op::max, Problem::array, Shape{1, 1 << 20}));
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20})->shape.length == 1 << 20);
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 21})->shape.length == 1 << 20);
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 23})->shape.length == 1 << 24);
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 1 << 22})->shape.length == 1 << 24);
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 1})->shape.length == 1 << 20);
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 1ull << 40})->m.key == "at24");
}

TEST_CASE("nearest_same_arch looks across devices of one compute capability", "[store]") {
  Fixture f("GPU-a");
  f.store.upsert_device(gpu("GPU-b"));
  f.store.upsert_device(gpu("GPU-c", 8, 6));
  const auto run_b = f.store.begin_run({0, "GPU-b", "0.1", "13.0", "", "", "", "", ""});
  const auto run_c = f.store.begin_run({0, "GPU-c", "0.1", "13.0", "", "", "", "", ""});
  f.store.add_measurements(f.run, {meas("a20", 1 << 20, 10), meas("a24", 1 << 24, 50)});
  f.store.add_measurements(run_b, {meas("b20", 1 << 20, 8), meas("b26", 1 << 26, 200)});
  f.store.add_measurements(run_c, {meas("c22", 1 << 22, 1)});

  auto b = f.store.nearest_same_arch(9, 0, DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20});
  REQUIRE(b);
  CHECK(b->m.key == "b20"); // both devices tuned 2^20: the lower median wins
  CHECK(b->device_uuid == "GPU-b");
  CHECK(f.store.nearest_same_arch(9, 0, DType::f32, Op::sum, Problem::array, Shape{1, 1 << 22})->m.key == "a24"); // not GPU-c's 2^22
  CHECK(f.store.nearest_same_arch(9, 0, DType::f32, Op::sum, Problem::array, Shape{1, 1 << 25})->m.key == "b26");
  CHECK(f.store.nearest_same_arch(8, 6, DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20})->m.key == "c22");
  CHECK_FALSE(f.store.nearest_same_arch(8, 0, DType::f32, Op::sum, Problem::array, Shape{1, 1 << 20}));
  CHECK_FALSE(f.store.nearest_same_arch(9, 0, DType::f64, Op::sum, Problem::array, Shape{1, 1 << 20}));
}

TEST_CASE("a file store survives reopening, in a directory it creates", "[store]") {
  TempPath tmp("nested/dir/store");
  {
    Store s(tmp.str());
    s.upsert_device(gpu("GPU-a"));
    const auto run = s.begin_run({0, "GPU-a", "0.1", "13.0", "", "", "", "", ""});
    s.add_measurements(run, {meas("k", 4096, 2.5)});
    s.end_run(run, "done");
  }
  Store s(tmp.str());
  CHECK(s.user_version() == Store::schema_version());
  CHECK(s.devices().size() == 1);
  CHECK(s.runs().at(0).status == "done");
  REQUIRE(s.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 4096}));
  CHECK(s.best("GPU-a", DType::f32, Op::sum, Problem::array, Shape{1, 4096})->m.median_us == 2.5);
}

TEST_CASE("files that are not usable reduce-tune stores are refused unchanged", "[store]") {
  TempPath tmp;
  SECTION("garbage") {
    std::mt19937 gen(42);
    std::string junk(8192, '\0');
    for (char& c : junk) c = static_cast<char>(gen());
    std::ofstream(tmp.path, std::ios::binary) << junk;
    try {
      Store s(tmp.str());
      FAIL("garbage file was opened");
    } catch (const StoreError& e) {
      CHECK(e.code() == SQLITE_NOTADB);
    }
    CHECK(bytes_of(tmp.path) == junk);
  }
  SECTION("foreign SQLite database") {
    raw_exec(tmp.str(), "CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1);");
    const std::string before = bytes_of(tmp.path);
    CHECK_THROWS_WITH(Store(tmp.str()), Catch::Contains("foreign"));
    CHECK(bytes_of(tmp.path) == before);
  }
  SECTION("newer schema") {
    { Store s(tmp.str()); }
    raw_exec(tmp.str(), "PRAGMA user_version = " + std::to_string(Store::schema_version() + 1));
    const std::string before = bytes_of(tmp.path);
    CHECK_THROWS_WITH(Store(tmp.str()), Catch::Contains("newer"));
    CHECK(bytes_of(tmp.path) == before);
  }
}

TEST_CASE("two writers on one file serialize", "[store]") {
  TempPath tmp;
  std::exception_ptr errors[2];
  auto writer = [&](int w) {
    try {
      Store s(tmp.str());
      const std::string uuid = "GPU-" + std::to_string(w);
      s.upsert_device(gpu(uuid));
      const auto run = s.begin_run({0, uuid, "0.1", "13.0", "", "", "", "", ""});
      for (int batch = 0; batch < 20; ++batch) {
        std::vector<Measurement> ms;
        for (int i = 0; i < 10; ++i) ms.push_back(meas("k" + std::to_string(i), 1024u << batch, 1.0 + i));
        s.add_measurements(run, ms);
      }
      s.end_run(run, "done");
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  Store s(tmp.str());
  CHECK(s.measurements("GPU-0").size() == 200);
  CHECK(s.measurements("GPU-1").size() == 200);
  CHECK(s.bests("GPU-0").size() == 20);
}

TEST_CASE("nearest shape: log space of length and count, exact ratios, ties to more elements", "[store][shape]") {
  const Shape t{1024, 1024};
  CHECK(nearer({1024, 1024}, {1024, 2048}, t));      // exact beats anything
  CHECK(nearer({1024, 2048}, {1024, 256}, t));       // x2 beats /4 in length
  CHECK(nearer({2048, 1024}, {1024, 512}, t));       // equal distance (one octave): more elements
  CHECK_FALSE(nearer({1024, 512}, {2048, 1024}, t));
  CHECK(nearer({2048, 2048}, {1024, 8192}, t));      // 1 + 1 octaves beat 3
  CHECK(nearer({4096, 1024}, {2048, 4096}, t));      // 2 octaves beat 1 + 2
  CHECK(nearer({1000, 1024}, {1024, 1000}, Shape{1000, 1000})); // exact ratios tie: longer segments
  // Length 0 (offsets: lengths unknown on the host): the count alone.
  CHECK(nearer({4096, 1}, {8192, 1 << 20}, Shape{4096, 0}));
  CHECK(nearer({4096, 1 << 20}, {4096, 16}, Shape{4096, 0}));
}

TEST_CASE("nearest shape: lengths unknown, the middle of the nearest count's totals", "[store][shape]") {
  const auto first = [](std::vector<Shape> v, Shape t, Problem p = Problem::segments) {
    order_by_nearness(v, t, p);
    return v.front();
  };
  // 2^16 segments tuned at totals 2^20, 2^24 and 2^28: the middle one, not the largest.
  const std::vector<Shape> three = {{1 << 16, 16}, {1 << 16, 4096}, {1 << 16, 256}, {1 << 18, 64}};
  CHECK(first(three, {1 << 16, 0}) == Shape{1 << 16, 256});
  // As near on either side (2^17 between 2^16 and 2^18): their totals together (2^20..2^28).
  CHECK(first(three, {1 << 17, 0}) == Shape{1 << 16, 256});
  // Two totals: equally far from their middle, the more elements.
  CHECK(first({{1024, 16}, {1024, 1 << 14}}, {1024, 0}) == Shape{1024, 1 << 14});
  // A known length keeps nearer()'s order.
  CHECK(first(three, {1 << 16, 4096}) == Shape{1 << 16, 4096});
  // Totals below 2^20 (tuned for calls that give their element count) leave a count-only lookup
  // to the large ones: 256 segments at 2^16, 2^20 and 2^24 take 2^24 as with 2^20 and 2^24 alone
  // (the middle of all three would be 2^20)...
  const std::vector<Shape> small = {{256, 256}, {256, 4096}, {256, 65536}};
  CHECK(first(small, {256, 0}) == Shape{256, 65536});
  CHECK(first({{256, 16}, {256, 256}, {256, 4096}, {256, 65536}}, {256, 0}) == Shape{256, 65536});
  // ... unless the count has no large total; given the length, the 2^16 shape is the exact one.
  CHECK(first({{1 << 16, 1}, {1 << 8, 1 << 8}}, {1 << 16, 0}) == Shape{1 << 16, 1});
  CHECK(first({{2, 1 << 15}, {2, 1 << 10}}, {2, 0}) == Shape{2, 1 << 15});
  CHECK(first(small, {256, 256}) == Shape{256, 256});
  // A count tuned at a small total only is passed over for the large totals' nearest counts.
  CHECK(first({{512, 128}, {256, 4096}, {1024, 1024}}, {512, 0}) == Shape{256, 4096});
  // Given the length, offsets take the nearest total first, then the nearest count; rows
  // nearer()'s sum of the two log distances.
  const std::vector<Shape> two = {{2, 1 << 15}, {256, 1 << 16}};
  CHECK(first(two, {1, 1 << 24}) == Shape{256, 1 << 16});
  CHECK(first(two, {1, 1 << 24}, Problem::rows) == Shape{2, 1 << 15});
  CHECK(first(two, {4, 1 << 13}) == Shape{2, 1 << 15});
  CHECK(nearer_total({256, 4096}, {1024, 4096}, {300, 3500}));
  CHECK_FALSE(nearer_total({1024, 4096}, {256, 4096}, {300, 3500}));
  std::vector<Shape> none;
  order_by_nearness(none, {1, 0}, Problem::segments);
  CHECK(none.empty());
}

TEST_CASE("store: segmented bests per problem and shape, nearest by shape", "[store][shape]") {
  Fixture f;
  auto seg = [](const std::string& key, Problem p, Shape s, double us) {
    Measurement m = meas(key, s.length, us);
    m.problem = p;
    m.count = s.count;
    return m;
  };
  f.store.add_measurements(f.run, {seg("rows_group.b256.w32.u2.v4.direct", Problem::rows, {1 << 16, 256}, 9),
                                   seg("rows_block.b256.u4.v4.direct", Problem::rows, {1 << 16, 256}, 12),
                                   seg("rows_block.b256.u4.v4.direct", Problem::rows, {256, 1 << 16}, 11),
                                   seg("columns_tile.b256.u4.v4.direct", Problem::columns, {1 << 16, 256}, 30)});
  const auto b = f.store.best("GPU-a", DType::f32, Op::sum, Problem::rows, {1 << 16, 256});
  REQUIRE(b);
  CHECK(b->m.key == "rows_group.b256.w32.u2.v4.direct");
  CHECK(b->problem == Problem::rows);
  CHECK(b->shape == Shape{1 << 16, 256});
  CHECK(f.store.best("GPU-a", DType::f32, Op::sum, Problem::columns, {1 << 16, 256})->m.median_us == 30);
  CHECK_FALSE(f.store.best("GPU-a", DType::f32, Op::sum, Problem::array, {1, 1 << 24}));
  // Short rows go to the short-row shape, long rows to the long-row one.
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::rows, {1 << 15, 300})->shape == Shape{1 << 16, 256});
  CHECK(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::rows, {100, 1 << 17})->shape == Shape{256, 1 << 16});
  CHECK_FALSE(f.store.nearest("GPU-a", DType::f32, Op::sum, Problem::segments, {100, 0}));
  CHECK(f.store.measurements("GPU-a", MeasurementFilter{std::nullopt, std::nullopt, Problem::rows, std::nullopt}).size() == 3);
  CHECK(f.store.measurements("GPU-a", MeasurementFilter{std::nullopt, std::nullopt, Problem::rows, Shape{256, 1 << 16}}).size() == 1);
  CHECK(f.store.measured_keys("GPU-a", DType::f32, Op::sum, Problem::rows, {1 << 16, 256}).size() == 2);
  CHECK(f.store.bests("GPU-a").size() == 3);
}

TEST_CASE("recorded call points: noted once a point, listed, forgotten; a store of version 3 migrates "
          "keeping its rows, and reads as having recorded nothing read-only", "[store][record]") {
  TempPath tmp;
  {
    Store s(tmp.str());
    s.upsert_device(gpu("GPU-a"));
    const auto run = s.begin_run({0, "GPU-a", "0.1", "13.0", "", "", "", "", ""});
    s.add_measurements(run, {meas("k", 4096, 2.5)});
    s.end_run(run, "done");
  }
  // What a build of schema 3 wrote: no recorded table.
  raw_exec(tmp.str(), "DROP TABLE recorded; DROP TABLE claims; PRAGMA user_version = 3;");
  {
    Store ro(tmp.str(), Store::Mode::read_only);
    CHECK(ro.user_version() == 3);
    CHECK(ro.recorded().empty());
    CHECK(ro.measurements("GPU-a").size() == 1);
  }
  Store s(tmp.str());
  CHECK(s.user_version() == Store::schema_version());
  CHECK(s.measurements("GPU-a").size() == 1); // the migration kept the rows
  RecordedPoint p;
  p.device_uuid = "GPU-a", p.device_name = "NVIDIA H100 80GB HBM3";
  p.dtype = DType::f64, p.op = Op::max, p.problem = Problem::rows, p.shape = {1024, 4096};
  p.grade = "related";
  s.record_point(p);
  p.grade = "nearest_size";
  s.record_point(p); // the same point again: one row, the latest grade
  RecordedPoint q = p;
  q.problem = Problem::segments, q.shape = {512, 0}; // offsets looked up by their count alone
  s.record_point(q);
  RecordedPoint other = p;
  other.device_uuid = "GPU-b";
  s.record_point(other);
  const auto all = s.recorded();
  CHECK(all.size() == 3);
  const auto mine = s.recorded("GPU-a");
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].problem == Problem::rows);
  CHECK(mine[0].shape == Shape{1024, 4096});
  CHECK(mine[0].grade == "nearest_size");
  CHECK(mine[0].dtype == DType::f64);
  CHECK(mine[0].op == Op::max);
  CHECK_FALSE(mine[0].first_seen.empty());
  CHECK(mine[1].shape == Shape{512, 0});
  RecordedPoint none = p;
  none.shape = {0, 8};
  CHECK_THROWS_AS(s.record_point(none), StoreError);
  // A row of a dtype this build does not know is skipped, not an error, and not lost.
  raw_exec(tmp.str(), "INSERT INTO recorded VALUES ('GPU-a', 'x', 'float8', 'sum', 'array', 1, 64, 'builtin', '', '')");
  CHECK(s.recorded("GPU-a").size() == 2);
  s.forget_recorded("GPU-a");
  CHECK(s.recorded("GPU-a").empty());
  CHECK(s.recorded().size() == 1);
}
