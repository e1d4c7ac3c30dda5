// GPU tests of argmax's and argmin's keyed atomic finish on the columns (each block's partial of a
// column as an ordered 64-bit key, atomicMax into a workspace, a post pass to the int64 index):
// float32, int32, uint32, bf16 and f16 against the CPU reference on inputs made of ties (values
// -3..3), NaN of either sign in some columns, infinities, signed zeros and the integer extremes,
// with columns that hold nothing but the identity's value (argmax: -inf, the lowest integer, 0;
// argmin: +inf, the largest), so the first index on ties, the first NaN and the identity's own
// ties are all decided by the key; several geometries (hundreds of row slices, a stripe narrower
// than its width, scalar loads on an odd stride, the evict-first twin), each launched twice with
// one workspace; a launch captured in a CUDA graph and replayed; the Reducer's calls through a
// store that points at the keyed finish, eager, warm and captured. test_gpu_main.cpp skips them
// (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/half.h"
#include "kernels/ops.h"
#include "tests/config_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/segmented_gpu_fixture.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace reduce_tune;
using testing::column_layout;

namespace {

template <typename T> void put(HostArray& a, std::uint64_t i, T v) { std::memcpy(&a.bytes[i * sizeof(T)], &v, sizeof(T)); }

/// Ties, specials and extremes (see the file's comment); column c of the input: c = i % stride.
/// NaN only in columns c % 3 == 0; columns c % 7 == 1 hold only the lowest value, c % 7 == 2 only
/// the highest.
HostArray tied_input(DType d, const Segmentation& seg, std::uint64_t seed) {
  HostArray a;
  a.dtype = d;
  a.n = seg.input_elements();
  a.bytes.resize(a.n * size_of(d));
  std::mt19937_64 rng(seed);
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (std::uint64_t i = 0; i < a.n; ++i) {
    const std::uint64_t c = i % seg.stride;
    const unsigned r = unsigned(rng() % 4096);
    double v = double(int(rng() % 7) - 3);
    int extreme = 0; // -1: the lowest value, +1: the highest
    if (c % 7 == 1) extreme = -1;
    else if (c % 7 == 2) extreme = 1;
    else if (r < 4) extreme = r < 2 ? -1 : 1;
    if (is_float(d)) {
      if (extreme) v = extreme * inf;
      else if (r < 8 && c % 3 == 0) v = r < 6 ? nan : -nan;
      else if (r < 16) v = r < 12 ? 0.0 : -0.0;
      if (d == DType::f32) put(a, i, float(v));
      else put(a, i, narrow_half(v, d));
    } else if (d == DType::i32) {
      put(a, i, extreme < 0 ? std::numeric_limits<std::int32_t>::min()
                : extreme > 0 ? std::numeric_limits<std::int32_t>::max() : std::int32_t(v));
    } else { // uint32: 0 .. 6 around the extremes
      put(a, i, extreme < 0 ? 0u : extreme > 0 ? 0xffffffffu : std::uint32_t(v + 3));
    }
  }
  return a;
}

std::vector<testing::ColumnsCase> cases() {
  return {
      {"256 columns, hundreds of row slices", column_layout(256, 20011, 256), "columns_split.b256.u4.v4.g4.atomic"},
      {"33 columns (scalar loads)", column_layout(33, 10003, 33), "columns_split.b512.u1.v2.g8.atomic"},
      {"3000 columns", column_layout(3000, 2001, 3000), "columns_split.b256.u2.v1.g2.atomic"},
      {"1000 columns of 37 rows, evict-first", column_layout(1000, 37, 1003), "columns_split_streaming.b256.u4.v2.g2.atomic"},
  };
}

} // namespace

TEST_CASE("keyed columns: argmax and argmin of ties, NaN and extremes match the CPU, twice in a row",
          "[gpu][keyed_columns][segmented]") {
  testing::check_atomic_post_columns(cases(), {Op::argmax, Op::argmin},
                                     {DType::f32, DType::i32, DType::u32, DType::bf16, DType::f16}, tied_input, 5);
}

TEST_CASE("keyed columns: the launch captured in a graph replays right on new data",
          "[gpu][keyed_columns][graphs]") {
  testing::check_captured_cases(
      {
          {"columns_split.b256.u4.v4.g4.atomic", Op::argmax, DType::f32, column_layout(256, 20011, 256)},
          {"columns_split.b256.u2.v1.g2.atomic", Op::argmin, DType::bf16, column_layout(3000, 2001, 3000)},
      },
      tied_input);
}

TEST_CASE("keyed columns: the Reducer's calls through it, eager, warm and captured",
          "[gpu][keyed_columns][graphs][reducer]") {
  testing::check_stored_calls(
      {
          {"columns_split.b256.u4.v4.g4.atomic", Op::argmax, DType::f32, column_layout(256, 20011, 256), {256, 20011}},
          {"columns_split.b512.u1.v2.g8.atomic", Op::argmin, DType::i32, column_layout(33, 10003, 33), {33, 10003}},
      },
      tied_input);
}
