// Tests of the configuration lookup (runtime/lookup.cpp) on stored fixtures: every grade, the
// requirements, and rows that must be passed over. Another op's or dtype's rows:
// test_lookup_related.cpp; opening stores and the shipped tuning: test_lookup_stores.cpp.
#include <catch2/catch.hpp>

#include "runtime/defaults.h"
#include "tests/lookup_fixture.h"

using namespace reduce_tune;
using namespace reduce_tune::testing::lookup_fixture;

namespace {

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

TEST_CASE("lookup: match names", "[lookup]") {
  CHECK(name(Match::exact) == "exact");
  CHECK(name(Match::nearest_size) == "nearest_size");
  CHECK(name(Match::same_arch) == "same_arch");
  CHECK(name(Match::related) == "related");
  CHECK(name(Match::builtin) == "builtin");
}
