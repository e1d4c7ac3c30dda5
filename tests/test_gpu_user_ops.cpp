// GPU tests of user reductions (reduce_tune/reduction.h): the Reducer's async, rows, columns and
// segments calls with descriptions of several kinds (a mapped sum with a post-map, a float64
// result of integers, a struct accumulator, a non-commutative combine), each result checked
// against the reduction's own CPU evaluation. test_gpu_main.cpp skips them (exit 4) where there is
// no GPU.
#include <catch2/catch.hpp>

#include "kernels/driver.h"
#include "reduce_tune/reducer.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/user_reductions.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace reduce_tune;

namespace {

using Gpu = reduce_tune::testing::GpuContext;
using reduce_tune::testing::TempDir;
using reduce_tune::testing::log_sum_exp;

Reduction norm2() {
  Reduction r;
  r.map = "x * x";
  r.combine = "a + b";
  r.identity = "0";
  r.post = "sqrt(a)";
  r.inputs = {DType::f32, DType::f64};
  r.check = [](const double* x, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
    return std::sqrt(s);
  };
  return r;
}

// The mean of integers in float64: a double accumulator, the count in the post-map.
Reduction mean_of_ints() {
  Reduction r;
  r.accumulator = "double";
  r.map = "double(x)";
  r.combine = "a + b";
  r.identity = "0.0";
  r.post = "a / double(count)";
  r.inputs = {DType::i32};
  r.result = DType::f64;
  r.check = [](const double* x, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += x[i];
    return s / double(n); // 0 / 0: NaN, as the kernel's
  };
  return r;
}

/// Elements of `dtype` (f32, f64 or i32) as their bytes and as doubles; a third of them zero.
struct Data {
  DType dtype;
  std::vector<unsigned char> bytes;
  std::vector<double> values;
};
Data make(DType dtype, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  Data d{dtype, std::vector<unsigned char>(n * size_of(dtype)), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    double v = rng() % 3 == 0 ? 0.0 : u(rng);
    if (dtype == DType::i32) {
      const std::int32_t k = std::int32_t(std::lround(v * 1000));
      std::memcpy(&d.bytes[i * 4], &k, 4);
      v = k;
    } else if (dtype == DType::f32) {
      const float f = float(v);
      std::memcpy(&d.bytes[i * 4], &f, 4);
      v = f;
    } else {
      std::memcpy(&d.bytes[i * 8], &v, 8);
    }
    d.values[i] = v;
  }
  return d;
}

cuda::Buffer upload(const void* p, std::size_t bytes) {
  cuda::Buffer b(std::max<std::size_t>(bytes, 16));
  if (bytes) reduce_tune::cuda::upload_sync(b.get(), p, bytes);
  return b;
}

std::vector<double> download(const cuda::Buffer& b, std::size_t count, DType dtype) {
  std::vector<unsigned char> raw(count * size_of(dtype));
  RT_CU(cuCtxSynchronize());
  if (!raw.empty()) RT_CU(cuMemcpyDtoH(raw.data(), b.get(), raw.size()));
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (dtype == DType::f32) {
      float f;
      std::memcpy(&f, &raw[i * 4], 4);
      out[i] = f;
    } else {
      std::memcpy(&out[i], &raw[i * 8], 8);
    }
  }
  return out;
}

/// Whether `got` is the CPU evaluation `want` of a float32 (or float64) result: both NaN, equal,
/// or within a relative 1e-4 (a float32 accumulator's rounding, a few thousand elements deep).
bool close(double got, double want, DType result) {
  if (std::isnan(want)) return std::isnan(got);
  if (got == want) return true;
  const double tol = result == DType::f32 ? 1e-4 : 1e-10;
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

/// One reduction on every problem: the 1-D array at several sizes (not for `ordered_only`), rows
/// (dense and strided), columns, offsets segments (empty ones too), each result against r.check.
void check_problems(Reducer& reducer, const Reduction& r, DType dtype, bool ordered_only = false) {
  const DType result = r.result_dtype(dtype);
  INFO(r.name() << " " << name(dtype));
  if (!ordered_only)
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(1) << 20 | 3}) {
      INFO("array of " << n);
      const Data d = make(dtype, n, unsigned(n));
      const cuda::Buffer in = upload(d.bytes.data(), d.bytes.size()), out(16);
      reducer.reduce_async(r, dtype, reinterpret_cast<const void*>(in.get()), n,
                           reinterpret_cast<void*>(out.get()));
      CHECK(close(download(out, 1, result)[0], r.check(d.values.data(), n), result));
    }
  // Rows: 1000 x 37, stride 40 (strided, unaligned rows).
  {
    const std::size_t rows = 1000, cols = 37, stride = 40;
    const Data d = make(dtype, rows * stride, 7);
    const cuda::Buffer in = upload(d.bytes.data(), d.bytes.size()), out(rows * 8);
    reducer.reduce_rows(r, dtype, reinterpret_cast<const void*>(in.get()), rows, cols,
                        reinterpret_cast<void*>(out.get()), nullptr, stride);
    const std::vector<double> got = download(out, rows, result);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < rows; ++i) bad += !close(got[i], r.check(&d.values[i * stride], cols), result);
    CHECK(bad == 0);
  }
  // Columns: 300 x 129 (an ordered reduction: rows in order, RT_ORDERED, or the ordered finish).
  {
    const std::size_t rows = 300, cols = 129;
    const Data d = make(dtype, rows * cols, 11);
    const cuda::Buffer in = upload(d.bytes.data(), d.bytes.size()), out(cols * 8);
    reducer.reduce_columns(r, dtype, reinterpret_cast<const void*>(in.get()), rows, cols,
                           reinterpret_cast<void*>(out.get()));
    const std::vector<double> got = download(out, cols, result);
    std::size_t bad = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      std::vector<double> column(rows);
      for (std::size_t i = 0; i < rows; ++i) column[i] = d.values[i * cols + c];
      bad += !close(got[c], r.check(column.data(), rows), result);
    }
    CHECK(bad == 0);
  }
  // Segments: 2000 of random lengths 0..300 (some empty), offsets from 5.
  {
    std::mt19937 rng(3);
    std::vector<std::int64_t> offsets{5};
    for (int s = 0; s < 2000; ++s) offsets.push_back(offsets.back() + (rng() % 5 == 0 ? 0 : rng() % 300));
    const Data d = make(dtype, std::size_t(offsets.back()), 13);
    const cuda::Buffer in = upload(d.bytes.data(), d.bytes.size()),
                       off = upload(offsets.data(), offsets.size() * 8), out(2000 * 8);
    reducer.reduce_segments(r, dtype, reinterpret_cast<const void*>(in.get()),
                            reinterpret_cast<const std::int64_t*>(off.get()), 2000,
                            reinterpret_cast<void*>(out.get()));
    const std::vector<double> got = download(out, 2000, result);
    std::size_t bad = 0;
    for (std::size_t s = 0; s < 2000; ++s)
      bad += !close(got[s], r.check(&d.values[std::size_t(offsets[s])], std::size_t(offsets[s + 1] - offsets[s])), result);
    CHECK(bad == 0);
  }
}

} // namespace

TEST_CASE("user reductions: every problem against the CPU evaluation", "[gpu][user]") {
  const Gpu g;
  const TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  Reducer reducer(0, o);
  check_problems(reducer, norm2(), DType::f32);
  check_problems(reducer, norm2(), DType::f64);
  check_problems(reducer, mean_of_ints(), DType::i32);
  check_problems(reducer, log_sum_exp(), DType::f32);
  // A 4-byte accumulator takes the sum's tuning (shipped, or the defaults where there is none),
  // graded related or builtin, never as the reduction's own.
  const Choice c = reducer.config_for(norm2(), DType::f32, Problem::array, {1, 1 << 24});
  CHECK((c.match == Match::related || c.match == Match::builtin));
  if (c.match == Match::related) CHECK_THAT(c.note, Catch::Contains("float32 sum"));
}

TEST_CASE("user reductions: a non-commutative combine keeps the order", "[gpu][user]") {
  const Gpu g;
  const TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  Reducer reducer(0, o);
  const Reduction ordered = testing::first_nonzero_index();
  check_problems(reducer, ordered, DType::f32, /*ordered_only=*/true);
  // The 1-D problem has no variant that keeps it.
  const cuda::Buffer in(64), out(64);
  CHECK_THROWS_AS(reducer.reduce_async(ordered, DType::f32, reinterpret_cast<const void*>(in.get()),
                                       16, reinterpret_cast<void*>(out.get())),
                  ReductionError);
}

TEST_CASE("user reductions: bad descriptions and dtypes throw", "[gpu][user]") {
  const Gpu g;
  Reducer reducer(0);
  const cuda::Buffer in(64), out(64);
  const void* d_in = reinterpret_cast<const void*>(in.get());
  void* d_out = reinterpret_cast<void*>(out.get());
  Reduction bad = norm2();
  bad.combine = "a +* b";
  try {
    reducer.reduce_async(bad, DType::f32, d_in, 16, d_out);
    FAIL("a combine that does not compile ran");
  } catch (const ReductionError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("combine(1)"));
  }
  CHECK_THROWS_AS(reducer.reduce_async(norm2(), DType::i32, d_in, 16, d_out), ReductionError);
  CHECK_THROWS_AS(reducer.reduce_rows(norm2(), DType::f32, d_in, 4, 5, d_out, nullptr, 4), InvalidArgument);
}
