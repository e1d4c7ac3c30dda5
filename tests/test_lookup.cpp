// Tests of the configuration lookup (runtime/lookup.cpp) on stored fixtures: every grade, the
// requirements, rows that must be passed over, and opening a store that may not exist.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "runtime/shipped.h"
#include "tests/fixtures.h"

#include <filesystem>
#include <fstream>

using namespace reduce_tune;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t k20 = 1ull << 20, k24 = 1ull << 24;

db::DeviceRecord device(const std::string& uuid, const std::string& name, int major, int minor) {
  db::DeviceRecord d;
  d.uuid = uuid;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  d.sm_count = 132;
  d.driver_version = 13000;
  return d;
}

/// A measured row; the parameter columns follow the key where it parses (as the tuner writes them).
db::Measurement row(const std::string& key, std::uint64_t n, double median_us,
                    DType dtype = DType::f32, Op op = Op::sum) {
  db::Measurement m;
  m.key = key;
  if (const auto c = parse_key(key)) {
    m.variant = c->variant;
    m.block = c->block;
    m.unroll = c->unroll;
    m.vec = c->vec;
    m.grid = c->grid;
    m.tail = std::string(name(c->tail));
    m.finish = std::string(name(c->finish));
  } else {
    m.variant = key.substr(0, key.find('.'));
    m.tail = "none";
    m.finish = "host";
  }
  m.dtype = dtype;
  m.op = op;
  m.n = n;
  m.median_us = m.min_us = m.max_us = median_us;
  m.reps = 20;
  m.gbps = double(n) * 4 / (median_us * 1e3);
  m.valid = true;
  m.seed = 1;
  return m;
}

/// A row of a segmented problem (offsets where not named): `k` measured at `shape` (count x length).
db::Measurement seg(const std::string& k, Problem p, Shape shape, double us) {
  db::Measurement m = row(k, shape.length, us);
  m.problem = p;
  m.count = shape.count;
  return m;
}
db::Measurement seg(const std::string& k, Shape shape, double us) {
  return seg(k, Problem::segments, shape, us);
}

void add(db::Store& s, const std::string& uuid, const std::vector<db::Measurement>& rows) {
  db::RunRecord r;
  r.device_uuid = uuid;
  r.tool_version = "0.1.0";
  r.nvrtc_version = "13.0";
  r.timing_method = "fixture";
  const auto run = s.begin_run(r);
  s.add_measurements(run, rows);
  s.end_run(run, "done");
}

DeviceKey key_of(const std::string& uuid, int major, int minor) {
  DeviceKey k;
  k.uuid = uuid;
  k.cc_major = major;
  k.cc_minor = minor;
  k.sm_count = 132;
  return k;
}

const DeviceKey A = key_of("GPU-a", 9, 0), B = key_of("GPU-b", 9, 0), C = key_of("GPU-c", 8, 0);

// The fastest rows at A, 2^20, float32 sum, in order: a failed check, then four rows each unusable
// under some requirement, then two that are always usable.
const std::string kAtomic = "atomic_shared.b256.atomic";              // float atomic finish
const std::string kInPlace = "neighbored_gmem.b256.host";             // works in place
const std::string kUnknown = "warp_magic.b256.host";                  // a variant of a later build
const std::string kUnsafe = "unroll_warps.b256.u4.volatile.host";     // invalid from sm_70
const std::string kHost = "unrolling.b512.u8.host";
const std::string kVector = "vectorized.b256.u4.v4.g0.shfl.lastblock";

/// Devices A and B (sm_90) and C (sm_80); A tuned at 2^20 and 2^24, nothing stored for B or C.
db::Store fixture() {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  s.upsert_device(device(B.uuid, "H100 B", 9, 0));
  s.upsert_device(device(C.uuid, "A100 C", 8, 0));
  db::Measurement failed = row("interleaved.b256.host", k20, 1.0);
  failed.valid = false;
  failed.error = "mismatch";
  add(s, A.uuid,
      {failed, row(kAtomic, k20, 8.0), row(kInPlace, k20, 8.5), row(kUnknown, k20, 9.0),
       row(kUnsafe, k20, 9.5), row(kHost, k20, 10.0), row(kVector, k20, 11.0),
       row("vectorized.b512.u4.v4.g0.shfl.lastblock", k24, 100.0),
       row("unrolling.b256.u2.host", k20, 7.0, DType::i32, Op::min)});
  return s;
}

std::string key_of(const Choice& c) { return key(c.config); }

/// A unique path under the temp directory, removed (with any WAL side files) at the end.
using reduce_tune::testing::TempDir;

} // namespace

TEST_CASE("lookup: exact when this GPU was tuned at n", "[lookup]") {
  const db::Store s = fixture();
  const Choice c = lookup(s, A, DType::f32, Op::sum, k20, {});
  CHECK(c.match == Match::exact);
  CHECK(key_of(c) == kAtomic);
  CHECK(c.tuned_n == k20);
  CHECK(c.median_us == 8.0);
  CHECK(c.gbps == Approx(double(k20) * 4 / 8e3));
  CHECK(c.device_name == "H100 A");
  CHECK(c.note.empty()); // the only faster row failed its check: never a candidate

  const Choice i = lookup(s, A, DType::i32, Op::min, k20, {});
  CHECK(i.match == Match::exact);
  CHECK(key_of(i) == "unrolling.b256.u2.host");
}

TEST_CASE("lookup: nearest tuned size on this GPU", "[lookup]") {
  const db::Store s = fixture();
  Choice c = lookup(s, A, DType::f32, Op::sum, 2 * k20, {});
  CHECK(c.match == Match::nearest_size);
  CHECK(c.tuned_n == k20);
  CHECK(key_of(c) == kAtomic);

  c = lookup(s, A, DType::f32, Op::sum, 3 * k20 + 17, {}); // 1.6 octaves from 2^20, 2.4 from 2^24
  CHECK(c.tuned_n == k20);
  c = lookup(s, A, DType::f32, Op::sum, k24 / 2, {});
  CHECK(c.match == Match::nearest_size);
  CHECK(c.tuned_n == k24);
  CHECK(key_of(c) == "vectorized.b512.u4.v4.g0.shfl.lastblock");
  // 2^22 is two octaves from both: the tie goes to the larger size, as in the store.
  CHECK(lookup(s, A, DType::f32, Op::sum, 1ull << 22, {}).tuned_n == k24);
  // Far outside the tuned range, either way.
  CHECK(lookup(s, A, DType::f32, Op::sum, 1, {}).tuned_n == k20);
  CHECK(lookup(s, A, DType::f32, Op::sum, 1ull << 40, {}).tuned_n == k24);
  // n = 0 is looked up as 1.
  CHECK(lookup(s, A, DType::f32, Op::sum, 0, {}).tuned_n == k20);
}

TEST_CASE("lookup: another GPU of the same compute capability", "[lookup]") {
  const db::Store s = fixture();
  const Choice c = lookup(s, B, DType::f32, Op::sum, k24, {});
  CHECK(c.match == Match::same_arch);
  CHECK(c.tuned_n == k24);
  CHECK(c.device_name == "H100 A");
  CHECK(key_of(c) == "vectorized.b512.u4.v4.g0.shfl.lastblock");
  CHECK(lookup(s, B, DType::f32, Op::sum, 3 * k20, {}).tuned_n == k20);

  // A GPU the store has never seen, of a known architecture.
  CHECK(lookup(s, key_of("GPU-new", 9, 0), DType::f32, Op::sum, k20, {}).match ==
        Match::same_arch);
}

TEST_CASE("lookup: this GPU's nearest size ranks above another GPU's exact size", "[lookup]") {
  db::Store s = fixture();
  add(s, B.uuid, {row(kHost, 1ull << 22, 20.0)});
  const Choice a = lookup(s, A, DType::f32, Op::sum, 1ull << 22, {});
  CHECK(a.match == Match::nearest_size);
  CHECK(a.device_name == "H100 A");
  // And this GPU's own exact row ranks above a faster one elsewhere.
  add(s, B.uuid, {row(kVector, k20, 1.5)});
  CHECK(lookup(s, A, DType::f32, Op::sum, k20, {}).median_us == 8.0);
}

TEST_CASE("lookup: across devices of an architecture, nearest size, then fastest", "[lookup]") {
  db::Store s = fixture();
  s.upsert_device(device("GPU-d", "H100 D", 9, 0));
  add(s, "GPU-d", {row(kHost, k24, 90.0), row(kVector, 1ull << 28, 1000.0)});
  const Choice c = lookup(s, B, DType::f32, Op::sum, k24, {});
  CHECK(c.match == Match::same_arch);
  CHECK(c.device_name == "H100 D"); // 90 us beats A's 100 us at the same size
  CHECK(key_of(c) == kHost);
  CHECK(lookup(s, B, DType::f32, Op::sum, 1ull << 27, {}).tuned_n == 1ull << 28);
}

TEST_CASE("lookup: carried from a GPU of another architecture before the built-in default", "[lookup]") {
  const db::Store s = fixture();
  // C (sm_80) has no tuning of its own nor of its architecture: A's rows, the fastest usable here.
  const Choice c = lookup(s, C, DType::f32, Op::sum, k20, {});
  CHECK(c.match == Match::carried);
  CHECK(key_of(c) == kAtomic);
  CHECK(c.device_name == "H100 A");
  CHECK(c.tuned_n == k20);
  CHECK_THAT(c.note, Catch::StartsWith("carried from H100 A"));
  // Rows invalid on C's architecture are passed over for the next (kUnsafe's volatile tail is
  // invalid from sm_70: with the faster ones excluded, the next is kHost).
  Requirements req;
  req.deterministic = true;
  req.allow_in_place = false;
  CHECK(key_of(lookup(s, C, DType::f32, Op::sum, k20, req)) == kHost);

  // Tuned architecture, untuned problem: nothing to carry either.
  CHECK(lookup(s, A, DType::f64, Op::max, Problem::rows, {1024, 1024}, {}).match == Match::builtin);

  const db::Store empty(":memory:");
  const Choice e = lookup(empty, C, DType::i64, Op::sum, k20, {});
  CHECK(e.match == Match::builtin);
  CHECK(e.config == builtin_config(Problem::array, DType::i64, Op::sum, {1, k20}, {}, C));
  CHECK(e.tuned_n == 0);
  CHECK(e.median_us == 0);
  CHECK(e.device_name.empty());
  CHECK(e.note == "no tuning for int64 sum on this GPU or any other");
}

TEST_CASE("lookup: carried tuning comes from the most similar GPU", "[lookup]") {
  db::DeviceRecord h100 = device("model:H100", "H100", 9, 0), h200 = device("model:H200", "H200", 9, 0),
                   a10 = device("model:A10", "A10", 8, 6);
  h100.l2_bytes = 50ll << 20, h100.peak_gbps = 3352.3;
  h200.l2_bytes = 60ll << 20, h200.peak_gbps = 4814.3;
  a10.sm_count = 72, a10.l2_bytes = 6ll << 20, a10.peak_gbps = 600.2;
  // A GPU like an L4 (sm_89, 58 SMs, 48 MiB L2, 300 GB/s) is nearer the A10 than the H100.
  DeviceKey l4 = key_of("GPU-l4", 8, 9);
  l4.sm_count = 58, l4.l2_bytes = 48ll << 20, l4.peak_gbps = 300.1;
  CHECK(gpu_distance(l4, a10) < gpu_distance(l4, h100));
  CHECK(gpu_distance(device_key(h100), h200) == Approx(0.785).margin(0.01));
  CHECK(gpu_distance(device_key(h100), h100) == 0);
  DeviceKey unknown = key_of("GPU-u", 9, 0);
  unknown.sm_count = 0;
  CHECK(gpu_distance(unknown, h100) >= 1); // unknown figures count as a factor of 2 apart

  db::Store s(":memory:");
  for (const auto& d : {h100, a10}) s.upsert_device(d);
  add(s, h100.uuid, {row(kHost, k20, 5.0)});
  add(s, a10.uuid, {row(kVector, k24, 50.0)});
  // The nearer GPU's row wins, though at another size and slower.
  Choice c = lookup(s, l4, DType::f32, Op::sum, k20, {});
  CHECK(c.match == Match::carried);
  CHECK(key_of(c) == kVector);
  CHECK(c.device_name == "A10");
  // Another op: the related grade reaches the carried GPUs too, and says from where.
  c = lookup(s, l4, DType::f32, Op::max, k20, {});
  CHECK(c.match == Match::related);
  CHECK_THAT(c.note, Catch::StartsWith("tuned for float32 sum on A10"));
}

TEST_CASE("lookup: segmented problems graded by shape", "[lookup][segmented]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  s.upsert_device(device(B.uuid, "H100 B", 9, 0));
  const std::string group = "rows_group.b256.w8.u2.v4.direct", block = "rows_block.b256.u4.v4.direct";
  add(s, A.uuid, {seg(group, Problem::rows, {1 << 16, 64}, 5), seg(block, Problem::rows, {1 << 16, 64}, 9),
                  seg(block, Problem::rows, {64, 1 << 16}, 6),
                  seg("unrolling.b256.u2.host", Problem::array, {1, 1 << 22}, 1)});
  add(s, B.uuid, {seg("segments_group.b256.w32.u2.v4.direct", Problem::segments, {1 << 12, 256}, 3)});
  Requirements req;
  req.device_result = true;
  Choice c = lookup(s, A, DType::f32, Op::sum, Problem::rows, {1 << 16, 64}, req);
  CHECK(c.match == Match::exact);
  CHECK(key(c.config) == group);
  CHECK(c.problem == Problem::rows);
  CHECK(c.tuned_shape == Shape{1 << 16, 64});
  CHECK(c.tuned_n == (1u << 22));
  c = lookup(s, A, DType::f32, Op::sum, Problem::rows, {32, 100000}, req);
  CHECK(c.match == Match::nearest_size);
  CHECK(key(c.config) == block);
  // Another problem's rows never answer: columns are not tuned anywhere.
  c = lookup(s, A, DType::f32, Op::sum, Problem::columns, {1 << 16, 64}, req);
  CHECK(c.match == Match::builtin);
  CHECK(c.config.variant.starts_with("columns_"));
  // Offsets, lengths unknown: graded by count; B's tuning serves A as the same architecture.
  c = lookup(s, A, DType::f32, Op::sum, Problem::segments, {1 << 12, 0}, req);
  CHECK(c.match == Match::same_arch);
  c = lookup(s, B, DType::f32, Op::sum, Problem::segments, {1 << 12, 0}, req);
  CHECK(c.match == Match::exact);
  c = lookup(s, B, DType::f32, Op::sum, Problem::segments, {1 << 13, 0}, req);
  CHECK(c.match == Match::nearest_size);
}

TEST_CASE("lookup: offsets tuned at several totals of a count take the middle total's fastest",
          "[lookup][segmented]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  const std::string at_2_28 = "segments_binned.b256.w32.u2.v4.g8.atomic",
                    at_2_24 = "segments_flat_streaming.b256.u4.v4.g4.atomic";
  add(s, A.uuid, {seg(at_2_28, {1 << 16, 4096}, 300), seg(at_2_24, {1 << 16, 4096}, 310),
                  seg(at_2_28, {1 << 16, 256}, 49), seg(at_2_24, {1 << 16, 256}, 37),
                  seg(at_2_28, {1 << 16, 16}, 12)});
  Requirements req;
  req.device_result = true;
  Choice c = lookup(s, A, DType::f32, Op::sum, Problem::segments, {1 << 16, 0}, req);
  CHECK(c.match == Match::exact);
  CHECK(key(c.config) == at_2_24);
  CHECK(c.tuned_shape == Shape{1 << 16, 256});
  // Known lengths grade by shape: the largest total's fastest there.
  c = lookup(s, A, DType::f32, Op::sum, Problem::segments, {1 << 16, 4096}, req);
  CHECK(key(c.config) == at_2_28);
}

TEST_CASE("lookup: an offsets call that does not give its element count passes over the staged "
          "mapping",
          "[lookup][segmented]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  const std::string staged = "segments_staged.b128.u4.v4.g8.atomic",
                    flat = "segments_flat_carry_streaming.b128.u4.v4.g32.atomic";
  add(s, A.uuid, {seg(staged, {1 << 24, 1}, 142), seg(flat, {1 << 24, 1}, 176)});
  Requirements req;
  req.device_result = true;
  // Given the element count (one a segment): the fastest, staged.
  Choice c = lookup(s, A, DType::f32, Op::sum, Problem::segments, {1 << 24, 1}, req);
  CHECK(key(c.config) == staged);
  // By the count alone the mean may be anything (2x slower than the flat mappings at 16): the next.
  c = lookup(s, A, DType::f32, Op::sum, Problem::segments, {1 << 24, 0}, req);
  CHECK(c.match == Match::exact);
  CHECK(key(c.config) == flat);
  CHECK_THAT(c.note, Catch::Contains(staged + " (tuned for segments of 4 elements or fewer"));
}

TEST_CASE("lookup: deterministic passes over floating-point atomic finishes", "[lookup]") {
  const db::Store s = fixture();
  Requirements req;
  req.deterministic = true;
  const Choice c = lookup(s, A, DType::f32, Op::sum, k20, req);
  CHECK(c.match == Match::exact);
  CHECK(key_of(c) == kHost); // past the atomic, in-place, unknown and unsafe rows
  CHECK(c.median_us == 10.0);
  CHECK_THAT(c.note, Catch::Contains(kAtomic + " (not deterministic"));
  CHECK_THAT(c.note, Catch::Contains(kInPlace + " (works in place"));
  CHECK_THAT(c.note, Catch::Contains(kUnknown + " (not a configuration this build knows"));
  CHECK_THAT(c.note, Catch::Contains(kUnsafe + " (invalid on this device"));

  // Integer atomics are deterministic: the same row stays.
  db::Store t(":memory:");
  t.upsert_device(device(A.uuid, "H100 A", 9, 0));
  add(t, A.uuid, {row(kAtomic, k20, 5.0, DType::i32, Op::sum), row(kHost, k20, 6.0, DType::i32, Op::sum)});
  CHECK(key_of(lookup(t, A, DType::i32, Op::sum, k20, req)) == kAtomic);
}

TEST_CASE("lookup: in-place variants only when allowed", "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  add(s, A.uuid, {row(kInPlace, k20, 5.0), row("neighbored_gmem.b512.host", k20, 5.5),
                  row(kHost, k20, 6.0)});
  const Choice c = lookup(s, A, DType::f32, Op::sum, k20, {});
  CHECK(key_of(c) == kHost);
  CHECK_THAT(c.note, Catch::Contains("neighbored_gmem.b512.host (works in place"));

  Requirements req;
  req.allow_in_place = true;
  CHECK(key_of(lookup(s, A, DType::f32, Op::sum, k20, req)) == kInPlace);
  // Allowed, and with deterministic: neighbored_gmem's host finish is deterministic.
  req.deterministic = true;
  CHECK(key_of(lookup(fixture(), A, DType::f32, Op::sum, k20, req)) == kInPlace);
}

TEST_CASE("lookup: a result on the device passes over host finishes", "[lookup]") {
  const db::Store s = fixture();
  Requirements req;
  req.device_result = true;
  CHECK(key_of(lookup(s, A, DType::f32, Op::sum, k20, req)) == kAtomic);
  req.deterministic = true;
  const Choice c = lookup(s, A, DType::f32, Op::sum, k20, req);
  CHECK(key_of(c) == kVector);
  CHECK_THAT(c.note, Catch::Contains(kHost + " (finishes on the host"));
}

TEST_CASE("lookup: a bf16 sum's float32-result rows only for a float32 result", "[lookup][half]") {
  // The sweep stores a half sum's atomic finishes measured with the float32 result beside the
  // element-typed rows (tuner/sweep.cpp): an element-typed lookup passes them over and says why.
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  const std::string first = "streaming.b512.u1.v8.g8.shfl.firstblock";
  const std::string last = "streaming.b256.u2.v8.g4.shfl.lastblock";
  add(s, A.uuid, {row(first, k20, 4.6, DType::bf16), row(last, k20, 5.7, DType::bf16)});
  Requirements req;
  req.device_result = true;
  const Choice element = lookup(s, A, DType::bf16, Op::sum, k20, req);
  CHECK(key_of(element) == last);
  CHECK(element.match == Match::exact);
  CHECK_THAT(element.note, Catch::Contains(first + " (measured with a float32 result"));
  req.wide_result = true;
  const Choice wide = lookup(s, A, DType::bf16, Op::sum, k20, req);
  CHECK(key_of(wide) == first);
  CHECK(wide.note.empty());
  req.deterministic = true; // a float atomic finish is not
  CHECK(key_of(lookup(s, A, DType::bf16, Op::sum, k20, req)) == last);
}

TEST_CASE("lookup: unusable rows move the answer to the next size, then the next grade",
          "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  s.upsert_device(device(B.uuid, "H100 B", 9, 0));
  add(s, A.uuid, {row(kUnknown, k20, 1.0), row(kHost, k24, 50.0)});
  Choice c = lookup(s, A, DType::f32, Op::sum, k20, {});
  CHECK(c.match == Match::nearest_size);
  CHECK(c.tuned_n == k24);
  CHECK(key_of(c) == kHost);
  CHECK_THAT(c.note, Catch::Contains(kUnknown));

  // Nothing usable here: another GPU of the architecture.
  add(s, B.uuid, {row(kVector, k20, 9.0)});
  Requirements req;
  req.device_result = true;
  c = lookup(s, A, DType::f32, Op::sum, k20, req);
  CHECK(c.match == Match::same_arch);
  CHECK(key_of(c) == kVector);
  CHECK_THAT(c.note, Catch::Contains(kHost + " (finishes on the host"));

  // Another architecture: carried, the rows it cannot use passed over.
  const Choice d = lookup(s, C, DType::f32, Op::sum, k20, req);
  CHECK(d.match == Match::carried);
  CHECK(key_of(d) == kVector);
  // Nothing usable anywhere: the default, and the note lists what was passed over.
  db::Store only_bad(":memory:");
  only_bad.upsert_device(device(A.uuid, "H100 A", 9, 0));
  add(only_bad, A.uuid, {row(kUnknown, k20, 1.0), row(kUnsafe, k20, 2.0)});
  const Choice b = lookup(only_bad, A, DType::f32, Op::sum, k20, {});
  CHECK(b.match == Match::builtin);
  CHECK(b.config == builtin_config(Problem::array, DType::f32, Op::sum, {1, k20}, {}, A));
  CHECK_THAT(b.note, Catch::StartsWith("no stored configuration for float32 sum on this GPU or "
                                       "any other is usable here: passed over"));
  CHECK_THAT(b.note, Catch::Contains(kUnknown) && Catch::Contains(kUnsafe));
}

TEST_CASE("lookup: a configuration invalid on this GPU is passed over", "[lookup]") {
  // __reduce_add_sync needs sm_80: a redux row stored for an sm_75 GPU (by another build's
  // rules) is passed over.
  db::Store s(":memory:");
  s.upsert_device(device("GPU-t", "T4", 7, 5));
  add(s, "GPU-t", {row("unroll_warps.b256.u4.redux.host", k20, 3.0, DType::i32, Op::sum),
                   row("unroll_warps.b256.u4.shfl.host", k20, 4.0, DType::i32, Op::sum)});
  const Choice c = lookup(s, key_of("GPU-t", 7, 5), DType::i32, Op::sum, k20, {});
  CHECK(key_of(c) == "unroll_warps.b256.u4.shfl.host");
  CHECK_THAT(c.note, Catch::Contains("__reduce_*_sync needs sm_80"));

  // A block larger than the device allows.
  db::Store big(":memory:");
  big.upsert_device(device(A.uuid, "H100 A", 9, 0));
  add(big, A.uuid, {row("unrolling.b1024.u8.host", k20, 3.0), row(kHost, k20, 4.0)});
  DeviceKey small = A;
  small.max_block = 512;
  CHECK(key_of(lookup(big, small, DType::f32, Op::sum, k20, {})) == kHost);
}

TEST_CASE("lookup: the note lists at most five passed-over rows", "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  std::vector<db::Measurement> rows;
  for (int i = 0; i < 8; ++i) rows.push_back(row("later_" + std::to_string(i) + ".b256.host", k20, 1.0 + i));
  rows.push_back(row(kHost, k20, 20.0));
  add(s, A.uuid, rows);
  const Choice c = lookup(s, A, DType::f32, Op::sum, k20, {});
  CHECK(key_of(c) == kHost);
  CHECK_THAT(c.note, Catch::Contains("later_4") && Catch::EndsWith("; and 3 more"));
  CHECK_THAT(c.note, !Catch::Contains("later_5"));
}

TEST_CASE("lookup: another op's or dtype's tuning before the built-in default", "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  s.upsert_device(device(B.uuid, "H100 B", 9, 0));
  const std::string unrolled = "unrolling.b256.u2.host";
  add(s, A.uuid, {row(kVector, k20, 11.0), row(unrolled, k20, 7.0, DType::i32, Op::min)});
  // The same dtype first, whatever another dtype's rows measured.
  Choice c = lookup(s, A, DType::f32, Op::max, k20, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == kVector);
  CHECK(c.tuned_n == k20);
  CHECK(c.device_name == "H100 A");
  CHECK(c.note == "tuned for float32 sum");
  // Then dtypes of the same size: the fastest of them.
  c = lookup(s, A, DType::u32, Op::max, k20, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == unrolled);
  CHECK(c.note == "tuned for int32 min");
  // The 1-D reduction stops there: a float64 call takes the built-in default.
  Requirements req;
  req.device_result = true;
  CHECK(lookup(s, A, DType::f64, Op::sum, k20, req).match == Match::builtin);
  // This dtype and op's own rows win, at another size or on another GPU of the architecture.
  add(s, B.uuid, {row(unrolled, k24, 50.0, DType::f64, Op::sum)});
  c = lookup(s, A, DType::f64, Op::sum, k20, {});
  CHECK(c.match == Match::same_arch);
  CHECK(key_of(c) == unrolled);
  // Segmented problems go on to the other element sizes, the nearest first, the vector width
  // scaled to load the same bytes (float32 v4 is float64 v2, f16 v8), at the related rows'
  // nearest shape.
  const Shape k20x16{1u << 20, 16}, k8x16{1u << 8, 1u << 16};
  add(s, A.uuid, {seg("segments_flat.b128.u4.v4.g16.atomic", k20x16, 50.0),
                  seg("segments_binned.b256.w1.u4.v1.g8.atomic", k8x16, 40.0)});
  c = lookup(s, A, DType::f64, Op::max, Problem::segments, {1u << 19, 32}, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == "segments_flat.b128.u4.v2.g16.atomic");
  CHECK(c.tuned_shape == k20x16);
  CHECK(key_of(lookup(s, A, DType::f16, Op::max, Problem::segments, {1u << 19, 32}, {})) ==
        "segments_flat.b128.u4.v8.g16.atomic");
  // A 2-byte row, though faster (it moved half the bytes), comes after the 4-byte ones.
  db::Measurement half = seg("segments_flat.b128.u2.v8.g16.atomic", k20x16, 20.0);
  half.dtype = DType::f16;
  add(s, A.uuid, {half});
  CHECK(key_of(lookup(s, A, DType::f64, Op::max, Problem::segments, {1u << 19, 32}, {})) ==
        "segments_flat.b128.u4.v2.g16.atomic");
  CHECK(key_of(lookup(s, A, DType::bf16, Op::max, Problem::segments, {1u << 19, 32}, {})) ==
        "segments_flat.b128.u2.v8.g16.atomic");
}

TEST_CASE("lookup: another op's rows only where its accumulator has this op's size", "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  // The sum's rows, fastest: a 4-byte accumulator on float32.
  add(s, A.uuid, {row(kHost, k20, 3.0), row(kVector, k20, 5.0)});
  // argmax (16 bytes: value and int64 index) never takes them; without rows of an op of its
  // accumulator size it has the built-in default.
  Choice c = lookup(s, A, DType::f32, Op::argmax, k20, {});
  CHECK(c.match == Match::builtin);
  // mean accumulates in float32 as the sum does: it takes the sum's.
  c = lookup(s, A, DType::f32, Op::mean, k20, {});
  CHECK(c.match == Match::related);
  CHECK(c.note == "tuned for float32 sum");
  // argmin's rows (16 bytes too), though slower than the sum's, are argmax's.
  const std::string two_pass = "vectorized.b256.u4.v4.g8.shfl.twopass";
  add(s, A.uuid, {row(two_pass, k20, 9.0, DType::f32, Op::argmin)});
  c = lookup(s, A, DType::f32, Op::argmax, k20, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == two_pass);
  CHECK(c.note == "tuned for float32 argmin");
  // And the other way round: a sum call takes the sum's own rows, a mean never argmin's.
  CHECK(lookup(s, A, DType::f32, Op::mean, k20, {}).note == "tuned for float32 sum");
  // The same on a segmented problem, across dtypes: int32 argmax takes float32 argmin's rows,
  // not the sums'.
  const Shape k16x64{1u << 16, 64};
  add(s, A.uuid, {seg("rows_block.b256.u4.v4.direct", Problem::rows, k16x64, 4.0)});
  db::Measurement am = seg("rows_block.b128.u2.v1.direct", Problem::rows, k16x64, 8.0);
  am.op = Op::argmin;
  add(s, A.uuid, {am});
  c = lookup(s, A, DType::i32, Op::argmax, Problem::rows, k16x64, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == "rows_block.b128.u2.v1.direct");
  c = lookup(s, A, DType::i32, Op::sum, Problem::rows, k16x64, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == "rows_block.b256.u4.v4.direct");
}

TEST_CASE("lookup: match names", "[lookup]") {
  CHECK(name(Match::exact) == "exact");
  CHECK(name(Match::nearest_size) == "nearest_size");
  CHECK(name(Match::same_arch) == "same_arch");
  CHECK(name(Match::related) == "related");
  CHECK(name(Match::builtin) == "builtin");
}

TEST_CASE("lookup: a store that does not exist is not created", "[lookup]") {
  const TempDir dir;
  const fs::path missing = dir.path / "sub" / "tuning.db";
  std::string why;
  CHECK_FALSE(open_existing_store(missing.string(), &why));
  CHECK(why == "no tuning store at " + missing.string());
  CHECK_FALSE(fs::exists(missing));
  CHECK_FALSE(fs::exists(missing.parent_path()));
  CHECK_FALSE(open_existing_store(dir.path.string(), nullptr)); // a directory is not a store
}

TEST_CASE("lookup: an existing store opens, an unusable file gives the reason", "[lookup]") {
  const TempDir dir;
  const fs::path file = dir.path / "tuning.db";
  {
    db::Store s(file.string());
    s.upsert_device(device(A.uuid, "H100 A", 9, 0));
    add(s, A.uuid, {row(kHost, k20, 4.0)});
  }
  std::string why;
  const auto s = open_existing_store(file.string(), &why);
  REQUIRE(s);
  CHECK(key_of(lookup(*s, A, DType::f32, Op::sum, k20, {})) == kHost);

  const fs::path junk = dir.path / "junk.db";
  std::ofstream(junk) << "not a database, but long enough to be read as one's header by SQLite "
                         "which wants at least a hundred bytes before it judges the file format";
  CHECK_FALSE(open_existing_store(junk.string(), &why));
  CHECK_THAT(why, Catch::StartsWith("the tuning store " + junk.string() + " cannot be used: "));
}

TEST_CASE("lookup: the shipped tuning after the user's own, before other GPUs", "[lookup][shipped]") {
  db::Store user(":memory:"), shipped(":memory:");
  DeviceKey me = A;
  me.name = "NVIDIA H100 80GB HBM3";
  db::DeviceRecord model = device("model:NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 9, 0);
  db::DeviceRecord other = device("model:NVIDIA H200", "NVIDIA H200", 9, 0);
  shipped.upsert_device(model);
  shipped.upsert_device(other);
  add(shipped, model.uuid, {row(kHost, k20, 4.0)});
  add(shipped, other.uuid, {row(kVector, k20, 1.0)});
  Requirements req;
  // No store of the user's: the shipped rows of this model, though the other model's are faster.
  Choice c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::shipped);
  CHECK(key(c.config) == kHost);
  CHECK(c.device_name == "NVIDIA H100 80GB HBM3 (shipped)");
  // A GPU model the library ships nothing for: the same architecture's.
  DeviceKey gh = me;
  gh.name = "NVIDIA GH200";
  c = lookup(nullptr, &shipped, gh, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::same_arch);
  // The user's own measurement wins, at a nearest size too.
  user.upsert_device(device(A.uuid, "NVIDIA H100 80GB HBM3", 9, 0));
  add(user, A.uuid, {row(kVector, k24, 9.0)});
  c = lookup(&user, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::nearest_size);
  CHECK(key(c.config) == kVector);
  // Neither store: the built-in default, saying why.
  c = lookup(nullptr, nullptr, me, DType::f32, Op::sum, Problem::array, {1, k20}, req, "no store here");
  CHECK(c.match == Match::builtin);
  CHECK(c.note == "no store here");
  CHECK(name(Match::shipped) == "shipped");
  CHECK(name(Match::carried) == "carried");
}

TEST_CASE("lookup: the shipped rows of the model are this GPU's only at their SM count", "[lookup][shipped]") {
  db::Store shipped(":memory:");
  db::DeviceRecord model = device("model:NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 9, 0);
  db::DeviceRecord other = device("model:NVIDIA H200", "NVIDIA H200", 9, 0);
  shipped.upsert_device(model); // 132 SMs
  shipped.upsert_device(other);
  add(shipped, model.uuid, {row(kHost, k20, 4.0)});
  add(shipped, other.uuid, {row(kVector, k20, 1.0)});
  const Requirements req;
  DeviceKey me = A;
  me.name = model.name;
  for (const int sms : {132, 0}) { // the same count, or one not known: the model's own rows
    me.sm_count = sms;
    const Choice c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
    CHECK(c.match == Match::shipped);
    CHECK(key(c.config) == kHost);
    CHECK(c.device_name == "NVIDIA H100 80GB HBM3 (shipped)");
  }
  // The model limited to 32 or 66 SMs: neither the model's 132-SM rows nor the architecture's
  // shipped rows serve it; the built-in defaults (per SM) do, saying why.
  for (const int sms : {32, 66}) {
    me.sm_count = sms;
    const Choice c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
    CHECK(c.match == Match::builtin);
    CHECK_THAT(c.note, Catch::Contains("the shipped tuning of NVIDIA H100 80GB HBM3 is for 132 SMs, "
                                       "this GPU has " + std::to_string(sms)));
    CHECK(key(c.config) == key(builtin_config(Problem::array, DType::f32, Op::sum, {1, k20}, req, me)));
  }
  // Its own rows in the user's store still come first; another GPU's there (same_arch) before the
  // defaults, the shipped rows never.
  db::Store user(":memory:");
  user.upsert_device(device(A.uuid, me.name, 9, 0));
  user.upsert_device(device(B.uuid, "NVIDIA H100 PCIe", 9, 0));
  add(user, B.uuid, {row(kAtomic, k24, 50.0)});
  me.sm_count = 32;
  Choice c = lookup(&user, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::same_arch);
  CHECK(key(c.config) == kAtomic);
  add(user, A.uuid, {row(kHost, k24, 40.0)});
  c = lookup(&user, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::nearest_size);
  CHECK(key(c.config) == kHost);
  // A model the shipped tuning holds at this SM count among others: its own rows, shipped.
  db::DeviceRecord small = model;
  small.uuid = "model:NVIDIA H100 80GB HBM3 (32 SMs)";
  small.sm_count = 32;
  shipped.upsert_device(small);
  add(shipped, small.uuid, {row(kVector, k24, 30.0)});
  c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::shipped);
  CHECK(key(c.config) == kVector);
}

TEST_CASE("lookup: the shipped store opens read-only, from the environment, the caller or the library", "[lookup][shipped]") {
  const TempDir dir;
  const std::string path = (dir.path / "shipped.db").string();
  { db::Store s(path); s.upsert_device(device("model:X", "X", 9, 0)); }
  const auto before = fs::last_write_time(path);
  setenv("REDUCE_TUNE_SHIPPED_DB", path.c_str(), 1);
  CHECK(shipped_source().kind == ShippedSource::Kind::file);
  CHECK(shipped_source().path == path);
  std::string why;
  auto s = open_shipped_store(&why);
  REQUIRE(s);
  CHECK(s->devices().size() == 1);
  CHECK_THROWS_AS(s->upsert_device(device("model:Y", "Y", 9, 0)), db::StoreError); // read-only
  s.reset();
  CHECK(fs::last_write_time(path) == before);
  setenv("REDUCE_TUNE_SHIPPED_DB", (dir.path / "absent.db").string().c_str(), 1);
  CHECK_FALSE(open_shipped_store(&why));
  CHECK_THAT(why, Catch::Contains("cannot be used") && Catch::Contains("no such file"));
  CHECK_FALSE(fs::exists(dir.path / "absent.db"));
  { std::ofstream junk(dir.path / "junk.db"); junk << "not a database, not at all"; }
  setenv("REDUCE_TUNE_SHIPPED_DB", (dir.path / "junk.db").string().c_str(), 1);
  CHECK_FALSE(open_shipped_store(&why));
  CHECK_THAT(why, Catch::Contains("not a SQLite database"));
  setenv("REDUCE_TUNE_SHIPPED_DB", "", 1);
  CHECK(shipped_source().kind == ShippedSource::Kind::none);
  CHECK_FALSE(open_shipped_store(&why));
  CHECK(why == "no shipped tuning");
  CHECK_FALSE(open_shipped_store(&why, path)); // the environment wins over Options::shipped_path
  unsetenv("REDUCE_TUNE_SHIPPED_DB");
  CHECK(shipped_source(path).path == path);    // unset: the caller's path
  REQUIRE(open_shipped_store(&why, path));
  // Neither: the image compiled into the library.
  CHECK(shipped_source().kind == ShippedSource::Kind::embedded);
  CHECK(shipped_source().describe() == "built into the library");
  auto embedded = open_shipped_store(&why);
  REQUIRE(embedded);
  CHECK_THROWS_AS(embedded->upsert_device(device("model:Y", "Y", 9, 0)), db::StoreError);
}

TEST_CASE("lookup: the embedded shipped tuning is the repository's file, current and anonymous", "[lookup][shipped]") {
  // Byte for byte the file the build embedded, in rollback-journal mode (header bytes 18-19: 1, not
  // WAL's 2): a WAL image cannot be read in place, nor a WAL file read-only where the reader cannot
  // create its -shm beside it (an install another user owns).
  const auto image = embedded_tuning();
  REQUIRE(image.size() > 100);
  CHECK(int(image[18]) == 1);
  CHECK(int(image[19]) == 1);
  std::ifstream file(RT_TEST_SHIPPED_FILE, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(bytes.size() == image.size());
  CHECK(std::equal(image.begin(), image.end(), reinterpret_cast<const unsigned char*>(bytes.data())));
  db::Store r(image, "the embedded tuning");
  CHECK(r.user_version() >= db::Store::kOldestReadable); // read-only: any version its reads need
  CHECK(r.user_version() <= db::Store::schema_version());
  CHECK(r.devices().size() >= 2);
  for (const auto& d : r.devices()) {
    CHECK(d.uuid.rfind("model:", 0) == 0); // no GPU UUIDs
    CHECK(d.host.empty());                  // no host names
    CHECK_FALSE(r.bests(d.uuid).empty());
  }
}

TEST_CASE("lookup: related rows combine alike: count_nonzero never takes logsumexp's, min takes sum's",
          "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  const Shape at{65536, 256};
  db::Measurement lse = seg("columns_tile.b512.u8.v2.direct", Problem::columns, at, 60.0);
  lse.op = Op::logsumexp; // an 8-byte accumulator, as count_nonzero's, but a struct without atomics
  add(s, A.uuid, {lse});
  const Requirements req;
  CHECK(lookup(s, A, DType::f32, Op::count_nonzero, Problem::columns, at, req).match == Match::builtin);
  const db::Measurement sum = seg("columns_split.b256.u4.v1.g8.atomic", Problem::columns, at, 33.0);
  add(s, A.uuid, {sum});
  const Choice c = lookup(s, A, DType::f32, Op::min, Problem::columns, at, req);
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == sum.key);
}

TEST_CASE("lookup: dot is stored as \"dot\"; without its own rows it takes another op's it can run",
          "[lookup][dot]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  // float32 sums of offsets segments: the merge mapping fastest, which reads one input only.
  const std::string merge = "segments_merge.b128.u8.g4.atomic",
                    flat = "segments_flat.b128.u4.v4.g16.atomic";
  const Shape at{1u << 16, 256};
  add(s, A.uuid, {seg(merge, at, 30.0), seg(flat, at, 40.0)});
  Requirements req;
  req.device_result = true;
  Choice c = lookup(s, A, DType::f32, Op::dot, Problem::segments, at, req);
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == flat);
  CHECK(c.note == "tuned for float32 sum"); // merge passed over: another op's rows, not reported
  CHECK(key_of(lookup(s, A, DType::f32, Op::sum, Problem::segments, at, req)) == merge);
  // Its own rows, written and read back under the op's name, come first.
  db::Measurement own = seg("segments_group.b256.w8.u2.v4.direct", at, 50.0);
  own.op = Op::dot;
  add(s, A.uuid, {own});
  c = lookup(s, A, DType::f32, Op::dot, Problem::segments, at, req);
  CHECK(c.match == Match::exact);
  CHECK(key_of(c) == own.key);
  const auto stored = s.measurements(A.uuid, {DType::f32, Op::dot, Problem::segments, at});
  REQUIRE(stored.size() == 1);
  CHECK(stored[0].op == Op::dot);
}
