// What the GPU tests of the segmented finishes share (the atomic one with a post pass and the
// ordered one): inputs uploaded, a result array sized for an op, launches checked against the CPU
// reference with nothing written past the last result, one launch captured into a CUDA graph and
// replayed on new data, and the Reducer's call, through a store that points it at a configuration,
// run eagerly and from a captured graph; every run checked against the CPU.
#pragma once

#include <catch2/catch.hpp>

#include "tests/config_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/graph_fixture.h"
#include "tests/store_fixture.h"
#include "reduce_tune/reduction.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

namespace reduce_tune::testing {

/// `bytes` of host memory copied into a new device buffer (16 bytes at least, so that an empty
/// input still has a valid address).
inline cuda::Buffer upload(const void* p, std::size_t bytes) {
  cuda::Buffer b(std::max<std::size_t>(bytes, 16));
  if (bytes) reduce_tune::cuda::upload_sync(b.get(), p, bytes);
  return b;
}

/// The input of a case: elements of `d` for every result of `seg`, from `seed`.
using InputOf = HostArray (*)(DType d, const Segmentation& seg, std::uint64_t seed);

/// Whether the driver can capture a stream; where it cannot, the test says why it skips.
inline bool graphs_or_skip() {
  if (graphs_supported()) return true;
  WARN("skipped: the driver lacks stream capture");
  return false;
}

/// Room on the host for `count` results of `op` on `d`.
inline HostArray result_array(Op op, DType d, std::uint64_t count) {
  HostArray got;
  got.dtype = result_dtype(op, d);
  got.n = count;
  got.bytes.resize(got.n * size_of(got.dtype));
  return got;
}

/// The bytes past the results that check_launches expects untouched.
constexpr std::size_t kPoisonedTail = 16;

/// `launches` launches of k (configuration c, plan p, workspace ws reused between them) over seg
/// into `out`, which holds got's results and kPoisonedTail bytes more, all poisoned before the
/// first launch: each launch's results checked against refs with c's bound, and the bytes past
/// them checked untouched (a post pass writes no result past the last).
inline void check_launches(const Kernel& k, const Config& c, const Target& t,
                           const Segmentation& seg, const SegmentedPlan& p, CUdeviceptr in,
                           CUdeviceptr offsets, const cuda::Buffer& out, Workspace& ws,
                           HostArray& got, const std::vector<Reference>& refs, Op op, CUstream s,
                           int launches) {
  RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.bytes.size() + kPoisonedTail, s));
  const SegmentedArgs a = segmented_args(seg, in, offsets, out.get());
  for (int rep = 0; rep < launches; ++rep) {
    const Check chk = launch_checked(k, c, t, seg, p, a, ws, got, refs, op, s);
    INFO(key(c) << " launch " << rep << ": got " << chk.observed << ", expected " << chk.expected);
    CHECK(chk.ok);
  }
  unsigned char past[kPoisonedTail];
  RT_CU(cuMemcpyDtoH(past, out.get() + got.bytes.size(), sizeof(past)));
  for (unsigned char b : past) CHECK(b == 0xA5);
}

/// Each of `configs` (for `op` on data's dtype, target t; each with a post pass or the columns'
/// last-block finish) loaded and launched `launches` times over seg on `data` as check_launches
/// does, one workspace reused across them; `expect` checks each plan beyond that. Returns the results checked.
inline std::size_t check_configs(Gpu& g, const std::vector<Config>& configs, const Target& t,
                                 const Segmentation& seg, const HostArray& data, Op op,
                                 int launches,
                                 const std::function<void(const SegmentedPlan&)>& expect = {}) {
  const CUstream s = g.stream.get();
  const std::vector<Reference> refs = segmented_reference(data, seg, op);
  const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
  const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
  HostArray got = result_array(op, data.dtype, seg.shape.count);
  const cuda::Buffer out(got.bytes.size() + kPoisonedTail);
  Workspace ws;
  std::size_t checked = 0;
  for (const Config& c : configs) {
    const Kernel k = g.loader.load(c, data.dtype, op);
    const SegmentedPlan p = segmented_plan(c, t, seg.shape);
    // A finish that combines partials: a post pass, or the columns' last block (its counters).
    REQUIRE((p.post || p.ticket_bytes != 0));
    if (p.post) REQUIRE(k.post != nullptr);
    if (expect) expect(p);
    ws.reserve(p);
    check_launches(k, c, t, seg, p, in.get(), offsets.get(), out, ws, got, refs, op, s, launches);
    checked += seg.shape.count;
  }
  return checked;
}

/// A columns layout, the configuration that reduces it and what the case shows.
struct ColumnsCase {
  const char* what;
  Segmentation seg;
  const char* key;
};

/// Each case's configuration, for each op of `ops` and dtype of `dtypes` on the GPU's target, over
/// input(d, seg, seed + its column count), launched twice with one workspace as check_configs does:
/// the columns' atomic finish with its post pass (a fill, then results from a workspace).
inline void check_atomic_post_columns(const std::vector<ColumnsCase>& cases, std::initializer_list<Op> ops,
                                      std::initializer_list<DType> dtypes, InputOf input, std::uint64_t seed) {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (const ColumnsCase& cs : cases)
    for (Op op : ops)
      for (DType d : dtypes) {
        Target t = g.target(d, op);
        t.problem = Problem::columns;
        const Config c = cfg(cs.key);
        INFO(cs.what << " " << cs.key << " " << name(d) << " " << name(op));
        REQUIRE_FALSE(invalid_reason(c, t));
        const HostArray data = input(d, cs.seg, seed + cs.seg.shape.count);
        checked += check_configs(g, {c}, t, cs.seg, data, op, 2, [](const SegmentedPlan& p) {
          REQUIRE(p.fill);
          REQUIRE(p.post);
          REQUIRE(p.post_bytes > 0);
        });
      }
  CHECK(checked > 0);
}

/// Configuration c's kernel for `op` on seg (target t) launched once into a CUDA graph captured
/// on `stream` (its workspace reserved before: nothing may be allocated during a capture), then
/// the graph replayed on `first`, `second` and `first` again (copied into the input it reads; the
/// results poisoned first), each replay's results checked against the CPU reference of that input
/// with c's bound.
inline void check_graph_replays(Gpu& g, const Config& c, const Target& t, const Segmentation& seg,
                                Op op, const HostArray& first, const HostArray& second,
                                const cuda::Stream& stream) {
  const CUstream s = stream.get();
  Kernel k = g.loader.load(c, first.dtype, op);
  // Programmatic launches are captured from CUDA 12.3 on (as the Reducer does).
  if (g.info.driver_version < 12030) k.programmatic = false;
  const SegmentedPlan p = segmented_plan(c, t, seg.shape);
  REQUIRE((p.post || p.ticket_bytes != 0)); // as check_configs
  Workspace ws;
  ws.reserve(p, s); // before the capture: what it allocates and zeroes is not the graph's
  stream.synchronize();
  const cuda::Buffer in = upload(first.bytes.data(), first.bytes.size());
  const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
  HostArray got = result_array(op, first.dtype, seg.shape.count);
  const cuda::Buffer out(got.bytes.size());
  const SegmentedArgs a = segmented_args(seg, in.get(), offsets.get(), out.get());
  Graph graph;
  RT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  enqueue(k, p, a, ws, s); // no host wait, no other stream: capturable
  RT_CU(cuStreamEndCapture(s, &graph.graph));
  REQUIRE(graph.graph != nullptr);
  RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  for (const HostArray* data : {&first, &second, &first}) {
    RT_CU(cuMemcpyHtoDAsync(in.get(), data->bytes.data(), data->bytes.size(), s));
    RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.bytes.size(), s));
    RT_CU(cuGraphLaunch(graph.exec, s));
    RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), out.get(), got.bytes.size(), s));
    stream.synchronize();
    const std::vector<Reference> refs = segmented_reference(*data, seg, op);
    const Check chk = check_segmented(refs, got, seg, op, [&](std::uint64_t len) {
      return segment_depth(c, t, seg.shape, len);
    });
    INFO("got " << chk.observed << ", expected " << chk.expected);
    CHECK(chk.ok);
  }
}

/// A launch captured into a graph: the configuration (key), op, dtype and segments.
struct CapturedCase {
  const char* key;
  Op op;
  DType d;
  Segmentation seg;
};

/// check_graph_replays for each case, on inputs of seeds 3 and 4; each key must be valid here.
inline void check_captured_cases(std::initializer_list<CapturedCase> cases, InputOf input) {
  if (!graphs_or_skip()) return;
  Gpu& g = gpu();
  const cuda::Stream stream;
  for (const CapturedCase& cc : cases) {
    const Config c = cfg(cc.key);
    Target t = g.target(cc.d, cc.op);
    t.problem = cc.seg.problem;
    INFO(cc.key << " " << name(cc.d) << " " << name(cc.op));
    REQUIRE_FALSE(invalid_reason(c, t));
    check_graph_replays(g, c, t, cc.seg, cc.op, input(cc.d, cc.seg, 3), input(cc.d, cc.seg, 4),
                        stream);
  }
}

/// A Reducer call whose configuration a store holds: the key, op, dtype, segments, and the shape
/// the store's row was measured at.
struct StoredCall {
  const char* key;
  Op op;
  DType d;
  Segmentation seg;
  Shape stored;
};

/// Options of a Reducer whose store (in `dir`) holds one row for each call, measured on the GPU
/// `info` describes.
inline Options stored_options(const TempDir& dir, const cuda::DeviceInfo& info,
                              const std::vector<StoredCall>& calls) {
  std::vector<db::Measurement> rows;
  for (const StoredCall& c : calls)
    rows.push_back(stored_row(c.key, c.d, c.op, 1, c.seg.problem, c.stored));
  write_gpu_store(dir.file("tuning.db"), info, rows);
  Options o;
  o.store_path = dir.file("tuning.db");
  return o;
}

/// The Reducer's call for seg (rows, columns or offsets) of `op` on `data` (uploaded here): the
/// configuration it looks up (for offsets, by the extent of the input) must be the one of key
/// `expected`; the call then runs eagerly twice (the first looks up and loads, the second is warm)
/// and from a captured graph replayed three times with the results poisoned first, and after each
/// run the results are checked against the CPU reference with that configuration's bound.
inline void check_reducer_calls(Reducer& r, const cuda::DeviceInfo& info, const char* expected,
                                Op op, const HostArray& data, const Segmentation& seg,
                                const cuda::Stream& stream) {
  const CUstream s = stream.get();
  const DType d = data.dtype;
  const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
  const cuda::Buffer offsets = upload(seg.offsets.data(), seg.offsets.size() * 8);
  const void* d_in = reinterpret_cast<const void*>(in.get());
  const Choice ch = seg.problem == Problem::segments
                        ? r.segments_config_for(d, op, d_in, seg.shape.count)
                        : r.config_for(d, op, seg.problem, seg.shape);
  REQUIRE(key(ch.config) == expected);
  HostArray got = result_array(op, d, seg.shape.count);
  const cuda::Buffer out(got.bytes.size());
  void* d_out = reinterpret_cast<void*>(out.get());
  auto call = [&] {
    if (seg.problem == Problem::rows)
      r.reduce_rows(d, op, d_in, seg.shape.count, seg.shape.length, d_out, s, seg.stride);
    else if (seg.problem == Problem::columns)
      r.reduce_columns(d, op, d_in, seg.shape.length, seg.shape.count, d_out, s, seg.stride);
    else
      r.reduce_segments(d, op, d_in, reinterpret_cast<const std::int64_t*>(offsets.get()),
                        seg.shape.count, d_out, s);
  };
  const Target t{d, op, info.cc(), info.max_threads_per_block, info.sm_count, false, seg.problem};
  const std::vector<Reference> refs = segmented_reference(data, seg, op);
  auto verify = [&] {
    RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), out.get(), got.bytes.size(), s));
    stream.synchronize();
    const Check chk = check_segmented(refs, got, seg, op, [&](std::uint64_t len) {
      return segment_depth(ch.config, t, seg.shape, len);
    });
    INFO("got " << chk.observed << ", expected " << chk.expected);
    CHECK(chk.ok);
  };
  RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.bytes.size(), s));
  call(); // eager
  verify();
  call(); // warm
  verify();
  Graph graph;
  RT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  call();
  RT_CU(cuStreamEndCapture(s, &graph.graph));
  REQUIRE(graph.graph != nullptr);
  RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  for (int i = 0; i < 3; ++i) {
    RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.bytes.size(), s));
    RT_CU(cuGraphLaunch(graph.exec, s));
    verify();
  }
}

/// A columns problem: `cols` columns of `rows` rows, the rows `stride` elements apart.
inline Segmentation column_layout(std::uint64_t cols, std::uint64_t rows, std::uint64_t stride) {
  Segmentation s;
  s.problem = Problem::columns;
  s.shape = {cols, rows};
  s.stride = stride;
  return s;
}

/// check_reducer_calls for each call, on the input of seed 9.
inline void check_reducer_cases(Reducer& r, const cuda::DeviceInfo& info,
                                const std::vector<StoredCall>& calls, InputOf input,
                                const cuda::Stream& stream) {
  for (const StoredCall& c : calls) {
    INFO(c.key << " " << name(c.d) << " " << name(c.op));
    check_reducer_calls(r, info, c.key, c.op, input(c.d, c.seg, 9), c.seg, stream);
  }
}

/// check_reducer_cases through a Reducer of GPU 0 whose store (a temporary one) holds a row for
/// each call; the driver must capture streams (the test says why it skips where it cannot).
inline void check_stored_calls(const std::vector<StoredCall>& calls, InputOf input) {
  if (!graphs_or_skip()) return;
  const cuda::Context ctx(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const TempDir dir;
  Reducer r(0, stored_options(dir, info, calls));
  const cuda::Stream stream;
  check_reducer_cases(r, info, calls, input, stream);
}

/// float32 elements, three in four of them zero, so that the first non-zero one of a result is
/// rarely its first (the non-commutative user reduction's input).
inline HostArray sparse_input(std::uint64_t n, unsigned seed) {
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

/// Result s's elements of float32 input `a`, in order, as doubles.
inline std::vector<double> elements_of(const HostArray& a, const Segmentation& seg, std::uint64_t s) {
  std::vector<double> out(seg.length(s));
  for (std::uint64_t k = 0; k < out.size(); ++k) {
    const std::uint64_t i = seg.problem == Problem::columns ? k * seg.stride + s
                                                            : std::uint64_t(seg.offsets[s]) + k;
    float f;
    std::memcpy(&f, &a.bytes[i * 4], 4);
    out[k] = f;
  }
  return out;
}

/// User reduction r's CPU evaluation (Reduction::check) of every result of seg over `a`.
inline std::vector<double> user_expected(const Reduction& r, const HostArray& a, const Segmentation& seg) {
  std::vector<double> want(seg.shape.count);
  for (std::uint64_t i = 0; i < want.size(); ++i) {
    const std::vector<double> e = elements_of(a, seg, i);
    want[i] = r.check(e.data(), e.size());
  }
  return want;
}

/// One launch of k (plan p, workspace ws) of a float64-result user reduction over seg into `out`
/// (poisoned first), read back on stream s and compared with `want` exactly.
inline void check_user_launch(const Kernel& k, const SegmentedPlan& p, const Segmentation& seg,
                              CUdeviceptr in, CUdeviceptr offsets, const cuda::Buffer& out,
                              Workspace& ws, const std::vector<double>& want, CUstream s) {
  std::vector<double> got(want.size());
  RT_CU(cuMemsetD8Async(out.get(), 0xA5, got.size() * 8, s));
  enqueue(k, p, segmented_args(seg, in, offsets, out.get()), ws, s);
  if (!got.empty()) RT_CU(cuMemcpyDtoHAsync(got.data(), out.get(), got.size() * 8, s));
  RT_CU(cuStreamSynchronize(s));
  std::size_t bad = 0, first_bad = 0;
  for (std::uint64_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ == 0) first_bad = i;
  INFO("result " << first_bad << ": got " << (bad ? got[first_bad] : 0.0) << ", expected "
                 << (bad ? want[first_bad] : 0.0));
  CHECK(bad == 0);
}

} // namespace reduce_tune::testing
