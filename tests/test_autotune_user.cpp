// First-use tuning of user reductions without a GPU: the request line that carries a description
// (tabs, newlines, `<<` blocks) and what the worker refuses in it; the first-use decision on a
// user reduction's graded lookup; claims and a dead worker's clean-up under the reduction's hash;
// and recorded user points as the sweeps of `tune --recorded` (runtime/autotune.h, db/claims.h,
// tuner/recorded.h).
#include <catch2/catch.hpp>

#include "db/claims.h"
#include "db/store.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "runtime/autotune.h"
#include "runtime/user_lookup.h"
#include "tests/fixtures.h"
#include "tests/store_fixture.h"
#include "tuner/recorded.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

using namespace reduce_tune;

namespace {

using testing::EnvVar;
using testing::stored_row;
using testing::add;
using testing::h100;

/// A description whose text holds what a line protocol must carry safely: a preamble of several
/// lines (a `<<` block) with tabs, a line that reads like a block's end tag, and `<<` itself.
Reduction awkward() {
  Reduction r;
  r.preamble = "// sums of squares\n"
               "__device__ float sq(float v) {\n"
               "\treturn v * v; // a tab before, and << after\n"
               "}\n"
               "END";
  r.map = "sq(float(x))";
  r.accumulator = "float";
  r.post = "sqrt(a)";
  r.inputs = {DType::f32, DType::bf16};
  r.result = DType::f32;
  return r;
}

std::string hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) out += kDigits[c >> 4], out += kDigits[c & 15];
  return out;
}

/// A request line for `op` with `description` as its last field.
std::string line_of(const std::string& op, const std::string& description, const std::string& dtype = "float32") {
  return "tune\tGPU-1\t" + dtype + "\t" + op + "\trows\t1024\t4096\tdevice\t0\t0\t300\ts.db\t\t" + description;
}

} // namespace

TEST_CASE("autotune user: a user reduction's request line round trip", "[autotune][user]") {
  const Reduction desc = awkward();
  REQUIRE(to_text(desc).find(" <<") != std::string::npos); // the preamble is a block
  REQUIRE(to_text(desc).find('\t') != std::string::npos);
  detail::TuneRequest r;
  r.device_uuid = "GPU-1";
  r.dtype = DType::bf16;
  r.user = make_user_op(desc);
  r.problem = Problem::columns;
  r.shape = {4096, 64};
  r.device_result = true;
  r.budget_ms = 120;
  r.store_path = "/tmp/a b.db";
  const std::string line = detail::request_line(r);
  // One line of 14 fields, whatever the description holds.
  REQUIRE(line.back() == '\n');
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  const std::vector<std::string> f = detail::split_tabs(line.substr(0, line.size() - 1));
  REQUIRE(f.size() == 14);
  CHECK(f[3] == r.user->name); // the op as the store names it
  CHECK_FALSE(f[13].empty());

  std::string why;
  const auto back = detail::parse_request_line(line.substr(0, line.size() - 1), &why);
  INFO(why);
  REQUIRE(back);
  REQUIRE(back->user);
  CHECK(back->user->hash == r.user->hash);
  CHECK(back->user->description.canonical() == desc.canonical());
  // Tabs, newlines and the line that reads like a tag as they were (the canonical text trims).
  CHECK_THAT(back->user->description.preamble, Catch::StartsWith(desc.preamble));
  CHECK(back->op == Op::sum); // rendered in sum's place
  CHECK(back->dtype == DType::bf16);
  CHECK(back->problem == Problem::columns);
  CHECK(back->shape == r.shape);
  CHECK(back->store_path == r.store_path);
  // Written again: the same line.
  const std::string again = detail::request_line(*back);
  std::vector<std::string> g = detail::split_tabs(again.substr(0, again.size() - 1));
  REQUIRE(g.size() == 14);
  CHECK(std::vector<std::string>(g.begin(), g.end() - 1) == std::vector<std::string>(f.begin(), f.end() - 1));
  const auto twice = detail::parse_request_line(again.substr(0, again.size() - 1));
  REQUIRE(twice);
  CHECK(twice->user->hash == r.user->hash);
  CHECK(again == line); // to_text of what parse_reduction read is the text it read

  // A built-in op's request has an empty last field, and reads back without a reduction.
  detail::TuneRequest b = r;
  b.user = nullptr;
  b.dtype = DType::f32;
  b.op = Op::max;
  const std::string builtin = detail::request_line(b);
  CHECK(detail::split_tabs(builtin.substr(0, builtin.size() - 1)).back().empty());
  const auto plain = detail::parse_request_line(builtin.substr(0, builtin.size() - 1));
  REQUIRE(plain);
  CHECK_FALSE(plain->user);
  CHECK(plain->op == Op::max);
}

TEST_CASE("autotune user: what the worker refuses in a user reduction's request", "[autotune][user]") {
  const auto u = make_user_op(awkward());
  const std::string text = to_text(u->description);
  Reduction other_r = awkward();
  other_r.post = "a";
  const auto other = make_user_op(other_r);
  // The line as the library writes it is accepted; each below differs from it in one way.
  REQUIRE(detail::parse_request_line(line_of(u->name, hex(text))));
  const std::pair<std::string, std::string> bad[] = {
      {line_of(u->name, ""), "no description"},
      {line_of(u->name, hex(text).substr(1)), "hex"},                            // odd length
      {line_of(u->name, "zz" + hex(text)), "hex"},                               // not a hex digit
      {line_of(u->name, hex(text) + "\tmore"), "14 fields"},                     // a tab too many
      {line_of(u->name, hex(to_text(other_r))), "sent as"},                      // another's hash
      {line_of(u->name, hex("map = x\nbogus = 1\n")), "bogus"},                  // does not parse
      {line_of(u->name, hex("map = x\nmap <<EOF\nx\n")), u->name},               // an unended block
      {line_of(u->name, hex(text), "float64"), "float64"},                       // a dtype it does not take
      {line_of("sum", hex(text)), "built-in"},                                   // a description for sum
      {line_of("user:0123", hex(text)), "unknown"},                              // not a reduction's name
  };
  for (const auto& [line, reason] : bad) {
    INFO(line);
    std::string why;
    CHECK_FALSE(detail::parse_request_line(line, &why));
    CHECK_THAT(why, Catch::Contains(reason));
  }
  CHECK(other->hash != u->hash);
}

TEST_CASE("autotune user: a user reduction's entry is tuned unless its own rows are exact", "[autotune][user]") {
  using detail::EntryUse;
  using detail::FirstUse;
  using detail::first_use;
  Reduction sq;
  sq.map = "x * x";
  const auto u = make_user_op(sq);
  const Shape at{1, std::uint64_t(1) << 20};
  const auto grade = [&](const db::Store* s) {
    return lookup_user(s, nullptr, h100("GPU-a"), *u, DType::f32, Problem::array, at, {}).match;
  };
  const auto decide = [&](Match m, EntryUse use) { return first_use(true, m, use, Problem::array, at); };

  // No store: the defaults; the call tunes, a capture or a question does not.
  CHECK(grade(nullptr) == Match::builtin);
  CHECK(decide(grade(nullptr), EntryUse::call) == FirstUse::tune);
  CHECK(decide(grade(nullptr), EntryUse::capture) == FirstUse::provisional);
  CHECK(decide(grade(nullptr), EntryUse::query) == FirstUse::provisional);

  db::Store s(":memory:");
  // sum's row at the very point: exact for sum, only related for the reduction, which is tuned.
  add(s, "GPU-a", {stored_row("vectorized.b512.u2.v4.g0.shfl.lastblock", DType::f32, Op::sum, 3.0)});
  CHECK(grade(&s) == Match::related);
  CHECK(decide(grade(&s), EntryUse::call) == FirstUse::tune);

  // Its own row at another size: nearest_size, still tuned at the call's point.
  db::Measurement near = stored_row("vectorized.b256.u4.v4.g0.shfl.lastblock", DType::f32, Op::sum, 9.0,
                                    Problem::array, {1, std::uint64_t(1) << 24});
  near.user = u->hash;
  add(s, "GPU-a", {near});
  CHECK(grade(&s) == Match::nearest_size);
  CHECK(decide(grade(&s), EntryUse::call) == FirstUse::tune);

  // Its own row at the point, as the worker stores it: exact, taken as it is by every use.
  db::Measurement own = stored_row("vectorized.b256.u4.v4.g0.shfl.lastblock", DType::f32, Op::sum, 9.0);
  own.user = u->hash;
  add(s, "GPU-a", {own});
  CHECK(grade(&s) == Match::exact);
  for (EntryUse use : {EntryUse::call, EntryUse::capture, EntryUse::query}) CHECK(decide(grade(&s), use) == FirstUse::as_is);
  // With autotune off, nothing is tuned whatever the grade.
  CHECK(first_use(false, Match::related, EntryUse::call, Problem::array, at) == FirstUse::as_is);
}

TEST_CASE("autotune user: claims and a dead worker's clean-up are the reduction's own", "[autotune][user]") {
  const reduce_tune::testing::TempDir dir;
  Reduction sq;
  sq.map = "x * x";
  const auto u = make_user_op(sq);
  detail::TuneRequest r;
  r.device_uuid = "GPU-none";
  r.store_path = (dir.path / "tuning.db").string();
  r.shape = {1, 1 << 20};
  r.user = u;
  db::Store s(r.store_path);
  db::PointKey mine{r.device_uuid, r.dtype, r.op, r.problem, r.shape};
  mine.user = u->hash;
  const db::PointKey sums{r.device_uuid, r.dtype, Op::sum, r.problem, r.shape};
  // The reduction's point and sum's at the same shape are two points: each claimed once.
  CHECK_FALSE(s.claim(mine, "standin:1", 60));
  CHECK_FALSE(s.claim(sums, "elsewhere:2", 60));
  const auto held = s.claim(mine, "elsewhere:2", 60);
  REQUIRE(held);
  CHECK(held->owner == "standin:1");
  s.release_claims("elsewhere:2");
  REQUIRE(s.claims().size() == 1);
  CHECK(s.claims()[0].first.user == u->hash);
  CHECK(s.claims()[0].first.op_key() == db::OpKey::user(u->hash));

  // A stand-in worker that takes a run, names a configuration of the reduction and dies.
  db::DeviceRecord d;
  d.uuid = r.device_uuid;
  d.name = "test GPU";
  s.upsert_device(d);
  const std::int64_t run = s.begin_run({0, r.device_uuid, "test", "0", "stand-in", "none", "", "", ""});
  const auto fake = dir.path / "reduce-tune";
  const std::string seen = (dir.path / "request").string();
  std::ofstream(fake) << "#!/bin/sh\nprintf 'rt-autotune\\t" << detail::kAutotuneProtocol << "\\tready\\n'\n"
                      << "read line\nprintf '%s' \"$line\" > '" << seen << "'\n"
                      << "printf 'run\\t" << run << "\\tstandin:1\\n'\n"
                      << "printf 'measure\\tvectorized.b256.u2.v4.g4.shfl.lastblock\\n'\nkill -SEGV $$\n";
  chmod(fake.c_str(), 0700);
  const EnvVar v("REDUCE_TUNE_WORKER", fake.string());
  detail::stop_autotune_worker();
  const detail::TuneOutcome t = detail::autotune_point(r);
  detail::stop_autotune_worker();
  CHECK(t.status == detail::TuneOutcome::Status::failed);
  // The worker was sent the reduction.
  std::string sent;
  std::getline(std::ifstream(seen), sent);
  const auto parsed = detail::parse_request_line(sent);
  REQUIRE(parsed);
  REQUIRE(parsed->user);
  CHECK(parsed->user->hash == u->hash);
  // The configuration it died on is the reduction's failed row, not sum's.
  db::MeasurementFilter f;
  f.op = db::OpKey::user(u->hash);
  const auto rows = s.measurements(r.device_uuid, f);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].key == "vectorized.b256.u2.v4.g4.shfl.lastblock");
  CHECK(rows[0].user == u->hash);
  CHECK_FALSE(rows[0].valid);
  CHECK(s.measurements(r.device_uuid).empty()); // no built-in op's row
  CHECK(s.claims().empty());                    // its claim let go
}

TEST_CASE("autotune user: recorded user points are their own sweeps, by hash, without --ops", "[record][user]") {
  Reduction sq;
  sq.map = "x * x";
  const auto u = make_user_op(sq);
  db::Store s(":memory:");
  db::RecordedPoint p;
  p.device_uuid = "GPU-a", p.device_name = "NVIDIA H100 80GB HBM3";
  p.dtype = DType::f32, p.op = Op::sum, p.problem = Problem::rows, p.shape = {1024, 64};
  p.grade = "related";
  db::RecordedPoint q = p;
  q.user = u->hash;
  s.record_point(p);
  s.record_point(q); // the same shape, another op: another point
  s.record_point(q); // seen again: still one
  const auto all = s.recorded("GPU-a");
  REQUIRE(all.size() == 2);
  const auto user_point = std::find_if(all.begin(), all.end(), [](const db::RecordedPoint& r) { return r.user; });
  REQUIRE(user_point != all.end());
  CHECK(*user_point->user == u->hash);
  CHECK(user_point->op_key().name() == u->name);

  std::vector<db::RecordedPoint> unsweepable;
  const auto sweeps = recorded_sweeps(all, "GPU-a", p.device_name, &unsweepable);
  CHECK(unsweepable.empty());
  REQUIRE(sweeps.size() == 2);
  CHECK_FALSE(sweeps[0].user); // the built-in ops first
  CHECK(sweeps[1].user == u->hash);
  CHECK(sweeps[0].args() ==
        std::vector<std::string>{"--problem", "rows", "--dtypes", "float32", "--ops", "sum", "--shapes", "1024x64"});
  CHECK(sweeps[1].args() == std::vector<std::string>{"--problem", "rows", "--dtypes", "float32", "--shapes", "1024x64"});
}
