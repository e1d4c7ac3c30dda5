// First-use tuning without a GPU: the option's environment, the worker's request lines, claims
// on a point between two store connections, and a missing or wrong worker giving an answer that
// says why instead of an error (runtime/autotune.h, db/claims.h, tuner/autotune_worker.h).
#include <catch2/catch.hpp>

#include "db/claims.h"
#include "db/store.h"
#include "runtime/autotune.h"
#include "tests/fixtures.h"
#include "tuner/autotune_worker.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

using namespace reduce_tune;

namespace {

using testing::EnvVar;

db::PointKey point() { return {"GPU-test", DType::f32, Op::sum, Problem::rows, Shape{1024, 4096}}; }

/// A process of this host that has exited (its pid is free until it is reused).
long dead_pid() {
  const pid_t p = fork();
  if (p == 0) _exit(0);
  int status = 0;
  waitpid(p, &status, 0);
  return long(p);
}

} // namespace

TEST_CASE("autotune: $REDUCE_TUNE_AUTOTUNE and $REDUCE_TUNE_AUTOTUNE_MS", "[autotune]") {
  {
    EnvVar v("REDUCE_TUNE_AUTOTUNE", std::nullopt);
    CHECK_FALSE(detail::autotune_from_env());
  }
  for (const char* on : {"1", "true", "yes", "on"}) {
    EnvVar v("REDUCE_TUNE_AUTOTUNE", on);
    CHECK(detail::autotune_from_env());
  }
  for (const char* off : {"0", "", "false", "no", "2"}) {
    EnvVar v("REDUCE_TUNE_AUTOTUNE", off);
    CHECK_FALSE(detail::autotune_from_env());
  }
  {
    EnvVar v("REDUCE_TUNE_AUTOTUNE_MS", std::nullopt);
    CHECK(detail::autotune_budget_ms(120) == 120);
    CHECK(detail::autotune_budget_ms(0) == 300); // the default
  }
  {
    EnvVar v("REDUCE_TUNE_AUTOTUNE_MS", "50");
    CHECK(detail::autotune_budget_ms(120) == 50); // the environment wins
  }
  for (const char* bad : {"-5", "0", "fast", "10ms", ""}) {
    EnvVar v("REDUCE_TUNE_AUTOTUNE_MS", bad);
    CHECK(detail::autotune_budget_ms(120) == 120);
  }
  // Off unless asked: the option's default.
  CHECK_FALSE(Options{}.autotune);
}

TEST_CASE("autotune: only a call tunes, a capture or a question takes the store's answer and records", "[autotune]") {
  using detail::EntryUse;
  using detail::FirstUse;
  using detail::first_use;
  const Shape rows{1024, 4096};
  for (EntryUse use : {EntryUse::call, EntryUse::capture, EntryUse::query}) {
    // Off, or tuned exactly: as the lookup says, whatever the use.
    CHECK(first_use(false, Match::builtin, use, Problem::rows, rows) == FirstUse::as_is);
    CHECK(first_use(true, Match::exact, use, Problem::rows, rows) == FirstUse::as_is);
  }
  for (Match m : {Match::nearest_size, Match::shipped, Match::same_arch, Match::carried, Match::related, Match::builtin}) {
    CHECK(first_use(true, m, EntryUse::call, Problem::rows, rows) == FirstUse::tune);
    CHECK(first_use(true, m, EntryUse::capture, Problem::rows, rows) == FirstUse::provisional);
    CHECK(first_use(true, m, EntryUse::query, Problem::array, Shape{1, 1 << 20}) == FirstUse::provisional);
  }
  // Offsets looked up by their count alone: nothing to search at; recorded as the lookup has it.
  CHECK(first_use(true, Match::shipped, EntryUse::call, Problem::segments, Shape{512, 0}) == FirstUse::as_is);
  CHECK(first_use(true, Match::shipped, EntryUse::call, Problem::segments, Shape{512, 64}) == FirstUse::tune);
  CHECK(first_use(true, Match::shipped, EntryUse::capture, Problem::segments, Shape{512, 0}) == FirstUse::provisional);
}

TEST_CASE("autotune: the worker's request lines", "[autotune]") {
  const std::string line = "tune\tGPU-1\tfloat32\tsum\trows\t1024\t4096\tdevice\t1\t0\t250\t/tmp/a b.db\t\t";
  std::string why;
  const auto r = detail::parse_request_line(line, &why);
  REQUIRE(r);
  CHECK(r->device_uuid == "GPU-1");
  CHECK(r->dtype == DType::f32);
  CHECK(r->op == Op::sum);
  CHECK(r->problem == Problem::rows);
  CHECK(r->shape == Shape{1024, 4096});
  CHECK(r->device_result);
  CHECK_FALSE(r->wide_result);
  CHECK(r->deterministic);
  CHECK_FALSE(r->allow_in_place);
  CHECK(r->budget_ms == 250);
  CHECK(r->store_path == "/tmp/a b.db"); // a path with a space: fields are tab-separated
  CHECK(r->nvrtc_path.empty());
  const auto wide = detail::parse_request_line("tune\tG\tbfloat16\tsum\tarray\t1\t1048576\twide\t0\t1\t300\ts.db\tlib.so\t");
  REQUIRE(wide);
  CHECK(wide->wide_result);
  CHECK(wide->device_result);
  CHECK(wide->allow_in_place);
  CHECK(wide->nvrtc_path == "lib.so");
  // What the library writes, the worker reads back as it was (one line).
  std::string written = detail::request_line(*r);
  REQUIRE(written.back() == '\n');
  written.pop_back();
  const auto back = detail::parse_request_line(written);
  REQUIRE(back);
  CHECK(back->shape == r->shape);
  CHECK(back->problem == r->problem);
  CHECK(back->device_result == r->device_result);
  CHECK(back->deterministic == r->deterministic);
  CHECK(back->budget_ms == r->budget_ms);
  CHECK(back->store_path == r->store_path);
  CHECK(detail::request_line(*back) == detail::request_line(*r));
  for (const std::string bad : {
           std::string("tune\tG\tfloat32\tsum\trows\t1024\t4096\tdevice\t1\t0\t250\ts.db\t"),     // a field short
           std::string("tune\tG\tfloat99\tsum\trows\t1024\t4096\tdevice\t1\t0\t250\ts.db\t\t"), // dtype
           std::string("tune\tG\tfloat32\tsum\trows\t0\t4096\tdevice\t1\t0\t250\ts.db\t\t"),    // empty shape
           std::string("tune\tG\tfloat32\tsum\trows\t1024\t4096\tboth\t1\t0\t250\ts.db\t\t"),   // result
           std::string("tune\tG\tfloat32\tsum\trows\t1024\t4096\tdevice\t2\t0\t250\ts.db\t\t"), // flag
           std::string("tune\tG\tfloat32\tsum\trows\t1024\t4096\tdevice\t1\t0\t-1\ts.db\t\t"),  // budget
           std::string("tune\tG\tfloat32\tsum\trows\t1024\t4096\tdevice\t1\t0\t250\t\t\t"),     // no store
           std::string("tune\tG\tfloat32\tsum\trows\t1k\t4096\tdevice\t1\t0\t250\ts.db\t\t"),   // a count
       }) {
    std::string w;
    CHECK_FALSE(detail::parse_request_line(bad, &w));
    CHECK_FALSE(w.empty());
  }
}

TEST_CASE("autotune: a point's claim is one process's until released or lapsed", "[autotune][store]") {
  const reduce_tune::testing::TempDir dir;
  const std::string path = (dir.path / "tuning.db").string();
  db::Store a(path), b(path);
  const std::string me = db::claim_owner(long(getpid()));
  const std::string other = "elsewhere:1"; // another host's process: never judged gone from here

  CHECK_FALSE(a.claim(point(), other, 60));          // taken
  CHECK_FALSE(a.claim(point(), other, 60));          // its own: renewed
  const auto held = b.claim(point(), me, 60, db::owner_gone);
  REQUIRE(held);                                     // the other's, live
  CHECK(held->owner == other);
  db::PointKey another = point();
  another.shape = Shape{2048, 4096};
  CHECK_FALSE(b.claim(another, me, 60));             // another point is free
  a.release_claims(other);
  CHECK_FALSE(b.claim(point(), me, 60));             // released: now mine
  REQUIRE(a.claims().size() == 2);
  CHECK(a.claims()[0].second.owner == me);

  SECTION("an expired claim lapses") {
    b.release_claims(me);
    CHECK_FALSE(a.claim(point(), other, 0.05));
    CHECK(b.claim(point(), me, 60));
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    CHECK_FALSE(b.claim(point(), me, 60));
  }
  SECTION("the claim of a process of this host that is gone lapses at once") {
    b.release_claims(me);
    const std::string gone = db::claim_owner(dead_pid());
    CHECK(db::owner_gone(db::Claim{gone, 0}));
    CHECK_FALSE(db::owner_gone(db::Claim{me, 0}));
    CHECK_FALSE(db::owner_gone(db::Claim{other, 0}));
    CHECK_FALSE(a.claim(point(), gone, 60));
    CHECK(b.claim(point(), me, 60)); // without the rule, a live claim
    CHECK_FALSE(b.claim(point(), me, 60, db::owner_gone));
  }
  SECTION("acquire_point: tuned meanwhile, busy, claimed") {
    b.release_claims(me);
    CHECK_FALSE(a.claim(point(), other, 60));
    std::atomic<bool> tuned{false};
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(db::acquire_point(b, point(), me, 60, 0.05, [&] { return tuned.load(); }) == db::Acquired::busy);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(50)); // it waited
    // The holder stores the point and lets go while the other waits.
    std::thread holder([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      tuned = true;
    });
    CHECK(db::acquire_point(b, point(), me, 60, 5, [&] { return tuned.load(); }) == db::Acquired::tuned);
    holder.join();
    a.release_claims(other);
    tuned = false;
    CHECK(db::acquire_point(b, point(), me, 60, 0, [&] { return tuned.load(); }) == db::Acquired::claimed);
  }
}

TEST_CASE("autotune: no worker, or not this library's, gives an answer and no error", "[autotune]") {
  const reduce_tune::testing::TempDir dir;
  detail::TuneRequest r;
  r.device_uuid = "GPU-none";
  r.store_path = (dir.path / "tuning.db").string();
  r.shape = {1, 1 << 20};

  SECTION("$REDUCE_TUNE_WORKER names nothing") {
    EnvVar v("REDUCE_TUNE_WORKER", (dir.path / "no-such-reduce-tune").string());
    detail::stop_autotune_worker();
    std::string why;
    CHECK_FALSE(detail::find_worker(&why));
    CHECK_THAT(why, Catch::Contains("no-such-reduce-tune"));
    const detail::TuneOutcome t = detail::autotune_point(r);
    CHECK(t.status == detail::TuneOutcome::Status::unavailable);
    CHECK_THAT(t.note, Catch::Contains("no tuning worker"));
    CHECK_FALSE(std::filesystem::exists(r.store_path)); // nothing was written
  }
  SECTION("$REDUCE_TUNE_WORKER empty: off") {
    EnvVar v("REDUCE_TUNE_WORKER", "");
    detail::stop_autotune_worker();
    std::string why;
    CHECK_FALSE(detail::find_worker(&why));
    CHECK_THAT(why, Catch::Contains("empty"));
    CHECK(detail::autotune_point(r).status == detail::TuneOutcome::Status::unavailable);
  }
  SECTION("a program that is not the worker") {
    const auto fake = dir.path / "reduce-tune";
    std::ofstream(fake) << "#!/bin/sh\necho hello\nsleep 1\n";
    chmod(fake.c_str(), 0700);
    EnvVar v("REDUCE_TUNE_WORKER", fake.string());
    detail::stop_autotune_worker();
    REQUIRE(detail::find_worker());
    const detail::TuneOutcome t = detail::autotune_point(r);
    CHECK(t.status == detail::TuneOutcome::Status::unavailable);
    CHECK_THAT(t.note, Catch::Contains("not this library's tuning worker"));
  }
  SECTION("a worker that others may replace is refused") {
    const auto open = dir.path / "open";
    std::filesystem::create_directories(open);
    chmod(open.c_str(), 0777); // writable by others, not sticky
    const auto fake = open / "reduce-tune";
    std::ofstream(fake) << "#!/bin/sh\n";
    chmod(fake.c_str(), 0700);
    EnvVar v("REDUCE_TUNE_WORKER", fake.string());
    std::string why;
    CHECK_FALSE(detail::find_worker(&why));
    CHECK_FALSE(why.empty());
  }
  SECTION("a worker that dies on a point: the configuration it measured is recorded as failed") {
    // A stand-in that greets, starts a run in the store as the worker would, names a
    // configuration, then dies as a faulting kernel's process does.
    db::Store s(r.store_path);
    db::DeviceRecord d;
    d.uuid = r.device_uuid;
    d.name = "test GPU";
    s.upsert_device(d);
    const std::int64_t run = s.begin_run({0, r.device_uuid, "test", "0", "stand-in", "none", "", "", ""});
    CHECK_FALSE(s.claim({r.device_uuid, r.dtype, r.op, r.problem, r.shape}, "standin:1", 60));
    const auto fake = dir.path / "reduce-tune";
    std::ofstream(fake) << "#!/bin/sh\nprintf 'rt-autotune\\t" << detail::kAutotuneProtocol << "\\tready\\n'\nread line\n"
                        << "printf 'run\\t" << run << "\\tstandin:1\\n'\n"
                        << "printf 'measure\\tvectorized.b256.u2.v4.g4.shfl.atomic\\n'\nkill -SEGV $$\n";
    chmod(fake.c_str(), 0700);
    EnvVar v("REDUCE_TUNE_WORKER", fake.string());
    detail::stop_autotune_worker();
    const detail::TuneOutcome t = detail::autotune_point(r);
    CHECK(t.status == detail::TuneOutcome::Status::failed);
    CHECK_THAT(t.note, Catch::Contains("vectorized.b256.u2.v4.g4.shfl.atomic"));
    const auto ms = s.measurements(r.device_uuid);
    REQUIRE(ms.size() >= 1);
    CHECK(ms[0].key == "vectorized.b256.u2.v4.g4.shfl.atomic");
    CHECK_FALSE(ms[0].valid);
    CHECK_THAT(ms[0].error, Catch::Contains("signal"));
    CHECK(s.claims().empty()); // the dead worker's claim let go
    bool ended = false;
    for (const auto& run_record : s.runs())
      if (run_record.id == run) ended = run_record.status == "failed";
    CHECK(ended);
  }
}
