// rt_store_writer: one process writing a tuning database the way the tuner does, for the
// cross-process concurrency test (tests/store_concurrency.cmake), which starts several at once on
// one file and then counts the rows.
//   rt_store_writer write PATH UUID COUNT BATCH   register GPU UUID, begin a run, add COUNT
//                                                 measurements in batches of BATCH, end the run
//   rt_store_writer count PATH UUID               print: <measurements> <runs> <best rows>
//   rt_store_writer record PATH UUID MODEL        note the call point rows float64 max 1024 x 4096
//                                                 (graded related) as the library records one
//   rt_store_writer record-user PATH UUID MODEL   the same for the user reduction "map = x * x" at rows
//                                                 float32 1024 x 4096, its description kept; prints
//                                                 its name (user:<hash>)
//   rt_store_writer tune PATH UUID HOLD_MS        tune the point rows float32 sum 1024 x 4096 on
//                                                 first use as the worker does: its claim taken,
//                                                 HOLD_MS of "measuring", one row stored, released;
//                                                 or found tuned by another; prints what it did
//   rt_store_writer hold PATH UUID                take that point's claim and exit holding it (a
//                                                 worker killed while measuring)
// Exit 0 on success, 1 with a one-line message on any error (a "database is locked" included).
#include "db/claims.h"
#include "db/store.h"
#include "reduce_tune/reduction.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

using namespace reduce_tune;
using namespace reduce_tune::db;

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

int write(const std::string& path, const std::string& uuid, int count, int batch) {
  const double start = now_s();
  Store s(path);
  DeviceRecord d;
  d.uuid = uuid;
  d.name = "rt_store_writer";
  d.cc_major = 9;
  s.upsert_device(d);
  const std::int64_t run = s.begin_run({0, uuid, "test", "0", "rt_store_writer", "none", "", "", ""});
  int written = 0;
  while (written < count) {
    std::vector<Measurement> ms;
    for (int i = 0; i < batch && written < count; ++i, ++written) {
      Measurement m;
      m.key = "unrolling.b256.u" + std::to_string(1 << (written % 4)) + ".host";
      m.variant = "unrolling";
      m.block = 256, m.unroll = 1 << (written % 4);
      m.tail = "none", m.finish = "host", m.dtype = DType::f32, m.op = Op::sum;
      m.n = std::uint64_t(1) << (10 + written % 16);
      m.median_us = m.min_us = m.max_us = 1.0 + written;
      m.reps = 1, m.valid = true;
      ms.push_back(m);
    }
    s.add_measurements(run, ms);
  }
  s.end_run(run, "done");
  // For the test's log: when this writer held the file, to show that the writers overlapped.
  std::fprintf(stderr, "%s wrote %d measurements from %.6f to %.6f\n", uuid.c_str(), written, start, now_s());
  return 0;
}

int count(const std::string& path, const std::string& uuid) {
  Store s(path);
  std::size_t runs = 0;
  for (const RunRecord& r : s.runs()) runs += r.device_uuid == uuid && r.status == "done";
  std::printf("%zu %zu %zu\n", s.measurements(uuid).size(), runs, s.bests(uuid).size());
  return 0;
}

int record(const std::string& path, const std::string& uuid, const std::string& model) {
  Store s(path);
  RecordedPoint p;
  p.device_uuid = uuid, p.device_name = model;
  p.dtype = DType::f64, p.op = Op::max, p.problem = Problem::rows, p.shape = {1024, 4096};
  p.grade = "related";
  s.record_point(p);
  return 0;
}

int record_user(const std::string& path, const std::string& uuid, const std::string& model) {
  Store s(path);
  const Reduction sq = parse_reduction("map = x * x\n");
  s.add_reduction({sq.hash(), sq.canonical(), to_text(sq), {}});
  RecordedPoint p;
  p.device_uuid = uuid, p.device_name = model;
  p.dtype = DType::f32, p.problem = Problem::rows, p.shape = {1024, 4096}, p.user = sq.hash();
  p.grade = "related";
  s.record_point(p);
  std::printf("%s\n", sq.name().c_str());
  return 0;
}

const PointKey kPoint{"", DType::f32, Op::sum, Problem::rows, Shape{1024, 4096}};

int tune(const std::string& path, const std::string& uuid, int hold_ms) {
  Store s(path);
  PointKey p = kPoint;
  p.device_uuid = uuid;
  const std::string owner = claim_owner(long(getpid()));
  const auto tuned = [&] { return s.best(uuid, p.dtype, p.op, p.problem, p.shape).has_value(); };
  switch (acquire_point(s, p, owner, 30, 20, tuned)) {
  case Acquired::tuned: std::fprintf(stderr, "found tuned\n"); return 0;
  case Acquired::busy: std::fprintf(stderr, "busy\n"); return 0;
  case Acquired::claimed: break;
  }
  DeviceRecord d;
  d.uuid = uuid;
  d.name = "rt_store_writer";
  d.cc_major = 9;
  s.upsert_device(d);
  const std::int64_t run = s.begin_run({0, uuid, "test", "0", "rt_store_writer tune", "none", "", "", ""});
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  Measurement m;
  m.key = "rows_block.b256.u1.v4";
  m.variant = "rows_block";
  m.block = 256, m.vec = 4, m.tail = "none", m.finish = "none";
  m.dtype = p.dtype, m.op = p.op, m.problem = p.problem, m.count = p.shape.count, m.n = p.shape.length;
  m.median_us = m.min_us = m.max_us = 10;
  m.reps = 1, m.valid = true;
  s.add_measurements(run, {m});
  s.end_run(run, "done");
  s.release_claims(owner);
  std::fprintf(stderr, "measured\n");
  return 0;
}

int hold(const std::string& path, const std::string& uuid) {
  Store s(path);
  PointKey p = kPoint;
  p.device_uuid = uuid;
  if (s.claim(p, claim_owner(long(getpid())), 3600)) {
    std::fprintf(stderr, "rt_store_writer: the point is claimed already\n");
    return 1;
  }
  return 0; // exits holding the claim, as a killed worker would
}

} // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 5 && a[0] == "write") return write(a[1], a[2], std::stoi(a[3]), std::stoi(a[4]));
    if (a.size() == 3 && a[0] == "count") return count(a[1], a[2]);
    if (a.size() == 4 && a[0] == "record") return record(a[1], a[2], a[3]);
    if (a.size() == 4 && a[0] == "record-user") return record_user(a[1], a[2], a[3]);
    if (a.size() == 4 && a[0] == "tune") return tune(a[1], a[2], std::stoi(a[3]));
    if (a.size() == 3 && a[0] == "hold") return hold(a[1], a[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rt_store_writer: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: rt_store_writer write PATH UUID COUNT BATCH | count PATH UUID | record PATH UUID MODEL | "
                       "tune PATH UUID HOLD_MS | hold PATH UUID\n");
  return 2;
}
