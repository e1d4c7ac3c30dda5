// GPU tests of the columns mapping's element loop (templates/segmented/columns.cu: rounds of rows
// software-pipelined, each element folded in with the op's rt_fold): argmax, argmin, var, std,
// logsumexp and sum on columns built to catch a fold that differs from the combine (ties, NaNs
// first, in the middle and twice, +-inf, columns of -inf only, of +inf only, of the lowest and of
// the highest finite value), in float32, bfloat16, float64 and int32 where the op takes them,
// through whole vectors (a stride of whole vectors) and scalars (an odd stride), with each unroll,
// vector width and finish of the columns variants, against the CPU reference. test_gpu_main.cpp
// skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "tests/config_fixture.h"
#include "tests/gpu_fixture.h"
#include "tests/segmented_gpu_fixture.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <tuple>
#include <vector>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Stand for the dtype's lowest and highest finite values (put below).
constexpr double kLowest = -std::numeric_limits<double>::max();
constexpr double kHighest = std::numeric_limits<double>::max();

/// Element i of `a` set to v in a's dtype: kLowest and kHighest as the dtype's finite extremes;
/// int32 takes an infinity as its extreme and a NaN as 0. The other values are small integers,
/// exact in every dtype.
void put(HostArray& a, std::uint64_t i, double v) {
  switch (a.dtype) {
  case DType::f64: a.data<double>()[i] = v; return;
  case DType::f32: {
    const float f = v == kLowest    ? -std::numeric_limits<float>::max()
                    : v == kHighest ? std::numeric_limits<float>::max()
                                    : float(v);
    a.data<float>()[i] = f;
    return;
  }
  case DType::bf16: {
    std::uint16_t b;
    if (v == kLowest) b = 0xff7f;
    else if (v == kHighest) b = 0x7f7f;
    else if (std::isnan(v)) b = 0x7fc0;
    else {
      const float f = float(v);
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      b = std::uint16_t(u >> 16); // exact: small integers and infinities
    }
    a.data<std::uint16_t>()[i] = b;
    return;
  }
  case DType::i32: {
    std::int32_t x = std::isnan(v)                ? 0
                     : (v == kLowest || v == -kInf) ? std::numeric_limits<std::int32_t>::min()
                     : (v == kHighest || v == kInf) ? std::numeric_limits<std::int32_t>::max()
                                                     : std::int32_t(v);
    a.data<std::int32_t>()[i] = x;
    return;
  }
  default: FAIL("no such input dtype here");
  }
}

/// `rows` x `cols` elements, rows `stride` apart (the gap unset: 0), column c of kind c % 10.
HostArray edge_columns(DType d, std::uint64_t cols, std::uint64_t rows, std::uint64_t stride, unsigned seed) {
  HostArray a;
  a.dtype = d;
  a.n = (rows - 1) * stride + cols;
  a.bytes.assign(a.n * size_of(d), 0);
  std::mt19937 rng(seed);
  auto small = [&] { return double(int(rng() % 9) - 4); }; // many ties
  for (std::uint64_t c = 0; c < cols; ++c) {
    const std::uint64_t nan1 = rows / 3 + c % 7, nan2 = 2 * rows / 3 + c % 5;
    for (std::uint64_t r = 0; r < rows; ++r) {
      double v = small();
      switch (c % 10) {
      case 0: break;                                                // ties
      case 1: v = -kInf; break;                                     // -inf only
      case 2: v = kLowest; break;                                   // the lowest only
      case 3: v = kInf; break;                                      // +inf only
      case 4: v = r == nan1 || r == nan2 ? kNaN : v; break;         // two NaNs inside
      case 5: v = r == 0 ? kNaN : v; break;                         // a NaN first
      case 6: v = r % 97 == 5 ? kInf : r % 89 == 3 ? -kInf : v; break; // both infinities
      case 7: v = r < 40 || r % 3 == 0 ? -kInf : v; break;          // -inf first, then often
      case 8: v = kHighest; break;                                  // the highest only
      case 9: v = r == rows - 1 ? 4.0 : 3.0; break;                 // equal, the last above
      }
      put(a, r * stride + c, v);
    }
  }
  return a;
}

Segmentation columns(std::uint64_t cols, std::uint64_t rows, std::uint64_t stride) {
  Segmentation s;
  s.problem = Problem::columns;
  s.shape = {cols, rows};
  s.stride = stride;
  return s;
}

/// One valid configuration of each (variant, unroll, vector width, finish) of the columns
/// problem for t, and the tuned keys at 65536 x 256 where valid.
std::vector<Config> configs_for(const Target& t) {
  std::vector<Config> out;
  std::set<std::tuple<std::string, int, int, Finish>> seen;
  for (const Variant& v : variants(Problem::columns))
    for (const Config& c : space(v))
      if (!invalid_reason(c, t) && seen.insert({c.variant, c.unroll, c.vec, c.finish}).second)
        out.push_back(c);
  for (const char* k : {"columns_split_streaming.b512.u4.v2.g2.twopass",
                        "columns_split_streaming.b512.u4.v1.g2.twopass"}) {
    const Config c = testing::cfg(k);
    if (!invalid_reason(c, t)) out.push_back(c);
  }
  return out;
}

struct OpDtype {
  Op op;
  DType d;
};
constexpr OpDtype kPairs[] = {
    {Op::argmax, DType::f32},    {Op::argmax, DType::bf16},    {Op::argmax, DType::f64},
    {Op::argmax, DType::i32},    {Op::argmin, DType::f32},     {Op::argmin, DType::bf16},
    {Op::argmin, DType::f64},    {Op::argmin, DType::i32},     {Op::var, DType::f32},
    {Op::var, DType::bf16},      {Op::var, DType::f64},        {Op::std_, DType::f32},
    {Op::std_, DType::bf16},     {Op::var_population, DType::f32}, {Op::logsumexp, DType::f32},
    {Op::logsumexp, DType::bf16}, {Op::logsumexp, DType::f64}, {Op::sum, DType::f32},
};

} // namespace

TEST_CASE("columns fold: argmax, argmin, var, std, logsumexp and sum on ties, NaNs and infinities "
          "match the CPU, every unroll, vector width and finish",
          "[gpu][ops][columns_fold]") {
  Gpu& g = gpu();
  const CUstream s = g.stream.get();
  std::size_t checked = 0;
  // 70 columns: whole vectors up to column 64 or 68, scalars after; 1031 rows: a partial last
  // round for every unroll. Stride 72: vectors; stride 71: scalars only (for a vector width > 1).
  for (const std::uint64_t stride : {72, 71}) {
    const Segmentation seg = columns(70, 1031, stride);
    for (const OpDtype& od : kPairs) {
      Target t = g.target(od.d, od.op);
      t.problem = Problem::columns;
      const HostArray data = edge_columns(od.d, 70, 1031, stride, 5 + unsigned(stride));
      const std::vector<Reference> refs = segmented_reference(data, seg, od.op);
      const cuda::Buffer in = testing::upload(data.bytes.data(), data.bytes.size());
      const cuda::Buffer offsets(16);
      HostArray got = testing::result_array(od.op, od.d, seg.shape.count);
      const cuda::Buffer out(got.bytes.size() + testing::kPoisonedTail);
      Workspace ws;
      const std::vector<Config> configs = configs_for(t);
      REQUIRE(configs.size() >= 4);
      for (const Config& c : configs) {
        INFO("stride " << stride << " " << name(od.d) << " " << name(od.op) << " " << key(c));
        const Kernel k = g.loader.load(c, od.d, od.op);
        const SegmentedPlan p = segmented_plan(c, t, seg.shape);
        ws.reserve(p);
        testing::check_launches(k, c, t, seg, p, in.get(), offsets.get(), out, ws, got, refs, od.op, s, 1);
        checked += seg.shape.count;
      }
    }
  }
  CHECK(checked > 0);
}
