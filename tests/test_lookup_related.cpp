// Tests of the lookup's related grade (runtime/lookup.cpp): without rows of its own op and dtype, a
// call takes those of another op or dtype it can run, and says whose.
#include <catch2/catch.hpp>

#include "tests/lookup_fixture.h"

using namespace reduce_tune;
using namespace reduce_tune::testing::lookup_fixture;

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

TEST_CASE("lookup: at a shape, the rows of the call's op family come before other related ops'",
          "[lookup]") {
  db::Store s(":memory:");
  s.upsert_device(device(A.uuid, "H100 A", 9, 0));
  const std::string fast_for_argmax = "streaming.b512.u1.v4.g4.shfl.lastblock";
  const std::string var_best = "streaming.b256.u4.v2.g4.shfl.lastblock";
  add(s, A.uuid, {row(fast_for_argmax, k24, 27.3, DType::f32, Op::argmax),
                  row(var_best, k24, 27.5, DType::f32, Op::var)});
  // std runs var's kernels but for the square root: var's row, though argmax's measured faster.
  Choice c = lookup(s, A, DType::f32, Op::std_, k24, {});
  CHECK(c.match == Match::related);
  CHECK(key_of(c) == var_best);
  CHECK(c.note == "tuned for float32 var");
  // argmin is argmax's family.
  CHECK(lookup(s, A, DType::f32, Op::argmin, k24, {}).note == "tuned for float32 argmax");
  // The shape stays first: at a nearer shape another op's row wins over the family's farther one.
  const std::string near = "vectorized.b256.u4.v4.g8.shfl.lastblock";
  add(s, A.uuid, {row(near, k20, 9.0, DType::f32, Op::argmax)});
  c = lookup(s, A, DType::f32, Op::std_, k20, {});
  CHECK(key_of(c) == near);
  CHECK(c.note == "tuned for float32 argmax");
  // mean takes the sum's rows before a faster sum of squares' at the shape.
  add(s, A.uuid, {row(kVector, k20, 12.0, DType::f32, Op::sum),
                  row("streaming.b512.u2.v4.g8.shfl.lastblock", k20, 8.0, DType::f32, Op::sumsq)});
  c = lookup(s, A, DType::f32, Op::mean, k20, {});
  CHECK(key_of(c) == kVector);
  CHECK(c.note == "tuned for float32 sum");
  CHECK(lookup(s, A, DType::f32, Op::norm2, k20, {}).note == "tuned for float32 sumsq");
}
