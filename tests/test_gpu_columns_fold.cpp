// GPU tests of the columns mapping's element loop (templates/segmented/columns.cu: rounds of rows
// software-pipelined, each element folded in with the op's rt_fold): argmax, argmin, var, std,
// logsumexp and sum on columns built to catch a fold that differs from the combine (ties, NaNs
// first, in the middle and twice, +-inf, columns of -inf only, of +inf only, of the lowest and of
// the highest finite value), in float32, bfloat16, float64 and int32 where the op takes them,
// through whole vectors (a stride of whole vectors) and scalars (an odd stride), with each unroll,
// vector width and finish of the columns variants, against the CPU reference; and the same runs
// as rows (the vector loop's body, head and tail). test_gpu_main.cpp skips them (exit 4) where
// there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/half.h"
#include "kernels/ops.h"
#include "tests/config_fixture.h"
#include "tests/gpu_fixture.h"
#include "tests/segmented_gpu_fixture.h"

#include <cmath>
#include <cstdint>
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
  case DType::bf16: // the finite extremes by their bits (narrow_half rounds them to infinities)
    a.data<std::uint16_t>()[i] = v == kLowest    ? std::uint16_t(0xff7f)
                                 : v == kHighest ? std::uint16_t(0x7f7f)
                                                 : narrow_half(v, DType::bf16);
    return;
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

/// Element r of a run of `len` (a column or a row) of kind k (0..9), at random where the kind
/// leaves it so.
double edge_value(unsigned k, std::uint64_t r, std::uint64_t len, std::uint64_t salt, std::mt19937& rng) {
  const double v = double(int(rng() % 9) - 4); // many ties
  const std::uint64_t nan1 = len / 3 + salt % 7, nan2 = 2 * len / 3 + salt % 5;
  switch (k) {
  case 1: return -kInf;                                       // -inf only
  case 2: return kLowest;                                     // the lowest only
  case 3: return kInf;                                        // +inf only
  case 4: return r == nan1 || r == nan2 ? kNaN : v;           // two NaNs inside
  case 5: return r == 0 ? kNaN : v;                           // a NaN first
  case 6: return r % 97 == 5 ? kInf : r % 89 == 3 ? -kInf : v; // both infinities
  case 7: return r < 40 || r % 3 == 0 ? -kInf : v;            // -inf first, then often
  case 8: return kHighest;                                    // the highest only
  case 9: return r + 1 == len ? 4.0 : 3.0;                    // equal, the last above
  default: return v;                                          // ties
  }
}

/// `count` runs (columns or rows) of `len` elements: run s's element j at s * run_step + j *
/// elem_step (the gaps unset: 0), run s of kind s % 10.
HostArray edge_runs(DType d, std::uint64_t count, std::uint64_t len, std::uint64_t run_step,
                    std::uint64_t elem_step, unsigned seed) {
  HostArray a;
  a.dtype = d;
  a.n = (count - 1) * run_step + (len - 1) * elem_step + 1;
  a.bytes.assign(a.n * size_of(d), 0);
  std::mt19937 rng(seed);
  for (std::uint64_t s = 0; s < count; ++s)
    for (std::uint64_t j = 0; j < len; ++j)
      put(a, s * run_step + j * elem_step, edge_value(unsigned(s % 10), j, len, s, rng));
  return a;
}

Segmentation matrix(Problem p, std::uint64_t count, std::uint64_t length, std::uint64_t stride) {
  Segmentation s;
  s.problem = p;
  s.shape = {count, length};
  s.stride = stride;
  return s;
}

/// Configurations of `problem` for t that together take every unroll, vector width and finish of
/// each variant (not every combination of them), and the tuned keys at 65536 x 256 where valid.
std::vector<Config> configs_for(const Target& t, Problem problem) {
  std::vector<Config> out;
  std::set<std::tuple<std::string, int, int>> seen; // (variant, which parameter, its value)
  for (const Variant& v : variants(problem))
    for (const Config& c : space(v)) {
      if (invalid_reason(c, t)) continue;
      bool fresh = false;
      for (const auto& p : {std::tuple<std::string, int, int>{c.variant, 0, c.unroll},
                            std::tuple<std::string, int, int>{c.variant, 1, c.vec},
                            std::tuple<std::string, int, int>{c.variant, 2, int(c.finish)}})
        fresh = seen.insert(p).second || fresh;
      if (fresh) out.push_back(c);
    }
  if (problem == Problem::columns)
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

/// Every pair of kPairs on seg (its input `data` of each pair's dtype from make), through the
/// configurations of configs_for (compiled first, in parallel), each launch checked against the
/// CPU reference. Returns the results checked.
template <class Make>
std::size_t check_pairs(Gpu& g, const Segmentation& seg, Make make) {
  const CUstream s = g.stream.get();
  std::vector<CompileJob> jobs;
  for (const OpDtype& od : kPairs) {
    Target t = g.target(od.d, od.op);
    t.problem = seg.problem;
    for (const Config& c : configs_for(t, seg.problem)) jobs.push_back({c, od.d, od.op});
  }
  for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.substr(0, 2000).empty());
  std::size_t checked = 0;
  for (const OpDtype& od : kPairs) {
    Target t = g.target(od.d, od.op);
    t.problem = seg.problem;
    const HostArray data = make(od.d);
    const std::vector<Reference> refs = segmented_reference(data, seg, od.op);
    const cuda::Buffer in = testing::upload(data.bytes.data(), data.bytes.size());
    const cuda::Buffer offsets(16);
    HostArray got = testing::result_array(od.op, od.d, seg.shape.count);
    const cuda::Buffer out(got.bytes.size() + testing::kPoisonedTail);
    Workspace ws;
    const std::vector<Config> configs = configs_for(t, seg.problem);
    REQUIRE(configs.size() >= 3);
    for (const Config& c : configs) {
      INFO(name(seg.problem) << " stride " << seg.stride << " " << name(od.d) << " " << name(od.op) << " "
                             << key(c));
      const Kernel k = g.loader.load(c, od.d, od.op);
      const SegmentedPlan p = segmented_plan(c, t, seg.shape);
      ws.reserve(p);
      testing::check_launches(k, c, t, seg, p, in.get(), offsets.get(), out, ws, got, refs, od.op, s, 1);
      checked += seg.shape.count;
    }
  }
  return checked;
}

} // namespace

TEST_CASE("columns fold: argmax, argmin, var, std, logsumexp and sum on ties, NaNs and infinities "
          "match the CPU, every unroll, vector width and finish",
          "[gpu][ops][columns_fold]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  // 70 columns: whole vectors up to column 64 or 68, scalars after; 1031 rows: a partial last
  // round for every unroll. Stride 72: vectors; stride 71: scalars only (for a vector width > 1).
  for (const std::uint64_t stride : {72, 71})
    checked += check_pairs(g, matrix(Problem::columns, 70, 1031, stride), [&](DType d) {
      return edge_runs(d, 70, 1031, 1, stride, 5 + unsigned(stride));
    });
  CHECK(checked > 0);
}

TEST_CASE("columns fold: the rows' loops fold the same cases right (vector body, head and tail)",
          "[gpu][ops][columns_fold]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  // Rows of 1031 elements 1033 apart: each row starts at another offset from a vector boundary,
  // so the heads (combined) and tails (folded) of the vector loop both take elements.
  checked += check_pairs(g, matrix(Problem::rows, 50, 1031, 1033),
                         [&](DType d) { return edge_runs(d, 50, 1031, 1033, 1, 9); });
  CHECK(checked > 0);
}
