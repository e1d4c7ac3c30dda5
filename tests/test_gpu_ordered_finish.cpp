// GPU tests of the segmented ordered finish (Finish::twopass: the blocks that share a result leave
// partials in a workspace, a post pass combines them in block order): columns_split and
// segments_flat_carry for argmax, var, logsumexp and sum (and argmin, std, a bf16 argmax) against
// the CPU reference, on columns tall and short and on offsets with a segment across many blocks,
// empty segments and a single huge segment; a non-commutative user reduction through both against
// its own CPU evaluation; the launches captured in a CUDA graph and replayed; the Reducer's calls
// that a store points at them, eager and captured. test_gpu_main.cpp skips them (exit 4) where
// there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/ops.h"
#include "kernels/user_op.h"
#include "tests/config_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/graph_fixture.h"
#include "tests/segmented_gpu_fixture.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using testing::Gpu;
using testing::gpu;
using testing::column_layout;
using testing::upload;
using testing::first_nonzero_value;

namespace {

/// Offsets from 3 (unaligned): segments of 0..300 elements, every fifth empty, with one of
/// `huge` elements in the middle (across hundreds of the flat mapping's blocks) and empty ones
/// on both sides of it and at the end.
std::vector<std::int64_t> with_huge(std::uint64_t count, std::uint64_t huge, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int64_t> o{3};
  for (std::uint64_t s = 0; s < count; ++s) {
    std::uint64_t len = rng() % 5 == 0 ? 0 : rng() % 300;
    if (s == count / 2) len = huge;
    if (s + 1 == count / 2 || s == count / 2 + 1 || s + 2 >= count) len = 0;
    o.push_back(o.back() + std::int64_t(len));
  }
  return o;
}

/// make_input for every element seg reads.
HostArray input_for(DType d, const Segmentation& seg, std::uint64_t seed) {
  return make_input(d, seg.input_elements(), seed);
}

struct Case {
  const char* what;
  Segmentation seg;
};

Segmentation segments(std::vector<std::int64_t> offsets) {
  Segmentation s;
  s.problem = Problem::segments;
  s.offsets = std::move(offsets);
  const std::uint64_t count = s.offsets.size() - 1;
  s.shape = {count, std::uint64_t(s.offsets.back() - s.offsets.front()) / std::max<std::uint64_t>(count, 1)};
  return s;
}

std::vector<Case> cases() {
  return {
      // 256 columns: few stripes, hundreds of row slices a column.
      {"256 columns", column_layout(256, 20011, 256)},
      {"33 columns", column_layout(33, 10003, 33)},
      {"3001 columns of 17 rows", column_layout(3001, 17, 3005)},
      {"skewed offsets", segments(skewed_offsets(4096, 4096 * 128 + 5, 44))},
      {"a segment across many blocks", segments(with_huge(3000, 1 << 20, 5))},
      {"a single huge segment", segments({3, 3 + (std::int64_t(1) << 22) + 7})},
      {"empty segments around a huge one", segments({0, 0, 0, 1 << 21, 1 << 21, 1 << 21})},
      {"empty segments only", segments({7, 7, 7, 7})},
  };
}

/// A few of the ordered finish's configurations of `problem` that `t` admits, spread over the
/// sweep's space (its first, last and two between).
std::vector<Config> ordered_configs(const Target& t, Problem problem) {
  std::vector<Config> valid;
  for (const Variant& v : variants(problem))
    for (const Config& c : space(v))
      if (c.finish == Finish::twopass && !invalid_reason(c, t)) valid.push_back(c);
  if (valid.size() <= 4) return valid;
  const std::size_t n = valid.size();
  return {valid[0], valid[n / 3], valid[2 * n / 3], valid[n - 1]};
}

struct OpDtype {
  Op op;
  DType d;
};
constexpr OpDtype kPairs[] = {
    {Op::argmax, DType::f32},    {Op::var, DType::f32}, {Op::logsumexp, DType::f32},
    {Op::sum, DType::f32},       {Op::argmin, DType::i32}, {Op::std_, DType::f64},
    {Op::argmax, DType::bf16},   {Op::sum, DType::i64},
};

} // namespace

TEST_CASE("ordered finish: columns and offsets of argmax, var, logsumexp and sum match the CPU",
          "[gpu][ordered_finish][segmented]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (const Case& cs : cases()) {
    const Segmentation& seg = cs.seg;
    for (const OpDtype& od : kPairs) {
      Target t = g.target(od.d, od.op);
      t.problem = seg.problem;
      const std::vector<Config> configs = ordered_configs(t, seg.problem);
      INFO(cs.what << " " << name(od.d) << " " << name(od.op));
      REQUIRE(!configs.empty());
      const HostArray data = input_for(od.d, seg, 11 + seg.shape.count);
      // Twice: the workspace holds the first launch's partials when the second starts.
      checked += testing::check_configs(g, configs, t, seg, data, od.op, 2,
                                        [](const SegmentedPlan& p) {
                                          REQUIRE_FALSE(p.fill);
                                          REQUIRE(p.partition_grid == 0);
                                        });
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("ordered finish: a non-commutative user reduction keeps its order through both",
          "[gpu][ordered_finish][user]") {
  Gpu& g = gpu();
  const CUstream s = g.stream.get();
  const Reduction r = first_nonzero_value();
  const std::shared_ptr<const UserOp> u = make_user_op(r);
  REQUIRE(u->ordered());
  std::size_t checked = 0;
  for (const Case& cs : cases()) {
    const Segmentation& seg = cs.seg;
    Target t = g.target(DType::f32, Op::sum);
    t.problem = seg.problem;
    t.user = u.get();
    const std::vector<Config> configs = ordered_configs(t, seg.problem);
    INFO(cs.what);
    REQUIRE(!configs.empty());
    const HostArray data = testing::sparse_input(seg.input_elements(), unsigned(seg.shape.count));
    const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
    const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
    const std::vector<double> want = testing::user_expected(r, data, seg);
    const cuda::Buffer out(std::max<std::size_t>(want.size() * 8, 16));
    Workspace ws;
    for (const Config& c : configs) {
      INFO(key(c));
      const Kernel k = g.loader.load(c, DType::f32, u);
      const SegmentedPlan p = segmented_plan(c, t, seg.shape);
      REQUIRE(p.post);
      ws.reserve(p);
      testing::check_user_launch(k, p, seg, in.get(), offsets.get(), out, ws, want, s);
      checked += want.size();
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("ordered finish: the launches captured in a graph replay right on new data",
          "[gpu][ordered_finish][graphs]") {
  testing::check_captured_cases(
      {
          {"columns_split.b256.u2.v4.g4.twopass", Op::argmax, DType::f32, column_layout(256, 20011, 256)},
          {"columns_split.b512.u1.v2.g8.twopass", Op::var, DType::f32, column_layout(33, 10003, 33)},
          {"segments_flat_carry.b128.u4.v4.g8.twopass", Op::logsumexp, DType::f32,
           segments(with_huge(3000, 1 << 20, 8))},
          {"segments_flat_carry.b256.u2.v4.g32.twopass", Op::argmax, DType::f32,
           segments(skewed_offsets(4096, 4096 * 128, 45))},
      },
      input_for);
}

TEST_CASE("ordered finish: the Reducer's calls through it, eager and captured",
          "[gpu][ordered_finish][graphs][reducer]") {
  if (!testing::graphs_or_skip()) return;
  const cuda::Context ctx(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const testing::TempDir dir;
  const Segmentation skewed = segments(skewed_offsets(3000, 3000 * 200, 46));
  const std::vector<testing::StoredCall> calls = {
      {"columns_split.b256.u2.v4.g4.twopass", Op::argmax, DType::f32, column_layout(256, 20011, 256),
       {256, 20011}},
      {"columns_split.b256.u4.v2.g4.twopass", Op::logsumexp, DType::f32, column_layout(33, 10003, 33),
       {33, 10003}},
      {"segments_flat_carry.b128.u4.v4.g8.twopass", Op::var, DType::f32, skewed, {3000, 200}},
  };
  Reducer r(0, testing::stored_options(dir, info, calls));
  const cuda::Stream stream;
  const CUstream s = stream.get();
  testing::check_reducer_cases(r, info, calls, input_for, stream);
  // A non-commutative user reduction on skewed offsets and on columns: the lookup's answer
  // (sum's, which reorders) gives way to a configuration that keeps the order.
  const Reduction fnz = first_nonzero_value();
  for (const Segmentation& seg : {skewed, column_layout(256, 4099, 256)}) {
    INFO(name(seg.problem));
    const HostArray data = testing::sparse_input(seg.input_elements(), 21);
    const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
    const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
    const cuda::Buffer out(seg.shape.count * 8);
    if (seg.problem == Problem::columns)
      r.reduce_columns(fnz, DType::f32, reinterpret_cast<const void*>(in.get()), seg.shape.length,
                       seg.shape.count, reinterpret_cast<void*>(out.get()), s, seg.stride);
    else
      r.reduce_segments(fnz, DType::f32, reinterpret_cast<const void*>(in.get()),
                        reinterpret_cast<const std::int64_t*>(offsets.get()), seg.shape.count,
                        reinterpret_cast<void*>(out.get()), s);
    std::vector<double> got(seg.shape.count);
    RT_CU(cuMemcpyDtoHAsync(got.data(), out.get(), got.size() * 8, s));
    stream.synchronize();
    std::size_t bad = 0;
    for (std::uint64_t i = 0; i < got.size(); ++i) {
      const std::vector<double> e = testing::elements_of(data, seg, i);
      bad += got[i] != fnz.check(e.data(), e.size());
    }
    CHECK(bad == 0);
  }
}
