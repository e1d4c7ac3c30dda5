// GPU tests of the segmented atomic finish with a post pass (kernels/catalogue.h,
// atomic_post_pass): mean, norm2, any and all (and bf16/f16 sums) through every atomic mapping of
// rows, columns and offsets segments against the CPU reference; the same launches captured into a
// CUDA graph and replayed on new data; and the Reducer's calls that a store points at those
// mappings, eager and captured. test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/ops.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/config_fixture.h"
#include "tests/graph_fixture.h"
#include "tests/segmented_gpu_fixture.h"
#include "tests/store_fixture.h"

#include <cstring>
#include <set>
#include <vector>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;
using testing::cfg;
using testing::upload;

namespace {

struct Case {
  Problem p;
  Shape shape;
  std::uint64_t stride;
};

// Columns tall and short (the split mappings' row slices), wide and odd; rows long enough for
// several blocks a row; offsets with empty and very long segments.
constexpr Case kCases[] = {
    {Problem::columns, {256, 4099}, 256},  {Problem::columns, {33, 10003}, 33},
    {Problem::columns, {3001, 17}, 3005},  {Problem::rows, {7, 70001}, 70003},
    {Problem::rows, {333, 777}, 780},      {Problem::segments, {3000, 0}, 0},
};

Segmentation segmentation(const Case& cs) {
  Segmentation seg;
  seg.problem = cs.p;
  seg.shape = cs.shape;
  seg.stride = cs.stride;
  if (cs.p == Problem::segments) {
    const std::uint64_t total = cs.shape.count * 200 + 11;
    seg.offsets = skewed_offsets(cs.shape.count, total, 41 + cs.shape.count);
    seg.shape.length = total / cs.shape.count;
  }
  return seg;
}

/// make_input with result s's elements all zero where s % 3 == 0 and one of them zero where
/// s % 3 == 1, so that any and all give both answers.
HostArray input_for(DType d, const Segmentation& seg, std::uint64_t seed) {
  HostArray a = make_input(d, seg.input_elements(), seed);
  const std::size_t es = size_of(d);
  auto zero = [&](std::uint64_t i) { std::memset(a.bytes.data() + i * es, 0, es); };
  for (std::uint64_t s = 0; s < seg.shape.count; ++s) {
    const std::uint64_t len = seg.length(s);
    if (s % 3 == 2 || len == 0) continue;
    for (std::uint64_t j = 0; j < (s % 3 == 0 ? len : 1); ++j) {
      const std::uint64_t k = s % 3 == 0 ? j : (s * 7) % len;
      if (seg.problem == Problem::columns) zero(k * seg.stride + s);
      else if (seg.problem == Problem::rows) zero(s * seg.stride + k);
      else zero(std::uint64_t(seg.offsets[s]) + k);
    }
  }
  return a;
}

/// One valid configuration of each atomic mapping of `problem` that takes the post pass for t.
std::vector<Config> post_configs(const Target& t, Problem problem) {
  std::vector<Config> out;
  for (const Variant& v : variants(problem)) {
    for (const Config& c : space(v)) {
      if (c.finish != Finish::atomic || invalid_reason(c, t)) continue;
      out.push_back(c);
      break;
    }
  }
  return out;
}

struct OpDtype {
  Op op;
  DType d;
};
constexpr OpDtype kPairs[] = {
    {Op::mean, DType::f32},  {Op::norm2, DType::f32}, {Op::any, DType::f32}, {Op::all, DType::f32},
    {Op::mean, DType::i32},  {Op::any, DType::i64},   {Op::all, DType::u32}, {Op::mean, DType::bf16},
    {Op::norm2, DType::f16}, {Op::sum, DType::bf16},  {Op::sum, DType::f16}, {Op::mean, DType::f64},
};

} // namespace

TEST_CASE("post pass: every atomic mapping of mean, norm2, any, all matches the CPU",
          "[gpu][post_pass][segmented]") {
  Gpu& g = gpu();
  const CUstream s = g.stream.get();
  std::size_t checked = 0;
  for (const OpDtype& od : kPairs)
    for (const Case& cs : kCases) {
      Target t = g.target(od.d, od.op);
      t.problem = cs.p;
      REQUIRE(atomic_post_pass(od.op, od.d, cs.p));
      const std::vector<Config> configs = post_configs(t, cs.p);
      REQUIRE(!configs.empty());
      std::vector<CompileJob> jobs;
      for (const Config& c : configs) jobs.push_back({c, od.d, od.op});
      for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
      const Segmentation seg = segmentation(cs);
      const HostArray data = input_for(od.d, seg, 7 + cs.shape.count);
      const std::vector<Reference> refs = segmented_reference(data, seg, od.op);
      const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
      const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
      HostArray got = testing::result_array(od.op, od.d, seg.shape.count);
      const cuda::Buffer out(got.bytes.size() + testing::kPoisonedTail);
      Workspace ws;
      INFO(name(od.d) << " " << name(od.op) << " " << name(cs.p) << " " << seg.shape.count << " x "
                      << seg.shape.length);
      for (const Config& c : configs) {
        const Kernel k = g.loader.load(c, od.d, od.op);
        const SegmentedPlan p = segmented_plan(c, t, seg.shape);
        REQUIRE(p.post);
        REQUIRE(k.post != nullptr);
        ws.reserve(p);
        testing::check_launches(k, c, t, seg, p, in.get(), offsets.get(), out, ws, got, refs, od.op,
                                s, 1);
        checked += seg.shape.count;
      }
    }
  CHECK(checked > 0);
}

TEST_CASE("post pass: the launches captured in a graph replay right on new data",
          "[gpu][post_pass][graphs]") {
  if (!testing::graphs_supported()) {
    WARN("skipped: the driver lacks stream capture");
    return;
  }
  Gpu& g = gpu();
  const cuda::Stream stream;
  const CUstream s = stream.get();
  struct Captured {
    const char* key;
    Op op;
    DType d;
    Case cs;
  };
  // In the results (float32 mean), in a workspace (any's 32-bit accumulators), offsets whose counts
  // the post pass reads, and the binned mapping's two kernels before it.
  const Captured cases[] = {
      {"columns_split.b256.u2.v4.g4.atomic", Op::mean, DType::f32, {Problem::columns, {256, 4099}, 256}},
      {"columns_split.b256.u2.v2.g8.atomic", Op::any, DType::f32, {Problem::columns, {33, 10003}, 33}},
      {"rows_split.b256.u2.v4.g4.atomic", Op::norm2, DType::f32, {Problem::rows, {7, 70001}, 70003}},
      {"segments_binned.b256.w8.u1.v2.g4.atomic", Op::all, DType::i32, {Problem::segments, {3000, 0}, 0}},
      {"segments_flat.b128.u4.v4.g16.atomic", Op::mean, DType::i32, {Problem::segments, {3000, 0}, 0}},
  };
  for (const Captured& cc : cases) {
    const Config c = cfg(cc.key);
    Target t = g.target(cc.d, cc.op);
    t.problem = cc.cs.p;
    INFO(cc.key << " " << name(cc.d) << " " << name(cc.op));
    REQUIRE_FALSE(invalid_reason(c, t));
    const Segmentation seg = segmentation(cc.cs);
    Kernel k = g.loader.load(c, cc.d, cc.op);
    // Programmatic launches are captured from CUDA 12.3 on (as the Reducer does).
    if (g.info.driver_version < 12030) k.programmatic = false;
    const SegmentedPlan p = segmented_plan(c, t, seg.shape);
    REQUIRE(p.post);
    Workspace ws;
    ws.reserve(p, s); // before the capture: what it allocates and zeroes is not the graph's
    stream.synchronize();
    const HostArray first = input_for(cc.d, seg, 3), second = input_for(cc.d, seg, 4);
    const cuda::Buffer in = upload(first.bytes.data(), first.bytes.size());
    const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
    const cuda::Buffer out(testing::result_array(cc.op, cc.d, seg.shape.count).bytes.size());
    const SegmentedArgs a = testing::segmented_args(seg, in.get(), offsets.get(), out.get());
    testing::check_graph_replays(k, c, t, seg, p, ws, a, cc.op, {&first, &second, &first}, stream);
  }
}

TEST_CASE("post pass: the Reducer's calls through it, eager and captured",
          "[gpu][post_pass][graphs][reducer]") {
  if (!testing::graphs_supported()) {
    WARN("skipped: the driver lacks stream capture");
    return;
  }
  const cuda::Context ctx(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const testing::TempDir dir;
  struct Call {
    const char* key;
    Op op;
    DType d;
    Case cs;
    Shape stored;
  };
  const Call calls[] = {
      {"columns_split.b256.u2.v4.g4.atomic", Op::mean, DType::f32,
       {Problem::columns, {256, 4099}, 256}, {256, 4099}},
      {"columns_split.b256.u2.v2.g4.atomic", Op::any, DType::f32,
       {Problem::columns, {33, 10003}, 33}, {33, 10003}},
      {"rows_split.b256.u2.v4.g4.atomic", Op::norm2, DType::f32,
       {Problem::rows, {7, 70001}, 70001}, {7, 70001}},
      {"segments_split.b256.u2.v4.g4.atomic", Op::all, DType::f32,
       {Problem::segments, {3000, 0}, 0}, {3000, 200}},
  };
  std::vector<db::Measurement> rows;
  for (const Call& c : calls)
    rows.push_back(testing::stored_row(c.key, c.d, c.op, 1, c.cs.p, c.stored));
  testing::write_gpu_store(dir.file("tuning.db"), info, rows);
  Options o;
  o.store_path = dir.file("tuning.db");
  Reducer r(0, o);
  const cuda::Stream stream;
  const CUstream s = stream.get();
  for (const Call& c : calls) {
    INFO(c.key << " " << name(c.d) << " " << name(c.op));
    const Segmentation seg = segmentation(c.cs);
    const HostArray data = input_for(c.d, seg, 9);
    const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
    const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
    // What the call itself looks up (for offsets: by the extent of the small input).
    const Choice ch = c.cs.p == Problem::segments
                          ? r.segments_config_for(c.d, c.op, reinterpret_cast<const void*>(in.get()),
                                                  seg.shape.count)
                          : r.config_for(c.d, c.op, c.cs.p, seg.shape);
    REQUIRE(key(ch.config) == c.key);
    const cuda::Buffer out(testing::result_array(c.op, c.d, seg.shape.count).bytes.size());
    auto call = [&] {
      const void* d_in = reinterpret_cast<const void*>(in.get());
      void* d_out = reinterpret_cast<void*>(out.get());
      if (c.cs.p == Problem::rows)
        r.reduce_rows(c.d, c.op, d_in, seg.shape.count, seg.shape.length, d_out, s, seg.stride);
      else if (c.cs.p == Problem::columns)
        r.reduce_columns(c.d, c.op, d_in, seg.shape.length, seg.shape.count, d_out, s, seg.stride);
      else
        r.reduce_segments(c.d, c.op, d_in, reinterpret_cast<const std::int64_t*>(offsets.get()),
                          seg.shape.count, d_out, s);
    };
    const Target t{c.d, c.op, info.cc(), info.max_threads_per_block, info.sm_count, false, c.cs.p};
    testing::check_eager_and_captured(call, data, seg, c.op, ch.config, t, out, stream);
  }
}
