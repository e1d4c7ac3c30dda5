// GPU tests of the cluster mapping of the columns problem (columns_cluster: a thread-block cluster
// of c blocks per stripe of columns, their partials combined in rank order through distributed
// shared memory, sm_90+): sum (float32, int32, bf16), argmax, var and logsumexp on columns tall,
// square, short and narrow against the CPU reference; a non-commutative user reduction against its
// own CPU evaluation; and the Reducer's call that a store points at it, eager, warm and from a
// captured CUDA graph. Below sm_90 each test says so and passes nothing; test_gpu_main.cpp skips
// them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "kernels/user_op.h"
#include "tests/config_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/segmented_gpu_fixture.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"

#include <cstring>
#include <random>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using testing::Gpu;
using testing::gpu;
using testing::upload;

namespace {

/// Whether this GPU has thread-block clusters; where it has none the test says why it passes
/// nothing.
bool clusters_or_skip(const cuda::DeviceInfo& info) {
  if (info.cc() >= 90 && cuda::programmatic_launch()) return true;
  WARN("skipped: thread-block clusters need sm_90 and a CUDA 12 driver (sm_" << info.cc() << " here)");
  return false;
}

Segmentation columns(std::uint64_t cols, std::uint64_t rows) {
  Segmentation s;
  s.problem = Problem::columns;
  s.shape = {cols, rows};
  s.stride = cols;
  return s;
}

HostArray input_for(DType d, const Segmentation& seg, std::uint64_t seed) {
  return make_input(d, seg.input_elements(), seed);
}

/// 65536 x 256 (the struct ops' slow point before), 4096 x 4096, 17 rows (fewer than a block's
/// threads down them), 3 columns of 100000 rows (one stripe).
const Segmentation kShapes[] = {columns(256, 65536), columns(4096, 4096), columns(1000, 17),
                                columns(3, 100000)};

/// Cluster sizes, block sizes, unrolls and vector widths spread over the sweep's space, both load
/// policies.
constexpr const char* kConfigs[] = {
    "columns_cluster.b256.c2.u1.v1.direct",
    "columns_cluster_streaming.b256.c4.u4.v4.direct",
    "columns_cluster.b512.c8.u2.v2.direct",
};

struct OpDtype {
  Op op;
  DType d;
};
constexpr OpDtype kPairs[] = {{Op::sum, DType::f32},    {Op::sum, DType::i32},
                              {Op::sum, DType::bf16},   {Op::argmax, DType::f32},
                              {Op::var, DType::f32},    {Op::logsumexp, DType::f32}};

/// float32 elements, three in four of them zero, so that the first non-zero one of a column is
/// rarely its first.
HostArray sparse_input(std::uint64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  HostArray a;
  a.dtype = DType::f32;
  a.n = n;
  a.bytes.resize(n * 4);
  for (std::uint64_t i = 0; i < n; ++i) {
    const float f = rng() % 4 == 0 ? u(rng) : 0.0f;
    std::memcpy(&a.bytes[i * 4], &f, 4);
  }
  return a;
}

} // namespace

TEST_CASE("cluster: columns of sum, argmax, var and logsumexp match the CPU",
          "[gpu][cluster][segmented]") {
  Gpu& g = gpu();
  if (!clusters_or_skip(g.info)) return;
  const CUstream s = g.stream.get();
  std::size_t checked = 0;
  for (const Segmentation& seg : kShapes)
    for (const OpDtype& od : kPairs) {
      INFO(seg.shape.count << " columns of " << seg.shape.length << " rows, " << name(od.d) << " "
                           << name(od.op));
      Target t = g.target(od.d, od.op);
      t.problem = Problem::columns;
      const HostArray data = input_for(od.d, seg, 17 + seg.shape.count);
      const std::vector<Reference> refs = segmented_reference(data, seg, od.op);
      const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
      HostArray got = testing::result_array(od.op, od.d, seg.shape.count);
      const cuda::Buffer out(got.bytes.size() + testing::kPoisonedTail);
      Workspace ws;
      for (const char* k : kConfigs) {
        const Config c = cfg(k);
        INFO(k);
        REQUIRE_FALSE(invalid_reason(c, t));
        const Kernel kernel = g.loader.load(c, od.d, od.op);
        const SegmentedPlan p = segmented_plan(c, t, seg.shape);
        REQUIRE(p.cluster == unsigned(c.cluster));
        REQUIRE_FALSE(p.post);
        ws.reserve(p);
        // Twice, each checked, and nothing written past the last result.
        testing::check_launches(kernel, c, t, seg, p, in.get(), 0, out, ws, got, refs, od.op, s, 2);
        checked += seg.shape.count;
      }
    }
  CHECK(checked > 0);
}

TEST_CASE("cluster: a non-commutative user reduction keeps the rows' order across the blocks",
          "[gpu][cluster][user]") {
  Gpu& g = gpu();
  if (!clusters_or_skip(g.info)) return;
  const CUstream s = g.stream.get();
  const Reduction r = testing::first_nonzero_value();
  const std::shared_ptr<const UserOp> u = make_user_op(r);
  REQUIRE(u->ordered());
  std::size_t checked = 0;
  for (const Segmentation& seg : kShapes) {
    INFO(seg.shape.count << " columns of " << seg.shape.length << " rows");
    Target t = g.target(DType::f32, Op::sum);
    t.problem = Problem::columns;
    t.user = u.get();
    const HostArray data = sparse_input(seg.input_elements(), unsigned(seg.shape.count));
    const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
    std::vector<double> want(seg.shape.count);
    for (std::uint64_t col = 0; col < seg.shape.count; ++col) {
      std::vector<double> e(seg.shape.length);
      for (std::uint64_t row = 0; row < e.size(); ++row) {
        float f;
        std::memcpy(&f, &data.bytes[(row * seg.stride + col) * 4], 4);
        e[row] = f;
      }
      want[col] = r.check(e.data(), e.size());
    }
    std::vector<double> got(seg.shape.count);
    const cuda::Buffer out(got.size() * 8);
    Workspace ws;
    for (const char* k : kConfigs) {
      const Config c = cfg(k);
      INFO(k);
      REQUIRE_FALSE(invalid_reason(c, t));
      const Kernel kernel = g.loader.load(c, DType::f32, u);
      const SegmentedPlan p = segmented_plan(c, t, seg.shape);
      ws.reserve(p);
      RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.size() * 8, s));
      enqueue(kernel, p, testing::segmented_args(seg, in.get(), 0, out.get()), ws, s);
      RT_CU(cuMemcpyDtoHAsync(got.data(), out.get(), got.size() * 8, s));
      RT_CU(cuStreamSynchronize(s));
      std::size_t bad = 0, first_bad = 0;
      for (std::uint64_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i] && bad++ == 0) first_bad = i;
      INFO("column " << first_bad << ": got " << (bad ? got[first_bad] : 0.0) << ", expected "
                     << (bad ? want[first_bad] : 0.0));
      CHECK(bad == 0);
      checked += got.size();
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("cluster: the Reducer's calls through it, eager, warm and captured in a graph",
          "[gpu][cluster][graphs][reducer]") {
  if (!testing::graphs_or_skip()) return;
  const cuda::Context ctx(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  if (!clusters_or_skip(info)) return;
  const testing::TempDir dir;
  const std::vector<testing::StoredCall> calls = {
      {"columns_cluster_streaming.b256.c4.u4.v4.direct", Op::argmax, DType::f32, columns(256, 65536),
       {256, 65536}},
      {"columns_cluster.b512.c8.u2.v2.direct", Op::var, DType::f32, columns(4096, 4096), {4096, 4096}},
      {"columns_cluster.b256.c2.u1.v1.direct", Op::sum, DType::i32, columns(3, 100000), {3, 100000}},
  };
  Reducer r(0, testing::stored_options(dir, info, calls));
  const cuda::Stream stream;
  testing::check_reducer_cases(r, info, calls, input_for, stream);
}
