// GPU tests of var's and std's shifted atomic finish on the columns (each block's partial of a
// column as float64 sums of its elements' deviations from the column's first element and of their
// squares, atomicAdd into a workspace, a post pass to the result): var, std, var_population and
// std_population of float32, bf16 and f16 against the CPU reference on columns whose means lie far
// from zero (-2000 .. 2000, a spread of about 1: the shift keeps the float64 sums from cancelling),
// columns that hold a NaN or an infinity (NaN, as the CPU's), constant columns (0: no block adds
// anything), a first element far from the rest, and one row (var: NaN; var_population: 0);
// several geometries, each launched twice with one workspace; a launch captured in a CUDA graph
// and replayed; the Reducer's calls through a store that points at the shifted finish, eager,
// warm and captured. test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/half.h"
#include "kernels/ops.h"
#include "tests/config_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/segmented_gpu_fixture.h"

#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace reduce_tune;
using testing::column_layout;

namespace {

/// Column c of the input (c = i % stride): c % 5 sets its mean (-2000 .. 2000), uniform noise of
/// about +-1 around it; c % 11 == 3 holds a NaN in its 3rd row, c % 11 == 5 an infinity (either
/// sign) in a random row, c % 13 == 7 is constant, c % 17 == 9 starts 10^4 above its mean.
HostArray offset_input(DType d, const Segmentation& seg, std::uint64_t seed) {
  HostArray a;
  a.dtype = d;
  a.n = seg.input_elements();
  a.bytes.resize(a.n * size_of(d));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-1.0, 1.0);
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::uint64_t rows = seg.shape.length;
  std::vector<std::uint64_t> inf_row(seg.stride);
  for (auto& r : inf_row) r = rng() % (rows ? rows : 1);
  for (std::uint64_t i = 0; i < a.n; ++i) {
    const std::uint64_t c = i % seg.stride, r = i / seg.stride;
    const double mean = 1000.0 * (double(c % 5) - 2.0);
    double v = c % 13 == 7 ? mean : mean + noise(rng);
    if (c % 17 == 9 && r == 0) v = mean + 1e4;
    if (c % 11 == 3 && r == 2) v = nan;
    if (c % 11 == 5 && r == inf_row[c]) v = c % 2 ? inf : -inf;
    if (d == DType::f32) {
      const float f = float(v);
      std::memcpy(&a.bytes[i * 4], &f, 4);
    } else {
      const std::uint16_t h = narrow_half(v, d);
      std::memcpy(&a.bytes[i * 2], &h, 2);
    }
  }
  return a;
}

std::vector<testing::ColumnsCase> cases() {
  return {
      {"256 columns, hundreds of row slices", column_layout(256, 20011, 256), "columns_split.b256.u4.v4.g4.atomic"},
      {"33 columns (scalar loads)", column_layout(33, 10003, 33), "columns_split.b512.u1.v2.g8.atomic"},
      {"16 columns of 2^16 rows", column_layout(16, 65536, 16), "columns_split.b256.u2.v1.g8.atomic"},
      {"1000 columns of 37 rows, evict-first", column_layout(1000, 37, 1003), "columns_split_streaming.b256.u4.v2.g2.atomic"},
      {"64 columns of one row", column_layout(64, 1, 64), "columns_split.b256.u4.v4.g4.atomic"},
  };
}

} // namespace

TEST_CASE("shifted columns: var and std of offset, special and constant columns match the CPU, twice in a row",
          "[gpu][shifted_columns][segmented]") {
  testing::check_atomic_post_columns(cases(), {Op::var, Op::std_, Op::var_population, Op::std_population},
                                     {DType::f32, DType::bf16, DType::f16}, offset_input, 11);
}

TEST_CASE("shifted columns: the launch captured in a graph replays right on new data",
          "[gpu][shifted_columns][graphs]") {
  testing::check_captured_cases(
      {
          {"columns_split.b256.u4.v4.g4.atomic", Op::var, DType::f32, column_layout(256, 20011, 256)},
          {"columns_split.b256.u2.v1.g8.atomic", Op::std_, DType::bf16, column_layout(16, 65536, 16)},
      },
      offset_input);
}

TEST_CASE("shifted columns: the Reducer's calls through it, eager, warm and captured",
          "[gpu][shifted_columns][graphs][reducer]") {
  testing::check_stored_calls(
      {
          {"columns_split.b256.u4.v4.g4.atomic", Op::var, DType::f32, column_layout(256, 20011, 256), {256, 20011}},
          {"columns_split.b512.u1.v2.g8.atomic", Op::std_population, DType::f16, column_layout(33, 10003, 33), {33, 10003}},
      },
      offset_input);
}
