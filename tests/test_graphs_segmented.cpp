// GPU tests of the segmented calls inside CUDA graphs: reduce_rows (an atomic split mapping),
// reduce_columns (atomic row slices) and reduce_segments (the binned mapping, whose two kernels
// keep a self-resetting work list) captured in global and thread-local mode, replayed 300 times on
// changing data while another thread makes the same calls eagerly; one graph outlives its reducer.
// test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "tuner/reference.h"
#include "reduce_tune/reducer.h"
#include "tests/fixtures.h"
#include "tests/graph_fixture.h"
#include "tests/store_fixture.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace reduce_tune;
using testing::Graph;
using testing::Pinned;

namespace {

struct SegCase {
  Problem problem;
  DType dtype;
  Op op;
  Segmentation seg;
  const char* key; ///< what the store makes the lookup choose
  Shape stored;    ///< the stored row's shape
};

std::vector<SegCase> cases() {
  std::vector<SegCase> v;
  SegCase r{Problem::rows, DType::f32, Op::max, {}, "rows_split.b512.u2.v4.g2.atomic", {8, 1 << 20}};
  r.seg.problem = Problem::rows;
  r.seg.shape = {8, (1u << 20) + 3};
  r.seg.stride = (1u << 20) + 5;
  v.push_back(r);
  SegCase c{Problem::columns, DType::i32, Op::sum, {}, "columns_split.b256.u2.v2.g4.atomic",
            {64, 1 << 16}};
  c.seg.problem = Problem::columns;
  c.seg.shape = {64, (1u << 16) + 9}; // 64 columns of 2^16 + 9 rows
  c.seg.stride = 64;
  v.push_back(c);
  SegCase s{Problem::segments, DType::f32, Op::min, {}, "segments_binned.b256.w8.u1.v2.g4.atomic",
            {4096, 1024}};
  s.seg.problem = Problem::segments;
  s.seg.offsets = skewed_offsets(4096, 1u << 22, 11);
  s.seg.shape = {4096, (1u << 22) / 4096};
  v.push_back(s);
  return v;
}

void write_store(const std::string& path, const cuda::DeviceInfo& info,
                 const std::vector<SegCase>& cs) {
  std::vector<db::Measurement> rows;
  for (const SegCase& c : cs)
    rows.push_back(reduce_tune::testing::stored_row(c.key, c.dtype, c.op, 1, c.problem, c.stored));
  reduce_tune::testing::write_gpu_store(path, info, rows);
}

/// The call of a case on `in`, results to `out`.
void call(Reducer& r, const SegCase& c, CUdeviceptr in, CUdeviceptr offsets, CUdeviceptr out,
          CUstream s) {
  const void* d_in = reinterpret_cast<const void*>(in);
  void* d_out = reinterpret_cast<void*>(out);
  const Segmentation& g = c.seg;
  if (c.problem == Problem::rows)
    r.reduce_rows(c.dtype, c.op, d_in, g.shape.count, g.shape.length, d_out, s, g.stride);
  else if (c.problem == Problem::columns)
    r.reduce_columns(c.dtype, c.op, d_in, g.shape.length, g.shape.count, d_out, s, g.stride);
  else
    r.reduce_segments(c.dtype, c.op, d_in, reinterpret_cast<const std::int64_t*>(offsets),
                      g.shape.count, d_out, s);
}

constexpr int kVersions = 3;

struct CaseData {
  std::vector<cuda::Buffer> versions;
  cuda::Buffer live, offsets, out;
  std::vector<std::vector<Reference>> refs; // [version][result]
  std::size_t out_bytes = 0, in_bytes = 0;
};

std::string verify(const SegCase& c, const Choice& ch, const cuda::DeviceInfo& info,
                   const std::vector<Reference>& refs, const unsigned char* bytes) {
  HostArray got;
  got.dtype = c.dtype;
  got.n = c.seg.shape.count;
  got.bytes.assign(bytes, bytes + got.n * size_of(c.dtype));
  Target t{c.dtype, c.op, info.cc(), info.max_threads_per_block, info.sm_count, false, c.problem};
  const Check k = check_segmented(refs, got, c.seg, c.op, [&](std::uint64_t len) {
    return segment_depth(ch.config, t, c.seg.shape, len);
  });
  return k.ok ? "" : std::string(name(c.problem)) + ": " + k.expected + ", got " + k.observed;
}

} // namespace

TEST_CASE("graphs: captured rows, columns and segments calls replay right beside eager ones",
          "[gpu][graphs]") {
  if (!testing::graphs_supported()) {
    WARN("skipped: the driver lacks stream capture or user objects");
    return;
  }
  const cuda::Context ctx(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const testing::TempDir dir;
  const std::vector<SegCase> cs = cases();
  write_store(dir.file("tuning.db"), info, cs);
  Options o;
  o.store_path = dir.file("tuning.db");

  std::vector<CaseData> data(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const SegCase& c = cs[i];
    CaseData& d = data[i];
    d.in_bytes = c.seg.input_elements() * size_of(c.dtype);
    d.out_bytes = c.seg.shape.count * size_of(c.dtype);
    for (int v = 0; v < kVersions; ++v) {
      const HostArray a = make_input(c.dtype, c.seg.input_elements(), 500 + 10 * i + v);
      d.versions.emplace_back(d.in_bytes);
      reduce_tune::cuda::upload_sync(d.versions.back().get(), a.bytes.data(), d.in_bytes);
      d.refs.push_back(segmented_reference(a, c.seg, c.op));
    }
    d.live = cuda::Buffer(d.in_bytes);
    d.out = cuda::Buffer(d.out_bytes);
    d.offsets = cuda::Buffer(std::max<std::size_t>(c.seg.offsets.size() * 8, 8));
    if (!c.seg.offsets.empty())
      reduce_tune::cuda::upload_sync(d.offsets.get(), c.seg.offsets.data(), c.seg.offsets.size() * 8);
  }

  constexpr int kReplays = 300;
  for (const CUstreamCaptureMode mode :
       {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL}) {
    INFO("capture mode " << testing::mode_name(mode));
    auto r = std::make_unique<Reducer>(0, o);
    std::vector<Choice> choice;
    for (const SegCase& c : cs) {
      choice.push_back(r->config_for(c.dtype, c.op, c.problem,
                                     c.problem == Problem::segments ? Shape{c.seg.shape.count, 0}
                                                                    : c.seg.shape));
      REQUIRE(key(choice.back().config) == c.key);
    }
    const cuda::Stream stream;

    // Another thread makes the same calls eagerly, through the capture and the replays.
    std::atomic<bool> stop{false};
    std::atomic<int> eager_calls{0};
    std::mutex mu;
    std::vector<std::string> failures;
    std::thread eager([&] {
      try {
        ctx.make_current();
        CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED; // the test's own copies
        RT_CU(cuThreadExchangeStreamCaptureMode(&relaxed));
        const cuda::Stream s;
        std::vector<cuda::Buffer> outs;
        for (const CaseData& d : data) outs.emplace_back(d.out_bytes);
        std::vector<unsigned char> h;
        for (int i = 0; !stop; ++i) {
          const std::size_t k = std::size_t(i) % cs.size();
          const int v = (i / 3) % kVersions;
          call(*r, cs[k], data[k].versions[v].get(), data[k].offsets.get(), outs[k].get(), s.get());
          h.resize(data[k].out_bytes);
          RT_CU(cuMemcpyDtoHAsync(h.data(), outs[k].get(), h.size(), s.get()));
          s.synchronize();
          const std::string bad = verify(cs[k], choice[k], info, data[k].refs[v], h.data());
          ++eager_calls;
          if (!bad.empty()) {
            std::lock_guard lock(mu);
            failures.push_back("eager " + bad);
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        failures.push_back(std::string("eager thread: ") + e.what());
      }
    });

    Graph graph;
    RT_CU(cuStreamBeginCapture(stream.get(), mode));
    for (std::size_t i = 0; i < cs.size(); ++i)
      call(*r, cs[i], data[i].live.get(), data[i].offsets.get(), data[i].out.get(), stream.get());
    RT_CU(cuStreamEndCapture(stream.get(), &graph.graph));
    REQUIRE(graph.graph != nullptr);
    RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));

    std::size_t row = 0;
    for (const CaseData& d : data) row += d.out_bytes;
    Pinned results(kReplays * row);
    const auto replay = [&](int i, unsigned char* dst) {
      for (std::size_t k = 0; k < cs.size(); ++k)
        RT_CU(cuMemcpyDtoDAsync(data[k].live.get(), data[k].versions[i % kVersions].get(),
                                data[k].in_bytes, stream.get()));
      RT_CU(cuGraphLaunch(graph.exec, stream.get()));
      for (std::size_t k = 0; k < cs.size(); ++k) {
        RT_CU(cuMemcpyDtoHAsync(dst, data[k].out.get(), data[k].out_bytes, stream.get()));
        dst += data[k].out_bytes;
      }
    };
    const auto verify_row = [&](int i, const unsigned char* src, const char* when) {
      for (std::size_t k = 0; k < cs.size(); ++k) {
        const std::string bad = verify(cs[k], choice[k], info, data[k].refs[i % kVersions], src);
        src += data[k].out_bytes;
        if (!bad.empty() && failures.size() < 20) {
          std::lock_guard lock(mu);
          failures.push_back(std::string(when) + " " + std::to_string(i) + ": " + bad);
        }
      }
    };
    for (int i = 0; i < kReplays; ++i) replay(i, results.bytes() + i * row);
    stream.synchronize();
    stop = true;
    eager.join();
    for (int i = 0; i < kReplays; ++i) verify_row(i, results.bytes() + i * row, "replay");
    CHECK(eager_calls > 10);

    if (mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) {
      r.reset(); // the graph outlives its reducer
      for (int i = 0; i < kVersions; ++i) {
        replay(i, results.bytes());
        stream.synchronize();
        verify_row(i, results.bytes(), "replay after the reducer");
      }
    }
    graph.destroy();
    for (const auto& f : failures) FAIL_CHECK(f);
    CHECK(failures.empty());
  }
}
