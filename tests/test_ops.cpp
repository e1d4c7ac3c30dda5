// The ops as data (kernels/ops.h): stable names, result and accumulator dtypes, the catalogue's
// rules per op, the host side (identities, the host finish, empty results), the CPU reference and
// its checks, and that every template compiles with NVRTC for every op and dtype it admits.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "tuner/reference.h"
#include "tests/config_fixture.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <set>
#include <tuple>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::reason;
using reduce_tune::testing::sm;

namespace {

constexpr DType kInputs[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};

template <typename T> HostArray array_of(std::initializer_list<T> xs) {
  HostArray a;
  a.dtype = Scalar::of(T{}).dtype;
  a.n = xs.size();
  a.bytes.resize(xs.size() * sizeof(T));
  std::memcpy(a.bytes.data(), std::data(xs), a.bytes.size());
  return a;
}

} // namespace

TEST_CASE("ops: stable names, parsed back; the enum's values never move", "[ops]") {
  const char* names[] = {"sum",    "min",       "max",           "mean",   "sumsq",
                         "norm1",  "norm2",     "count_nonzero", "any",    "all",
                         "argmax", "argmin",    "logsumexp",     "var",    "std",
                         "var_population", "std_population", "dot"};
  REQUIRE(op_descriptions().size() == std::size(names));
  for (std::size_t i = 0; i < std::size(names); ++i) {
    const Op op = static_cast<Op>(i);
    CHECK(name(op) == names[i]);
    CHECK(describe(op).name == names[i]);
    CHECK(parse_op(names[i]) == op);
  }
  CHECK_FALSE(parse_op("median"));
  CHECK(name(static_cast<Op>(std::size(names))) == "?");
  CHECK(name(DType::u8) == "uint8");
  CHECK(size_of(DType::u8) == 1);
}

TEST_CASE("ops: accumulator and result dtypes as torch", "[ops]") {
  CHECK(result_dtype(Op::mean, DType::i32) == DType::f64);
  CHECK(accumulator_dtype(Op::mean, DType::i64) == DType::f64);
  CHECK(result_dtype(Op::mean, DType::bf16) == DType::bf16);
  CHECK(accumulator_dtype(Op::mean, DType::bf16) == DType::f32);
  CHECK(result_dtype(Op::mean, DType::f16, true) == DType::f32);
  CHECK(result_dtype(Op::count_nonzero, DType::f16) == DType::i64);
  CHECK(accumulator_bytes(Op::count_nonzero, DType::f16) == 8);
  CHECK(result_dtype(Op::any, DType::f64) == DType::u8);
  CHECK(accumulator_dtype(Op::all, DType::f64) == DType::u32);
  CHECK(result_dtype(Op::sumsq, DType::i32) == DType::i32);
  CHECK(accumulator_dtype(Op::norm2, DType::bf16) == DType::f32);
  CHECK(op_unsupported(Op::norm1, DType::i32));
  CHECK(op_unsupported(Op::norm2, DType::u32));
  CHECK_FALSE(op_unsupported(Op::norm2, DType::f16));
  CHECK(op_unsupported(Op::sum, DType::u8));
  for (DType d : kInputs) CHECK_FALSE(op_unsupported(Op::sumsq, d));
  // argmax, argmin: an int64 index of any dtype; a 16-byte {value, index} accumulator.
  for (DType d : kInputs) {
    CHECK(result_dtype(Op::argmax, d) == DType::i64);
    CHECK(result_dtype(Op::argmin, d) == DType::i64);
    CHECK(accumulator_bytes(Op::argmax, d) == 16);
    CHECK_FALSE(op_unsupported(Op::argmin, d));
  }
  CHECK(accumulator_dtype(Op::argmax, DType::bf16) == DType::f32);
  // logsumexp: floats only, the element type, {max, sum} in float32 for bf16 and f16.
  CHECK(op_unsupported(Op::logsumexp, DType::i32));
  CHECK(op_unsupported(Op::logsumexp, DType::i64));
  CHECK(result_dtype(Op::logsumexp, DType::f16) == DType::f16);
  CHECK(result_dtype(Op::logsumexp, DType::f16, true) == DType::f32);
  CHECK(accumulator_bytes(Op::logsumexp, DType::bf16) == 8);
  CHECK(accumulator_bytes(Op::logsumexp, DType::f64) == 16);
  // var and std: integers in float64, floats in their type; {int64 n, mean, M2}.
  for (Op op : {Op::var, Op::std_, Op::var_population, Op::std_population}) {
    CHECK(result_dtype(op, DType::i32) == DType::f64);
    CHECK(result_dtype(op, DType::u32) == DType::f64);
    CHECK(result_dtype(op, DType::bf16) == DType::bf16);
    CHECK(result_dtype(op, DType::f32) == DType::f32);
    CHECK(accumulator_bytes(op, DType::f16) == 16);
    CHECK(accumulator_bytes(op, DType::i64) == 24);
    for (DType d : kInputs) CHECK_FALSE(op_unsupported(op, d));
  }
}

TEST_CASE("ops: a family shares its accumulator and combine: one member's tuning fits another", "[ops]") {
  std::size_t families = 0;
  for (const OpDescription& o : op_descriptions()) {
    const OpDescription& f = describe(o.family);
    CHECK(f.family == f.op); // a family is named by a member of its own
    families += f.op == o.op;
    CHECK(same_family(o.op, o.family));
    CHECK(o.traits.compound == f.traits.compound);
    CHECK((o.traits.atomic == OpAtomic::none) == (f.traits.atomic == OpAtomic::none));
    CHECK(o.traits.two_inputs == f.traits.two_inputs);
    for (DType d : {DType::f32, DType::f64, DType::bf16})
      CHECK(accumulator_bytes(o.op, d) == accumulator_bytes(f.op, d));
  }
  CHECK(families == 10);
  CHECK(same_family(Op::std_, Op::var_population));
  CHECK(same_family(Op::mean, Op::sum));
  CHECK_FALSE(same_family(Op::argmax, Op::var));
  CHECK_FALSE(same_family(Op::sumsq, Op::sum));
}

TEST_CASE("ops: the source is the description's; the templates name no op", "[ops]") {
  const std::string mean = op_source(Op::mean, DType::i32);
  CHECK_THAT(mean, Catch::Contains("// op: mean") && Catch::Contains("typedef double A;") &&
                       Catch::Contains("typedef A R;") && Catch::Contains("rt_post(A a, rt_size count)") &&
                       !Catch::Contains("RT_ATOMIC_"));
  const std::string any = op_source(Op::any, DType::f32);
  CHECK_THAT(any, Catch::Contains("typedef unsigned int A;") && Catch::Contains("typedef unsigned char R;") &&
                      Catch::Contains("#define RT_REDUX_MAX 1"));
  const std::string cnt = op_source(Op::count_nonzero, DType::f16);
  CHECK_THAT(cnt, Catch::Contains("#define RT_ATOMIC_ADD 1") && Catch::Contains("#define RT_ACC_I64 1") &&
                      !Catch::Contains("RT_HALF_RESULT"));
  CHECK_THAT(op_source(Op::max, DType::f16), Catch::Contains("#define RT_HALF_RESULT 1"));
  // The rendered source: header, element.cuh, the description, common.cuh, the template.
  const std::string s = render(cfg("vectorized.b256.u4.v4.g0.shfl.lastblock"), DType::i32, Op::mean);
  CHECK_THAT(s, Catch::Contains(mean) && !Catch::Contains("RT_OP_"));
  CHECK(s.find("rt_widen(T x)") < s.find(mean));
  CHECK(s.find(mean) < s.find("rt_shfl_down"));
  // Compound accumulators: a struct, no atomic or half-result traits; argmax reads the index.
  const std::string arg = op_source(Op::argmax, DType::bf16);
  CHECK_THAT(arg, Catch::Contains("struct rt_acc { float v; long long i; };") &&
                      Catch::Contains("typedef long long R;") && Catch::Contains("#define RT_MAP_INDEXED 1") &&
                      !Catch::Contains("RT_ATOMIC_") && !Catch::Contains("RT_HALF_RESULT"));
  const std::string lse = op_source(Op::logsumexp, DType::f16);
  CHECK_THAT(lse, Catch::Contains("struct rt_acc { float m; float s; };") && Catch::Contains("typedef T R;") &&
                      Catch::Contains("expf(") && !Catch::Contains("RT_MAP_INDEXED"));
  CHECK_THAT(op_source(Op::logsumexp, DType::f16, true), Catch::Contains("typedef float R;"));
  const std::string var = op_source(Op::std_, DType::i32);
  CHECK_THAT(var, Catch::Contains("struct rt_acc { long long n; double mean; double m2; };") &&
                      Catch::Contains("typedef double R;") && Catch::Contains("(1)") &&
                      Catch::Contains("sqrt.rn.f64"));
  CHECK_THAT(op_source(Op::var_population, DType::f32), Catch::Contains("(0)") && !Catch::Contains("sqrt"));
  // The struct ops fold an element their own way (Welford, one exp, ties kept); the others take
  // templates/common.cuh's default fold, the combine of the mapped element.
  CHECK_THAT(var, Catch::Contains("#define RT_FOLD 1") && Catch::Contains("A rt_fold(A a, T e, rt_size)") &&
                      Catch::Contains("rcp.rn.f64"));
  CHECK_THAT(op_source(Op::std_, DType::f32), Catch::Contains("rcp.approx.ftz.f32") && Catch::Contains("fmaf("));
  CHECK_THAT(lse, Catch::Contains("#define RT_FOLD 1"));
  CHECK_THAT(arg, Catch::Contains("#define RT_FOLD 1") && Catch::Contains("rt_fold(A a, T e, rt_size i)"));
  CHECK_THAT(op_source(Op::argmin, DType::i32), Catch::Contains("#define RT_FOLD 1"));
  for (Op op : {Op::sum, Op::mean, Op::dot, Op::count_nonzero})
    CHECK_THAT(op_source(op, DType::f32), !Catch::Contains("RT_FOLD") && !Catch::Contains("rt_fold"));
}

TEST_CASE("ops: the catalogue's rules read the traits", "[ops][catalogue]") {
  // A post-map that needs the count or rounds: no atomic or host finish.
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f32, Op::mean)),
             Catch::Contains("no atomic combine"));
  CHECK_THAT(reason("unroll_warps.b256.u4.shfl.host", sm(90, DType::f32, Op::norm2)),
             Catch::Contains("host finish"));
  CHECK(reason("vectorized.b256.u4.v4.g0.shfl.lastblock", sm(90, DType::f32, Op::mean)).empty());
  CHECK(reason("vectorized.b256.u4.v2.g0.shfl.twopass", sm(90, DType::i64, Op::mean)).empty());
  CHECK(reason("unroll_warps.b256.u4.shfl.host", sm(90, DType::f32, Op::sumsq)).empty());
  // Mapped elements: no in-place variant.
  CHECK_THAT(reason("neighbored_gmem.b256.host", sm(90, DType::f32, Op::sumsq)),
             Catch::Contains("mapped again"));
  CHECK(reason("neighbored_gmem.b256.host", sm(90, DType::f32, Op::sum)).empty());
  // The redux tail follows the accumulator: any/all of floats are 32-bit integer maxima/minima.
  CHECK(reason("vectorized.b256.u4.v4.g0.redux.lastblock", sm(90, DType::f32, Op::any)).empty());
  CHECK(reason("vectorized.b256.u4.v4.g0.redux.lastblock", sm(90, DType::i32, Op::sumsq)).empty());
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.redux.lastblock", sm(90, DType::i32, Op::mean)),
             Catch::Contains("__reduce"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.redux.lastblock", sm(90, DType::i32, Op::count_nonzero)),
             Catch::Contains("32-bit integers"));
  // Atomics: count_nonzero adds int64 into its int64 result; any/all have a uint8 result.
  CHECK(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f16, Op::count_nonzero)).empty());
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f32, Op::any)),
             Catch::Contains("not its accumulator"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::bf16, Op::sumsq)),
             Catch::Contains("round at every atomic"));
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.lastblock", sm(90, DType::i32, Op::norm1)),
             Catch::Contains("floating-point"));
  // A float32 result only where the op's result is the element type.
  Target wide = sm(90, DType::bf16, Op::count_nonzero);
  wide.wide_result = true;
  CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.lastblock", wide), Catch::Contains("float32 result"));
  wide.op = Op::sumsq;
  CHECK(reason("vectorized.b256.u4.v4.g0.shfl.atomic", wide).empty());
  // Segmented: the mappings that combine atomically are for ops with an atomic; mean's adds into
  // accumulators, then the post pass (test_post_pass.cpp).
  CHECK(reason("segments_flat.b256.u2.v4.g4.atomic", sm(90, DType::f32, Op::mean, Problem::segments)).empty());
  CHECK(reason("segments_group.b256.w8.u2.v4.direct", sm(90, DType::f32, Op::mean, Problem::segments)).empty());
  CHECK(reason("columns_tile.b256.u2.v4.direct", sm(90, DType::i32, Op::all, Problem::columns)).empty());
  // Compound accumulators: no atomic, first-block, host or in-place finish, no redux or volatile
  // tail; the deterministic combining finishes and the direct segmented mappings stay.
  for (Op op : {Op::argmax, Op::argmin, Op::logsumexp, Op::var, Op::std_, Op::var_population,
                Op::std_population}) {
    INFO(name(op));
    CHECK_THAT(reason("vectorized.b256.u4.v4.g0.shfl.atomic", sm(90, DType::f32, op)),
               Catch::Contains("no atomic combine"));
    CHECK_THAT(reason("vectorized.b256.u4.v4.g4.shfl.firstblock", sm(90, DType::f32, op)),
               Catch::Contains("no atomic combine"));
    CHECK_THAT(reason("unroll_warps.b256.u4.shfl.host", sm(90, DType::f32, op)), Catch::Contains("host finish"));
    CHECK_THAT(reason("neighbored_gmem.b256.host", sm(90, DType::f32, op)), Catch::Contains("host finish"));
    CHECK_THAT(reason("neighbored_gmem.b256.twopass", sm(90, DType::f32, op)),
               Catch::Contains("not available"));
    CHECK_THAT(reason("vectorized.b256.u4.v4.g0.redux.lastblock", sm(90, DType::i32, op == Op::logsumexp ? Op::argmax : op)),
               Catch::Contains("__reduce"));
    Target old_gpu = sm(60, DType::f32, op);
    CHECK_THAT(reason("unroll_warps.b256.u4.volatile.host", old_gpu), Catch::Contains("volatile"));
    CHECK(reason("vectorized.b256.u4.v4.g0.shfl.twopass", old_gpu).empty());
    CHECK(reason("vectorized.b256.u4.v4.g0.shfl.lastblock", sm(90, DType::f32, op)).empty());
    CHECK(reason("streaming.b256.u2.v2.g8.shfl.twopass", sm(90, DType::f64, op)).empty());
    CHECK(reason("rows_group.b256.w8.u2.v4.direct", sm(90, DType::f32, op, Problem::rows)).empty());
    CHECK_THAT(reason("rows_split.b256.u2.v4.g4.atomic", sm(90, DType::f32, op, Problem::rows)),
               Catch::Contains("no atomic combine"));
    CHECK_THAT(reason("segments_flat.b256.u2.v4.g4.atomic", sm(90, DType::f32, op, Problem::segments)),
               Catch::Contains("no atomic combine"));
    // argmax and argmin: their ordered keys on the columns (test_keyed_columns.cpp); var and std
    // their shifted sums (test_shifted_columns.cpp).
    if (keyed_atomic(op, DType::f32) || shifted_atomic(op, DType::f32))
      CHECK(reason("columns_split.b256.u2.v4.g4.atomic", sm(90, DType::f32, op, Problem::columns)).empty());
    else
      CHECK_THAT(reason("columns_split.b256.u2.v4.g4.atomic", sm(90, DType::f32, op, Problem::columns)),
                 Catch::Contains("no atomic combine"));
  }
  // The columns tile keeps block x vec accumulators in shared memory: at most 48 KiB.
  CHECK_THAT(reason("columns_tile.b1024.u2.v8.direct", sm(90, DType::f16, Op::var, Problem::columns)),
             Catch::Contains("48 KiB"));
  CHECK(reason("columns_tile.b256.u2.v8.direct", sm(90, DType::f16, Op::var, Problem::columns)).empty());
  // Every op keeps some configuration of every problem it admits.
  for (const OpDescription& o : op_descriptions())
    for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
      for (DType d : kInputs) {
        if (op_unsupported(o.op, d)) continue;
        std::size_t valid = 0;
        for (const Variant& v : variants(p))
          for (const Config& c : space(v)) valid += !invalid_reason(c, sm(90, d, o.op, p));
        INFO(o.name << " " << name(d) << " " << name(p));
        CHECK(valid > 0);
      }
}

TEST_CASE("ops: identities, empty results and the host finish", "[ops][values]") {
  CHECK(identity(DType::u32, Op::all).as<std::uint32_t>() == 1);
  CHECK(identity(DType::u32, Op::any).as<std::uint32_t>() == 0);
  CHECK(identity(DType::i64, Op::count_nonzero).as<std::int64_t>() == 0);
  CHECK(std::isnan(empty_result(Op::mean, DType::f64).as<double>()));
  CHECK(std::isnan(empty_result(Op::mean, DType::bf16).to_double()));
  CHECK(empty_result(Op::all, DType::u8).as<std::uint8_t>() == 1);
  CHECK(empty_result(Op::any, DType::u8).as<std::uint8_t>() == 0);
  CHECK(empty_result(Op::norm2, DType::f32).as<float>() == 0.0f);
  CHECK(empty_result(Op::min, DType::i32).as<std::int32_t>() == std::numeric_limits<std::int32_t>::max());
  CHECK(empty_result(Op::argmax, DType::i64).as<std::int64_t>() == -1);
  CHECK(empty_result(Op::logsumexp, DType::f32).as<float>() == -std::numeric_limits<float>::infinity());
  CHECK(empty_result(Op::logsumexp, DType::bf16).to_double() == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(empty_result(Op::var, DType::f64).as<double>()));
  CHECK(std::isnan(empty_result(Op::std_population, DType::f16).to_double()));

  const HostArray counts = array_of<std::int64_t>({3, 0, 5});
  CHECK(combine_on_host(counts, 3, Op::count_nonzero, DType::i64).as<std::int64_t>() == 8);
  const HostArray flags = array_of<std::uint32_t>({1, 0, 1});
  CHECK(combine_on_host(flags, 3, Op::any, DType::u8) == Scalar::of(std::uint8_t(1)));
  CHECK(combine_on_host(flags, 3, Op::all, DType::u8) == Scalar::of(std::uint8_t(0)));
  CHECK(combine_on_host(flags, 1, Op::all, DType::u8) == Scalar::of(std::uint8_t(1)));
  const HostArray squares = array_of<float>({0.25f, 4.0f, 1.0f});
  CHECK(combine_on_host(squares, 3, Op::sumsq, DType::f32).as<float>() == 5.25f);
  CHECK(combine_on_host(squares, 3, Op::norm1, DType::bf16).to_double() == 5.25);
  const HostArray wraps = array_of<std::int32_t>({std::numeric_limits<std::int32_t>::max(), 1});
  CHECK(combine_on_host(wraps, 2, Op::sumsq, DType::i32).as<std::int32_t>() ==
        std::numeric_limits<std::int32_t>::min());
}

TEST_CASE("ops: the CPU reference of each op", "[ops][reference]") {
  const HostArray f = array_of<float>({1.0f, -2.0f, 0.0f, 3.5f, -0.0f});
  CHECK(reference(f, Op::sum).value.as<float>() == 2.5f);
  CHECK(reference(f, Op::mean).value.as<float>() == 0.5f);
  CHECK(reference(f, Op::mean).count == 5);
  CHECK(reference(f, Op::sumsq).value.as<float>() == 17.25f);
  CHECK(reference(f, Op::norm1).value.as<float>() == 6.5f);
  CHECK(reference(f, Op::norm2).value.as<float>() == float(std::sqrt(17.25)));
  CHECK(reference(f, Op::count_nonzero).value == Scalar::of(std::int64_t(3)));
  CHECK(reference(f, Op::any).value == Scalar::of(std::uint8_t(1)));
  CHECK(reference(f, Op::all).value == Scalar::of(std::uint8_t(0)));

  const HostArray nan = array_of<double>({0.0, std::numeric_limits<double>::quiet_NaN()});
  CHECK(reference(nan, Op::count_nonzero).value == Scalar::of(std::int64_t(1))); // NaN counts
  CHECK(std::isnan(reference(nan, Op::mean).value.as<double>()));

  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const HostArray i = array_of<std::int64_t>({big, big, -3});
  const Reference m = reference(i, Op::mean);
  CHECK(m.value.dtype == DType::f64);
  CHECK(m.value.as<double>() == double(__int128(big) * 2 - 3) / 3.0); // the exact sum over the count
  CHECK(reference(array_of<std::int32_t>({65536, 3}), Op::sumsq).value ==
        Scalar::of(std::int32_t(9))); // 2^32 wraps to 0
  CHECK(reference(array_of<std::int32_t>({5, 0, -1}), Op::all).value == Scalar::of(std::uint8_t(0)));

  HostArray empty;
  empty.dtype = DType::f32;
  CHECK(std::isnan(reference(empty, Op::mean).value.as<float>()));
  CHECK(reference(empty, Op::all).value == Scalar::of(std::uint8_t(1)));
  CHECK(reference(empty, Op::any).value == Scalar::of(std::uint8_t(0)));

  // bf16: accumulated in float32, rounded once.
  HostArray h = make_input(DType::bf16, 1000, 3);
  const Reference hr = reference(h, Op::mean);
  CHECK(hr.value.dtype == DType::bf16);
  CHECK(std::fabs(hr.value.to_double() - hr.exact) <= std::fabs(hr.exact) * std::ldexp(1.0, -8));
}

TEST_CASE("ops: the CPU reference of argmax and argmin", "[ops][reference]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const HostArray f = array_of<float>({1.0f, -2.0f, 0.0f, 3.5f, -0.0f});
  CHECK(reference(f, Op::argmax).value == Scalar::of(std::int64_t(3)));
  CHECK(reference(f, Op::argmin).value == Scalar::of(std::int64_t(1)));
  // Ties: the first index; -0.0 and +0.0 are equal, as torch compares them.
  const HostArray ties = array_of<std::int32_t>({2, 5, 5, 1, 1});
  CHECK(reference(ties, Op::argmax).value == Scalar::of(std::int64_t(1)));
  CHECK(reference(ties, Op::argmin).value == Scalar::of(std::int64_t(3)));
  CHECK(reference(array_of<float>({-0.0f, 0.0f}), Op::argmax).value == Scalar::of(std::int64_t(0)));
  CHECK(reference(array_of<float>({0.0f, -0.0f}), Op::argmin).value == Scalar::of(std::int64_t(0)));
  // A NaN wins either way, the first one.
  const HostArray nans = array_of<float>({1.0f, nan, 5.0f, nan});
  CHECK(reference(nans, Op::argmax).value == Scalar::of(std::int64_t(1)));
  CHECK(reference(nans, Op::argmin).value == Scalar::of(std::int64_t(1)));
  // Unsigned and the extremes of the type.
  const HostArray u = array_of<std::uint32_t>({7, 4294967295u, 0, 4294967295u, 0});
  CHECK(reference(u, Op::argmax).value == Scalar::of(std::int64_t(1)));
  CHECK(reference(u, Op::argmin).value == Scalar::of(std::int64_t(2)));
  // Indices across the reference's parallel chunks: the spikes of make_input (+1024 first, -1024
  // first at 32), and the first of two NaNs far apart.
  HostArray big = make_input(DType::f32, (1 << 20) + 7, 3);
  CHECK(reference(big, Op::argmax).value == Scalar::of(std::int64_t(0)));
  CHECK(reference(big, Op::argmin).value == Scalar::of(std::int64_t(32)));
  big.data<float>()[700001] = nan;
  big.data<float>()[900001] = nan;
  CHECK(reference(big, Op::argmax).value == Scalar::of(std::int64_t(700001)));
  CHECK(reference(big, Op::argmin).value == Scalar::of(std::int64_t(700001)));
  // Rows: the index within each row.
  Segmentation rows;
  rows.problem = Problem::rows;
  rows.shape = {2, 3};
  rows.stride = 3;
  const auto r = segmented_reference(array_of<std::int64_t>({1, 9, 9, 8, 2, 8}), rows, Op::argmax);
  CHECK(r[0].value == Scalar::of(std::int64_t(1)));
  CHECK(r[1].value == Scalar::of(std::int64_t(0)));
  HostArray empty;
  empty.dtype = DType::f32;
  CHECK(reference(empty, Op::argmax).value == Scalar::of(std::int64_t(-1)));
  // Exact: any other index is wrong.
  CHECK(check(reference(f, Op::argmax), Scalar::of(std::int64_t(3)), Op::argmax, 5).ok);
  CHECK_FALSE(check(reference(f, Op::argmax), Scalar::of(std::int64_t(4)), Op::argmax, 5).ok);
}

TEST_CASE("ops: the CPU reference of logsumexp, var and std", "[ops][reference]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  auto lse = [](std::initializer_list<double> xs) { return reference(array_of<double>(xs), Op::logsumexp); };
  CHECK(lse({0.0, 0.0}).value.as<double>() == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(lse({1.0, 2.0, 3.0}).exact == Approx(3.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0))).epsilon(1e-15));
  CHECK(lse({1000.0, 1000.0}).exact == Approx(1000.0 + std::log(2.0)).epsilon(1e-15)); // no overflow
  CHECK(lse({-inf, 1.5}).exact == 1.5);
  CHECK(lse({-inf, -inf}).exact == -inf);
  CHECK(lse({1.0, inf, 2.0}).exact == inf);
  CHECK(std::isnan(lse({1.0, nan, inf}).exact));
  HostArray empty;
  empty.dtype = DType::f32;
  CHECK(reference(empty, Op::logsumexp).value.as<float>() == -std::numeric_limits<float>::infinity());
  const Reference h = reference(array_of<f16_t>({f16_t(1.0), f16_t(2.0)}), Op::logsumexp);
  CHECK(h.value.dtype == DType::f16);
  CHECK(h.value.to_double() == double(f16_t(2.0 + std::log1p(std::exp(-1.0)))));

  const HostArray four = array_of<float>({1.0f, 2.0f, 3.0f, 4.0f});
  CHECK(reference(four, Op::var).exact == Approx(5.0 / 3).epsilon(1e-15));
  CHECK(reference(four, Op::var_population).exact == Approx(1.25).epsilon(1e-15));
  CHECK(reference(four, Op::std_).value.as<float>() == float(std::sqrt(5.0 / 3)));
  CHECK(reference(four, Op::std_population).exact == Approx(std::sqrt(1.25)).epsilon(1e-15));
  // Integers: float64. One element: NaN with correction 1 (0 / 0, as torch), 0 without.
  const Reference vi = reference(array_of<std::int32_t>({1, 2, 3, 4}), Op::var);
  CHECK(vi.value.dtype == DType::f64);
  CHECK(vi.value.as<double>() == Approx(5.0 / 3).epsilon(1e-15));
  CHECK(std::isnan(reference(array_of<std::int64_t>({5}), Op::var).exact));
  CHECK(reference(array_of<std::int64_t>({5}), Op::var_population).exact == 0.0);
  CHECK(std::isnan(reference(empty, Op::var_population).value.as<float>()));
  // A large mean: the deviations from it (the second pass), no cancellation.
  CHECK(reference(array_of<double>({1e9 + 1, 1e9 + 2, 1e9 + 3}), Op::var).exact == Approx(1.0).epsilon(1e-12));
  // An infinity or a NaN: NaN.
  CHECK(std::isnan(reference(array_of<double>({1.0, inf}), Op::var).exact));
  CHECK(std::isnan(reference(array_of<double>({inf}), Op::var_population).exact));
  CHECK(std::isnan(reference(array_of<double>({nan, 1.0}), Op::std_).exact));
  // Chan's merge of the parallel chunks agrees with one pass.
  HostArray big = make_input(DType::f64, (1 << 20) + 3, 9);
  const double* x = big.data<double>();
  long double sum = 0, sq = 0;
  for (std::uint64_t i = 0; i < big.n; ++i) sum += x[i];
  const long double mean = sum / big.n;
  for (std::uint64_t i = 0; i < big.n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  CHECK(reference(big, Op::var).exact == Approx(double(sq / (big.n - 1))).epsilon(1e-12));
}

TEST_CASE("ops: checks bound the float ops and compare the others exactly", "[ops][reference]") {
  const HostArray a = make_input(DType::f32, 1 << 16, 11);
  for (Op op : {Op::sum, Op::mean, Op::sumsq, Op::norm1, Op::norm2, Op::logsumexp, Op::var, Op::std_,
                Op::var_population, Op::std_population}) {
    INFO(name(op));
    const Reference r = reference(a, op);
    const Check at = check(r, r.value, op, 20);
    CHECK(at.ok);
    CHECK(at.bound > 0);
    CHECK(at.bound < 1e-3 * (r.abs_sum + 1));
    // Four bounds away (the rounding to float32 moves it by at most one): wrong.
    CHECK_FALSE(check(r, Scalar::of(float(r.exact + 4 * at.bound)), op, 20).ok);
  }
  // A mean of integers is float64: bounded with float64's unit roundoff.
  const HostArray ints = make_input(DType::i64, 4096, 5);
  const Reference m = reference(ints, Op::mean);
  const Check at = check(m, Scalar::of(m.exact), Op::mean, 12);
  CHECK(at.ok);
  CHECK(at.bound < 1e-12 * m.abs_sum);
  CHECK_FALSE(check(m, Scalar::of(m.exact + 4 * at.bound), Op::mean, 12).ok);
  // A float16 sum of squares past 65504 is +infinity, in the reference and on the GPU.
  HostArray big;
  big.dtype = DType::f16;
  big.n = 2;
  big.bytes.resize(4);
  const f16_t k1024(1024.0);
  std::memcpy(big.bytes.data(), &k1024, 2);
  std::memcpy(big.bytes.data() + 2, &k1024, 2);
  const Reference sq = reference(big, Op::sumsq);
  CHECK(std::isinf(sq.value.to_double()));
  CHECK(check(sq, sq.value, Op::sumsq, 2).ok);
  CHECK_FALSE(check(sq, Scalar::of(f16_t(65504.0)), Op::sumsq, 2).ok);
  // Counts and flags: exact.
  const Reference c = reference(a, Op::count_nonzero);
  CHECK(check(c, c.value, Op::count_nonzero, 1).ok);
  CHECK_FALSE(check(c, Scalar::of(std::int64_t(a.n - 1)), Op::count_nonzero, 1).ok);
  CHECK_FALSE(check(reference(a, Op::all), Scalar::of(std::uint8_t(0)), Op::all, 1).ok);
}

// NVRTC needs no GPU. Every template with every op's types: for each op family's own op
// (OpDescription::family: the others run its kernels but for the post-map or a comparison's sense)
// and admitted dtype, one configuration of each variant of each problem; for float32, and for
// int32's min and max (the integer atomics; int32 sums compile in full in the catalogue's tests),
// one of each (variant, tail, finish) the op admits. The family's other ops: one configuration of
// each (problem, finish), where their post-map and comparison are compiled. The segmented ordered finish (twopass: its own post pass, for
// every op) is compiled for every op and dtype, once per template: not for the evict-first twins,
// whose loads are all that differs. Those twins (their loads are of the element type, whatever the
// op) are compiled once per dtype: one configuration of the first op that admits it.
TEST_CASE("ops: every template compiles for every op and dtype it admits", "[ops][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  std::size_t ordered_jobs = 0;
  std::set<std::pair<DType, std::string>> twins; // (dtype, evict-first variant) compiled
  // float16 takes bfloat16's code paths but for element.cuh's conversions, which no op changes:
  // beside its ordered finishes, each variant once and each op's source once a problem.
  std::set<std::string> f16_variants;
  std::set<std::pair<Op, Problem>> f16_ops;
  for (const OpDescription& o : op_descriptions())
    for (DType d : kInputs) {
      if (op_unsupported(o.op, d)) continue;
      const bool every_finish = d == DType::f32 || (d == DType::i32 && (o.op == Op::min || o.op == Op::max));
      const bool own = o.family == o.op;
      for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments}) {
        std::set<Finish> finishes; // a family's other op: one configuration of each finish
        for (const Variant& v : variants(p)) {
          std::set<std::tuple<Tail, Finish>> seen;
          for (const Config& c : space(v)) {
            const bool ordered = p != Problem::array && c.finish == Finish::twopass;
            if (ordered && v.evict_first) continue;
            if (invalid_reason(c, sm(90, d, o.op, p))) continue;
            if (v.evict_first && !twins.insert({d, c.variant}).second) continue;
            if (!own && !finishes.insert(c.finish).second) continue;
            const bool by_finish = every_finish || ordered;
            if (own && !seen.insert({every_finish ? c.tail : Tail::none, by_finish ? c.finish : Finish::host}).second)
              continue;
            if (d == DType::f16 && !ordered) {
              const bool new_variant = f16_variants.insert(c.variant).second;
              const bool new_op = f16_ops.insert({o.op, p}).second;
              if (!new_variant && !new_op) continue;
            }
            jobs.push_back({c, d, o.op});
            ordered_jobs += ordered;
          }
        }
      }
    }
  const auto outcomes = compile_all(loader, jobs, 0);
  std::size_t failed = 0;
  std::set<std::pair<Op, DType>> covered;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    covered.insert({jobs[i].op, jobs[i].dtype});
    if (outcomes[i].error.empty()) continue;
    ++failed;
    FAIL_CHECK(key(jobs[i].config) << " " << name(jobs[i].dtype) << " " << name(jobs[i].op) << ": "
                                   << outcomes[i].error);
  }
  CHECK(failed == 0);
  // norm1, norm2 and logsumexp skip the three integer dtypes.
  CHECK(covered.size() == op_descriptions().size() * 7 - 3 * 3);
  // The ordered finish: columns_split and segments_flat_carry for every (op, dtype) covered.
  CHECK(ordered_jobs == 2 * covered.size());
}
