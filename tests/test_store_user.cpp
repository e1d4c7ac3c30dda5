// Tests of the store's keys of user reductions (db/op_key.h): their rows stored and read under
// user:<hash> apart from the built-in ops', their descriptions kept once, merged, and migrated.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "reduce_tune/reduction.h"
#include "tests/fixtures.h"
#include "tests/sqlite_fixture.h"
#include "tests/user_reductions.h"

#include <filesystem>

using namespace reduce_tune;
using reduce_tune::testing::sum_of_squares;
using namespace reduce_tune::db;
using reduce_tune::testing::raw_exec;
namespace fs = std::filesystem;

namespace {

Measurement row(const std::string& key, std::uint64_t n, double us, std::optional<std::uint64_t> user = {}) {
  Measurement m;
  m.key = key;
  m.variant = key.substr(0, key.find('.'));
  m.block = 256;
  m.dtype = DType::f32;
  m.op = Op::sum;
  m.user = user;
  m.n = n;
  m.median_us = m.min_us = m.max_us = us;
  m.reps = 1;
  m.valid = true;
  return m;
}

/// One device, one run of `rows`.
void fill(Store& s, const std::vector<Measurement>& rows, const std::string& uuid = "GPU-a") {
  s.upsert_device(reduce_tune::testing::h100_record(uuid));
  const auto run = s.begin_run({0, uuid, "0.1", "13.0", "", "", "", "", ""});
  s.add_measurements(run, rows);
  s.end_run(run, "done");
}

} // namespace

TEST_CASE("OpKey: built-in ops by name, user reductions as user: and 16 hex digits", "[store][user]") {
  CHECK(OpKey(Op::sum).name() == "sum");
  CHECK(OpKey(Op::argmax).name() == "argmax");
  CHECK_FALSE(OpKey(Op::sum).is_user());
  CHECK(OpKey(Op::max).builtin() == Op::max);
  const OpKey u = OpKey::user(0x0123456789abcdefull);
  CHECK(u.is_user());
  CHECK_FALSE(u.builtin());
  CHECK(u.name() == "user:0123456789abcdef");
  CHECK(parse_op_key(u.name()) == u);
  CHECK(parse_op_key("min") == OpKey(Op::min));
  CHECK(OpKey::user(1).name() == "user:0000000000000001");
  // The name a Reduction gives itself is its store key.
  const Reduction r = sum_of_squares();
  CHECK(OpKey::user(r.hash()).name() == r.name());
  for (const char* bad : {"user:", "user:123", "user:0123456789ABCDEF", "user:0123456789abcdefa", "user:0123456789abcdeg",
                          "sum ", "user0123456789abcdef"})
    CHECK_FALSE(parse_op_key(bad));
  CHECK(OpKey(Op::sum) != OpKey::user(0));
  CHECK(OpKey(Op::max) < OpKey::user(0)); // built-in ops order first
}

TEST_CASE("a user reduction's rows are its own: best, nearest, measurements and keys by hash; the built-in "
          "readers never see them", "[store][user]") {
  Store s(":memory:");
  const std::uint64_t h = sum_of_squares().hash(), other = h ^ 1;
  // At one point: sum's row is the fastest, the reduction's own rows slower, another reduction's too.
  fill(s, {row("unrolling.b256.u8.lastblock", 1 << 20, 5.0), row("unrolling.b512.u4.lastblock", 1 << 20, 9.0, h),
           row("unrolling.b256.u2.lastblock", 1 << 20, 8.0, h), row("unrolling.b128.u2.lastblock", 1 << 20, 7.0, other),
           row("unrolling.b128.u8.lastblock", 1 << 24, 40.0, h)});
  const auto b = s.best("GPU-a", DType::f32, OpKey::user(h), Problem::array, {1, 1 << 20});
  REQUIRE(b);
  CHECK(b->m.key == "unrolling.b256.u2.lastblock"); // the faster of its own two, not sum's
  CHECK(b->user == h);
  CHECK(b->m.user == h);
  CHECK(b->op_key() == OpKey::user(h));
  const auto sum = s.best("GPU-a", DType::f32, Op::sum, Problem::array, {1, 1 << 20});
  REQUIRE(sum);
  CHECK(sum->m.key == "unrolling.b256.u8.lastblock");
  CHECK_FALSE(sum->user);
  const auto near = s.nearest("GPU-a", DType::f32, OpKey::user(h), Problem::array, {1, 1 << 23});
  REQUIRE(near);
  CHECK(near->shape == Shape{1, 1 << 24});
  CHECK_FALSE(s.best("GPU-a", DType::f32, OpKey::user(h ^ 2), Problem::array, {1, 1 << 20}));
  // Readers that do not name a user reduction see the built-in rows alone.
  CHECK(s.measurements("GPU-a").size() == 1);
  REQUIRE(s.bests("GPU-a").size() == 1);
  CHECK(s.bests("GPU-a")[0].op == Op::sum);
  MeasurementFilter f;
  f.op = OpKey::user(h);
  const auto mine = s.measurements("GPU-a", f);
  REQUIRE(mine.size() == 3);
  for (const auto& m : mine) CHECK(m.user == h);
  CHECK(s.measured_keys("GPU-a", DType::f32, OpKey::user(h), Problem::array, {1, 1 << 20}) ==
        std::vector<std::string>{"unrolling.b256.u2.lastblock", "unrolling.b512.u4.lastblock"});
  const auto users = s.user_bests("GPU-a");
  REQUIRE(users.size() == 3); // (h, 2^20), (h, 2^24), (other, 2^20)
  CHECK(users[0].user == std::min(h, other));
}

TEST_CASE("reductions: kept once per hash, a second description of a hash refused with the store unchanged",
          "[store][user]") {
  Store s(":memory:");
  CHECK(s.reductions().empty());
  const Reduction r = sum_of_squares();
  s.add_reduction({r.hash(), r.canonical(), to_text(r), {}});
  s.add_reduction({r.hash(), r.canonical(), to_text(r), {}}); // again: nothing changes
  REQUIRE(s.reductions().size() == 1);
  const auto kept = s.reduction(r.hash());
  REQUIRE(kept);
  CHECK(kept->canonical == r.canonical());
  CHECK(parse_reduction(kept->text).canonical() == r.canonical());
  CHECK_FALSE(kept->first_seen.empty());
  CHECK_FALSE(s.reduction(r.hash() ^ 1));
  CHECK_THROWS_AS(s.add_reduction({r.hash(), "another description", "map = x\n", {}}), StoreError);
  REQUIRE(s.reductions().size() == 1);
  CHECK(s.reduction(r.hash())->canonical == r.canonical());
}

TEST_CASE("a store of schema 5 migrates keeping its rows; read-only it has no reductions", "[store][user]") {
  const testing::TempDir tmp;
  const std::string path = tmp.file("old.db");
  {
    Store s(path);
    fill(s, {row("unrolling.b256.u8.lastblock", 4096, 2.5)});
  }
  raw_exec(path, "DROP TABLE reductions; PRAGMA user_version = 5;");
  {
    Store ro(path, Store::Mode::read_only);
    CHECK(ro.user_version() == 5);
    CHECK(ro.reductions().empty());
    CHECK_FALSE(ro.reduction(1));
    CHECK(ro.measurements("GPU-a").size() == 1);
  }
  Store s(path);
  CHECK(s.user_version() == Store::schema_version());
  CHECK(s.measurements("GPU-a").size() == 1);
  const Reduction r = sum_of_squares();
  s.add_reduction({r.hash(), r.canonical(), to_text(r), {}});
  CHECK(s.reductions().size() == 1);
}

TEST_CASE("merge brings a user reduction's rows and description; a clash of descriptions is refused, "
          "neither store changed", "[store][user][merge]") {
  const testing::TempDir tmp;
  const Reduction r = sum_of_squares();
  const std::uint64_t h = r.hash();
  const std::string a = tmp.file("a.db"), b = tmp.file("b.db"), c = tmp.file("c.db");
  {
    Store other(b);
    fill(other, {row("unrolling.b256.u2.lastblock", 1 << 20, 8.0, h)}, "GPU-b");
    other.add_reduction({h, r.canonical(), to_text(r), {}});
  }
  Store mine(a);
  fill(mine, {row("unrolling.b256.u8.lastblock", 1 << 20, 5.0)});
  const MergeStats stats = mine.merge_from(b);
  CHECK(stats.reductions == 1);
  CHECK(stats.measurements == 1);
  REQUIRE(mine.reduction(h));
  const auto best = mine.best("GPU-b", DType::f32, OpKey::user(h), Problem::array, {1, 1 << 20});
  REQUIRE(best);
  CHECK(best->m.key == "unrolling.b256.u2.lastblock");
  CHECK(mine.merge_from(b).reductions == 0); // idempotent

  // Another store holding the same name with another description: refused, nothing merged.
  {
    Store clash(c);
    fill(clash, {row("unrolling.b128.u2.lastblock", 1 << 22, 3.0)}, "GPU-c");
    clash.add_reduction({h, "not the same description", "map = x\n", {}});
  }
  CHECK_THROWS_AS(mine.merge_from(c), StoreError);
  CHECK_FALSE(mine.device("GPU-c"));
  CHECK(mine.reduction(h)->canonical == r.canonical());
}
