// GPU tests of the Reducer inside CUDA graphs: reduce_async captured in each capture mode, with a
// stored configuration of every device-side finish (last-block, first-block, two-pass with
// programmatic launch, atomic with its result set first), replayed 1000 times on changing data
// while other threads make eager calls on their own streams; graphs destroyed before and after
// the Reducer (and replayed after it); aborted and invalidated captures; a global-mode capture
// while another thread's eager call compiles and allocates. test_gpu_main.cpp skips them (exit 4)
// where there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "tuner/reference.h"
#include "reduce_tune/reducer.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/store_fixture.h"
#include "tests/graph_fixture.h"

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace reduce_tune;
using cuda::driver;
using testing::graphs_supported;
using testing::Graph;
using testing::mode_name;
using testing::Pinned;

namespace {

using Gpu = testing::GpuContext;

/// One captured call, and the configuration the store makes the lookup choose for it.
struct Case {
  DType dtype;
  Op op;
  std::uint64_t n;
  const char* key;
};
const Case kCases[] = {
    {DType::f32, Op::sum, (1u << 12) + 3, "vectorized.b256.u2.v2.g4.shfl.lastblock"},
    {DType::f32, Op::sum, (1u << 16) + 5, "vectorized.b256.u2.v2.g4.shfl.firstblock"},
    {DType::f32, Op::sum, (1u << 20) + 7, "vectorized.b512.u2.v2.g4.shfl.twopass"},
    {DType::f32, Op::sum, (1u << 22) + 1, "multi_seq.b256.g4.shfl.atomic"},
    {DType::i32, Op::max, (1u << 12) + 3, "vectorized.b256.u2.v2.g4.shfl.lastblock"},
    {DType::i32, Op::sum, (1u << 16) + 5, "vectorized.b256.u2.v2.g4.shfl.firstblock"},
    {DType::f64, Op::min, (1u << 20) + 7, "vectorized.b512.u2.v2.g4.shfl.twopass"},
    {DType::i64, Op::max, (1u << 22) + 1, "multi_seq.b256.g4.shfl.atomic"},
};
constexpr std::size_t kCaseCount = std::size(kCases);
constexpr int kVersions = 4; ///< input versions per case: replay i reads version i % kVersions

/// A store whose only row for each case's (dtype, op) at its bucket start is the case's key.
void write_store(const std::string& path, const cuda::DeviceInfo& info) {
  std::vector<db::Measurement> rows;
  for (const Case& c : kCases)
    rows.push_back(reduce_tune::testing::stored_row(c.key, c.dtype, c.op, 1.0, Problem::array,
                                                    {1, std::uint64_t(1) << (std::bit_width(c.n) - 1)}));
  reduce_tune::testing::write_gpu_store(path, info, rows);
}

/// The inputs of every case in kVersions versions (device buffers the graph never reads), the
/// buffers the graph reads, and the references.
struct Data {
  std::vector<std::vector<cuda::Buffer>> versions; // [case][version]
  std::vector<cuda::Buffer> live;                  // [case]: what the captured calls read
  std::vector<std::vector<Reference>> refs;        // [case][version]
  Data() {
    for (std::size_t c = 0; c < kCaseCount; ++c) {
      const Case& k = kCases[c];
      versions.emplace_back();
      refs.emplace_back();
      for (int v = 0; v < kVersions; ++v) {
        HostArray a = make_input(k.dtype, k.n, 1000 * c + v);
        // make_input's spikes make every version's float min and max alike: a unique extreme.
        if (is_float(k.dtype) && k.op != Op::sum)
          visit(k.dtype, [&](auto t) {
            using T = decltype(t);
            a.data<T>()[k.n / 3 + 7 * v] = T(k.op == Op::min ? -2048 - v : 2048 + v);
          });
        versions[c].emplace_back(a.bytes.size());
        reduce_tune::cuda::upload_sync(versions[c][v].get(), a.bytes.data(), a.bytes.size());
        refs[c].push_back(reference(a, k.op));
      }
      live.emplace_back(k.n * size_of(k.dtype));
      for (int v = 1; v < kVersions; ++v) // a replay that read stale data would be caught
        REQUIRE(refs[c][v].value != refs[c][v - 1].value);
    }
  }
};

/// `got` against a reference, with the float bound of the configuration used; empty when right.
std::string wrong(const Gpu& g, const Choice& ch, const Case& k, const Reference& ref, Scalar got) {
  const Check c = check(ref, got, k.op, summation_depth(ch.config, g.target(k.dtype, k.op), k.n));
  if (c.ok) return "";
  return key(ch.config) + " " + std::string(name(k.dtype)) + " " + std::string(name(k.op)) +
         " n=" + std::to_string(k.n) + ": got " + c.observed + ", expected " + c.expected;
}

Scalar scalar_at(const unsigned char* p, DType d) {
  Scalar s;
  s.dtype = d;
  std::memcpy(&s.bits, p, size_of(d));
  return s;
}

/// The synchronous typed call.
Scalar reduce_sync(Reducer& r, DType d, Op op, CUdeviceptr p, std::uint64_t n, CUstream s) {
  return visit(d, [&](auto zero) {
    using T = decltype(zero);
    return Scalar::of(r.reduce<T>(op, reinterpret_cast<const T*>(p), n, s));
  });
}

/// Threads making eager calls (synchronous and asynchronous, on their own streams) over every
/// case's inputs until stopped, each result checked.
class EagerCallers {
public:
  EagerCallers(const Gpu& g, Reducer& r, const Data& data, int threads) {
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([&, t] {
        try {
          g.ctx.make_current(); // for the test's own stream and copies
          // The test's own copies and waits are not what is under test: relaxed, so that they
          // never disturb a global-mode capture of the main thread (the library sets it itself).
          CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
          RT_CU(cuThreadExchangeStreamCaptureMode(&mode));
          const cuda::Stream s;
          const cuda::Buffer out(8);
          for (unsigned i = 0; !stop_; ++i) {
            const std::size_t c = (i + t) % kCaseCount;
            const Case& k = kCases[c];
            const int v = int(i / kCaseCount + t) % kVersions;
            const CUdeviceptr in = data.versions[c][v].get();
            std::string bad;
            if (i % 2) {
              bad = wrong(g, r.config_for(k.dtype, k.op, k.n), k, data.refs[c][v],
                          reduce_sync(r, k.dtype, k.op, in, k.n, s.get()));
            } else {
              r.reduce_async(k.dtype, k.op, reinterpret_cast<const void*>(in), k.n,
                             reinterpret_cast<void*>(out.get()), s.get());
              unsigned char h[8];
              RT_CU(cuMemcpyDtoHAsync(h, out.get(), 8, s.get()));
              s.synchronize();
              bad = wrong(g, r.async_config_for(k.dtype, k.op, k.n), k, data.refs[c][v],
                          scalar_at(h, k.dtype));
            }
            ++calls_;
            if (!bad.empty()) fail("eager call: " + bad);
          }
        } catch (const std::exception& e) {
          fail(std::string("eager caller: ") + e.what());
        }
      });
  }
  ~EagerCallers() { stop(); }
  void stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  std::size_t calls() const { return calls_; }
  std::vector<std::string> failures() {
    std::lock_guard lock(mu_);
    return failures_;
  }

private:
  void fail(const std::string& f) {
    std::lock_guard lock(mu_);
    if (failures_.size() < 20) failures_.push_back(f);
  }
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> calls_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

} // namespace

TEST_CASE("graphs: captured reduce_async replays 1000 times right in every capture mode, beside "
          "eager calls from other threads",
          "[gpu][graphs]") {
  if (!graphs_supported()) {
    WARN("skipped: the driver lacks stream capture or user objects");
    return;
  }
  const Gpu g;
  const testing::TempDir dir;
  write_store(dir.file("tuning.db"), g.info);
  Options o;
  o.store_path = dir.file("tuning.db");
  const Data data;
  constexpr int kReplays = 1000;
  for (const CUstreamCaptureMode mode : {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                         CU_STREAM_CAPTURE_MODE_RELAXED}) {
    INFO("capture mode " << mode_name(mode));
    auto r = std::make_unique<Reducer>(0, o);
    for (const Case& k : kCases) { // the store decides the finish of each captured call
      INFO(name(k.dtype) << " " << name(k.op) << " n=" << k.n);
      REQUIRE(key(r->async_config_for(k.dtype, k.op, k.n).config) == k.key);
    }
    const cuda::Stream cs, other;
    const cuda::Buffer out(kCaseCount * 8 + 8);
    const CUdeviceptr out_empty = out.get() + kCaseCount * 8; // an n = 0 call's result
    EagerCallers eager(g, *r, data, 3);                          // through capture and replays

    // The capture: the reducer's first calls at these sizes compile and load inside it.
    Graph graph;
    RT_CU(cuStreamBeginCapture(cs.get(), mode));
    for (std::size_t c = 0; c < kCaseCount; ++c)
      r->reduce_async(kCases[c].dtype, kCases[c].op,
                      reinterpret_cast<const void*>(data.live[c].get()), kCases[c].n,
                      reinterpret_cast<void*>(out.get() + c * 8), cs.get());
    r->reduce_async(DType::f32, Op::max, nullptr, 0, reinterpret_cast<void*>(out_empty), cs.get());
    RT_CU(cuStreamEndCapture(cs.get(), &graph.graph));
    REQUIRE(graph.graph != nullptr);
    RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));

    // The reported bug: after a capture, an ordinary call on another stream threw.
    {
      const Case& k = kCases[0];
      const std::string bad =
          wrong(g, r->config_for(k.dtype, k.op, k.n), k, data.refs[0][1],
                reduce_sync(*r, k.dtype, k.op, data.versions[0][1].get(), k.n, other.get()));
      CHECK(bad.empty());
    }

    // Replays on changing data; every 100th, an eager call queued between them on the same stream.
    const std::size_t row = kCaseCount * 8;
    Pinned results(kReplays * row), between(kReplays / 100 * 8);
    for (int i = 0; i < kReplays; ++i) {
      const int v = i % kVersions;
      for (std::size_t c = 0; c < kCaseCount; ++c)
        RT_CU(cuMemcpyDtoDAsync(data.live[c].get(), data.versions[c][v].get(),
                                kCases[c].n * size_of(kCases[c].dtype), cs.get()));
      RT_CU(cuGraphLaunch(graph.exec, cs.get()));
      RT_CU(cuMemcpyDtoHAsync(results.bytes() + i * row, out.get(), row, cs.get()));
      if (i % 100 == 99) {
        const std::size_t c = std::size_t(i / 100) % kCaseCount;
        r->reduce_async(kCases[c].dtype, kCases[c].op,
                        reinterpret_cast<const void*>(data.versions[c][(v + 1) % kVersions].get()),
                        kCases[c].n, reinterpret_cast<void*>(out_empty), cs.get());
        RT_CU(cuMemcpyDtoHAsync(between.bytes() + i / 100 * 8, out_empty, 8, cs.get()));
        r->reduce_async(DType::f32, Op::max, nullptr, 0, reinterpret_cast<void*>(out_empty),
                        cs.get()); // what the graph's n = 0 node leaves there
      }
    }
    cs.synchronize();
    std::vector<std::string> failures;
    for (int i = 0; i < kReplays; ++i)
      for (std::size_t c = 0; c < kCaseCount; ++c) {
        const Case& k = kCases[c];
        const std::string bad = wrong(g, r->async_config_for(k.dtype, k.op, k.n), k,
                                      data.refs[c][i % kVersions],
                                      scalar_at(results.bytes() + i * row + c * 8, k.dtype));
        if (!bad.empty() && failures.size() < 20)
          failures.push_back("replay " + std::to_string(i) + ": " + bad);
      }
    for (int j = 0; j < kReplays / 100; ++j) {
      const std::size_t c = std::size_t(j) % kCaseCount;
      const Case& k = kCases[c];
      const std::string bad = wrong(g, r->async_config_for(k.dtype, k.op, k.n), k,
                                    data.refs[c][(100 * j + 99 + 1) % kVersions],
                                    scalar_at(between.bytes() + j * 8, k.dtype));
      if (!bad.empty()) failures.push_back("eager call between replays: " + bad);
    }
    float empty = 0;
    RT_CU(cuMemcpyDtoH(&empty, out_empty, 4));
    CHECK(empty == -std::numeric_limits<float>::infinity());
    eager.stop();
    for (const auto& f : eager.failures()) failures.push_back(f);
    for (const auto& f : failures) FAIL_CHECK(f);
    CHECK(failures.empty());
    CHECK(eager.calls() > 100);

    if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
      graph.destroy(); // before the reducer
      // Its workspaces come back to the reducer (asynchronously); calls go on right meanwhile.
      for (std::size_t c = 0; c < kCaseCount; ++c) {
        const Case& k = kCases[c];
        const std::string bad =
            wrong(g, r->config_for(k.dtype, k.op, k.n), k, data.refs[c][2],
                  reduce_sync(*r, k.dtype, k.op, data.versions[c][2].get(), k.n, other.get()));
        CHECK(bad.empty());
      }
      r.reset();
    } else {
      r.reset(); // the graph outlives the reducer, and still replays right
      for (int i = 0; i < 3; ++i) {
        for (std::size_t c = 0; c < kCaseCount; ++c)
          RT_CU(cuMemcpyDtoDAsync(data.live[c].get(), data.versions[c][i].get(),
                                  kCases[c].n * size_of(kCases[c].dtype), cs.get()));
        RT_CU(cuGraphLaunch(graph.exec, cs.get()));
        RT_CU(cuMemcpyDtoHAsync(results.bytes(), out.get(), row, cs.get()));
        cs.synchronize();
        for (std::size_t c = 0; c < kCaseCount; ++c) {
          const Case& k = kCases[c];
          const Check ck = check(data.refs[c][i], scalar_at(results.bytes() + c * 8, k.dtype),
                                 k.op, k.n); // depth n: a loose bound, the choice is gone
          INFO("replay after the reducer, case " << c << ": got " << ck.observed);
          CHECK(ck.ok);
        }
      }
      graph.destroy();
    }
  }
}

TEST_CASE("graphs: aborted and invalidated captures leave the reducer usable", "[gpu][graphs]") {
  if (!graphs_supported()) {
    WARN("skipped: the driver lacks stream capture or user objects");
    return;
  }
  const Gpu g;
  const testing::TempDir dir;
  write_store(dir.file("tuning.db"), g.info);
  Options o;
  o.store_path = dir.file("tuning.db");
  Reducer r(0, o);
  const Data data;
  const cuda::Stream cs, other;
  const cuda::Buffer out(8);
  const auto eager_all_right = [&](const char* when) {
    for (std::size_t c = 0; c < kCaseCount; ++c) {
      const Case& k = kCases[c];
      INFO(when);
      for (CUstream s : {other.get(), cs.get()}) {
        CHECK(wrong(g, r.config_for(k.dtype, k.op, k.n), k, data.refs[c][3],
                    reduce_sync(r, k.dtype, k.op, data.versions[c][3].get(), k.n, s))
                  .empty());
        r.reduce_async(k.dtype, k.op, reinterpret_cast<const void*>(data.versions[c][0].get()),
                       k.n, reinterpret_cast<void*>(out.get()), s);
        unsigned char h[8];
        RT_CU(cuMemcpyDtoHAsync(h, out.get(), 8, s));
        RT_CU(cuStreamSynchronize(s));
        CHECK(wrong(g, r.async_config_for(k.dtype, k.op, k.n), k, data.refs[c][0],
                    scalar_at(h, k.dtype))
                  .empty());
      }
    }
  };
  const auto capture_all = [&] {
    for (std::size_t c = 0; c < kCaseCount; ++c)
      r.reduce_async(kCases[c].dtype, kCases[c].op,
                     reinterpret_cast<const void*>(data.live[c].get()), kCases[c].n,
                     reinterpret_cast<void*>(out.get()), cs.get());
  };

  // Captured, ended, and destroyed without ever running: its workspaces come back unused.
  for (int round = 0; round < 3; ++round) {
    CUgraph graph = nullptr;
    RT_CU(cuStreamBeginCapture(cs.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
    capture_all();
    RT_CU(cuStreamEndCapture(cs.get(), &graph));
    RT_CU(cuGraphDestroy(graph));
    eager_all_right("after a capture that never ran");
  }

  // A synchronous call on the capturing stream is refused before it enqueues anything: the
  // capture stays valid and its graph runs right.
  {
    Graph graph;
    RT_CU(cuStreamBeginCapture(cs.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    const Case& k = kCases[2];
    r.reduce_async(k.dtype, k.op, reinterpret_cast<const void*>(data.live[2].get()), k.n,
                   reinterpret_cast<void*>(out.get()), cs.get());
    CHECK_THROWS_AS(reduce_sync(r, k.dtype, k.op, data.live[2].get(), k.n, cs.get()),
                    InvalidArgument);
    RT_CU(cuStreamEndCapture(cs.get(), &graph.graph));
    REQUIRE(graph.graph != nullptr);
    RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
    RT_CU(cuMemcpyDtoDAsync(data.live[2].get(), data.versions[2][1].get(), k.n * size_of(k.dtype),
                            cs.get()));
    RT_CU(cuGraphLaunch(graph.exec, cs.get()));
    unsigned char h[8];
    RT_CU(cuMemcpyDtoHAsync(h, out.get(), 8, cs.get()));
    RT_CU(cuStreamSynchronize(cs.get()));
    CHECK(wrong(g, r.async_config_for(k.dtype, k.op, k.n), k, data.refs[2][1], scalar_at(h, k.dtype))
              .empty());
  }

  // Invalidated half-way by an illegal call on the capturing stream: further calls on it throw
  // CudaError, the capture ends without a graph, and the reducer serves every stream after it.
  {
    RT_CU(cuStreamBeginCapture(cs.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
    capture_all();
    {
      CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED; // the test's illegal call only
      RT_CU(cuThreadExchangeStreamCaptureMode(&mode));
      CHECK(driver().cuStreamSynchronize(cs.get()) != CUDA_SUCCESS);
      RT_CU(cuThreadExchangeStreamCaptureMode(&mode));
    }
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    RT_CU(cuStreamIsCapturing(cs.get(), &status));
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
      const Case& k = kCases[1];
      CHECK_THROWS_AS(r.reduce_async(k.dtype, k.op,
                                     reinterpret_cast<const void*>(data.live[1].get()), k.n,
                                     reinterpret_cast<void*>(out.get()), cs.get()),
                      cuda::CudaError);
    } else {
      WARN("the illegal call left the capture valid (status " << int(status) << ")");
    }
    CUgraph graph = nullptr;
    const CUresult end = driver().cuStreamEndCapture(cs.get(), &graph);
    if (graph) RT_CU(cuGraphDestroy(graph));
    CHECK((status != CU_STREAM_CAPTURE_STATUS_INVALIDATED || end != CUDA_SUCCESS));
    eager_all_right("after an invalidated capture");
  }
}

TEST_CASE("graphs: another thread's eager calls, compiling and allocating, leave a global-mode "
          "capture valid",
          "[gpu][graphs]") {
  if (!graphs_supported()) {
    WARN("skipped: the driver lacks stream capture or user objects");
    return;
  }
  const Gpu g;
  const testing::TempDir dir;
  Options o;
  o.store_path = dir.file("absent.db"); // the built-in configuration at every size
  Reducer r(0, o);
  const cuda::Stream cs, bs;
  // The eager thread's size is used first while the capture is under way (compile, load,
  // workspace allocation); its input is made before the capture.
  const std::uint64_t n_captured = 100003, n_eager = (1u << 21) + 11;
  const HostArray a = make_input(DType::f32, n_captured, 5), b = make_input(DType::i64, n_eager, 6);
  const cuda::Buffer in_a(a.bytes.size()), in_b(b.bytes.size()), out(16);
  reduce_tune::cuda::upload_sync(in_a.get(), a.bytes.data(), a.bytes.size());
  reduce_tune::cuda::upload_sync(in_b.get(), b.bytes.data(), b.bytes.size());

  Graph graph;
  RT_CU(cuStreamBeginCapture(cs.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
  r.reduce_async(DType::f32, Op::min, reinterpret_cast<const void*>(in_a.get()), n_captured,
                 reinterpret_cast<void*>(out.get()), cs.get());
  std::int64_t eager_sum = 0, eager_max = 0;
  std::string error;
  std::thread t([&] { // a thread in the default (global) capture mode, with no context current
    try {
      const auto* p = reinterpret_cast<const std::int64_t*>(in_b.get());
      eager_sum = r.sum(p, n_eager, bs.get());
      eager_max = r.max(p, n_eager, bs.get());
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  t.join();
  r.reduce_async(DType::f32, Op::max, reinterpret_cast<const void*>(in_a.get()), n_captured,
                 reinterpret_cast<void*>(out.get() + 4), cs.get());
  RT_CU(cuStreamEndCapture(cs.get(), &graph.graph));
  REQUIRE(error.empty());
  CHECK(Scalar::of(eager_sum) == reference(b, Op::sum).value);
  CHECK(Scalar::of(eager_max) == reference(b, Op::max).value);
  REQUIRE(graph.graph != nullptr);
  RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  RT_CU(cuGraphLaunch(graph.exec, cs.get()));
  RT_CU(cuStreamSynchronize(cs.get()));
  float got[2];
  RT_CU(cuMemcpyDtoH(got, out.get(), 8));
  CHECK(Scalar::of(got[0]) == reference(a, Op::min).value);
  CHECK(Scalar::of(got[1]) == reference(a, Op::max).value);
}

TEST_CASE("graphs: calls on memory allocated during the capture (stream-ordered), and a host "
          "pointer still refused outside one",
          "[gpu][graphs]") {
  if (!graphs_supported() || !driver().cuMemAllocAsync || !driver().cuMemFreeAsync) {
    WARN("skipped: the driver lacks stream capture, user objects or stream-ordered allocation");
    return;
  }
  const Gpu g;
  const testing::TempDir dir;
  Options o;
  o.store_path = dir.file("absent.db");
  Reducer r(0, o);
  const cuda::Stream cs;
  const std::uint64_t rows = 700, cols = 300, n = rows * cols;
  const HostArray a = make_input(DType::f32, n, 11);
  const cuda::Buffer in(a.bytes.size()), out(8);
  reduce_tune::cuda::upload_sync(in.get(), a.bytes.data(), a.bytes.size());
  const auto* in_p = reinterpret_cast<const void*>(in.get());
  // Warm: compiled and loaded before the capture, and the same calls made eagerly on these sizes.
  {
    const cuda::Buffer partial(rows * 4);
    r.reduce_rows(DType::f32, Op::max, in_p, rows, cols, reinterpret_cast<void*>(partial.get()),
                  cs.get());
    r.reduce_async(DType::f32, Op::max, reinterpret_cast<const void*>(partial.get()), rows,
                   reinterpret_cast<void*>(out.get()), cs.get());
    RT_CU(cuStreamSynchronize(cs.get()));
  }
  Graph graph;
  RT_CU(cuStreamBeginCapture(cs.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
  // The row maxima into memory of the graph, then their maximum into more of it, copied out:
  // neither pointer is known to cuPointerGetAttributes while the capture is under way.
  CUdeviceptr partial = 0, result = 0;
  RT_CU(cuMemAllocAsync(&partial, rows * 4, cs.get()));
  RT_CU(cuMemAllocAsync(&result, 4, cs.get()));
  r.reduce_rows(DType::f32, Op::max, in_p, rows, cols, reinterpret_cast<void*>(partial), cs.get());
  r.reduce_async(DType::f32, Op::max, reinterpret_cast<const void*>(partial), rows,
                 reinterpret_cast<void*>(result), cs.get());
  RT_CU(cuMemcpyDtoDAsync(out.get(), result, 4, cs.get()));
  RT_CU(cuMemFreeAsync(partial, cs.get()));
  RT_CU(cuMemFreeAsync(result, cs.get()));
  RT_CU(cuStreamEndCapture(cs.get(), &graph.graph));
  REQUIRE(graph.graph != nullptr);
  RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    RT_CU(cuMemsetD32Async(out.get(), 0, 1, cs.get()));
    RT_CU(cuGraphLaunch(graph.exec, cs.get()));
    RT_CU(cuStreamSynchronize(cs.get()));
    float got = 0;
    RT_CU(cuMemcpyDtoH(&got, out.get(), 4));
    CHECK(Scalar::of(got) == reference(a, Op::max).value);
  }
  // Outside a capture, memory CUDA does not know is refused as before, for either pointer.
  std::vector<float> host(rows);
  CHECK_THROWS_WITH(r.reduce_async(DType::f32, Op::max, host.data(), rows,
                                   reinterpret_cast<void*>(out.get()), cs.get()),
                    Catch::Contains("is not memory CUDA knows"));
  CHECK_THROWS_WITH(r.reduce_rows(DType::f32, Op::max, in_p, rows, cols, host.data(), cs.get()),
                    Catch::Contains("is not memory CUDA knows"));
}
