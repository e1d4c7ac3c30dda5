// What the GPU tests of the segmented finishes share (the atomic one with a post pass and the
// ordered one): inputs uploaded, a result array sized for an op, launches checked against the CPU
// reference with nothing written past the last result, one launch captured into a CUDA graph and
// replayed on new data, and a Reducer call run eagerly and from a captured graph, each run checked.
#pragma once

#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"
#include "tests/graph_fixture.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <vector>

namespace reduce_tune::testing {

/// `bytes` of host memory copied into a new device buffer (16 bytes at least, so that an empty
/// input still has a valid address).
inline cuda::Buffer upload(const void* p, std::size_t bytes) {
  cuda::Buffer b(std::max<std::size_t>(bytes, 16));
  if (bytes) RT_CU(cuMemcpyHtoD(b.get(), p, bytes));
  return b;
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

/// One launch of k (configuration c, plan p; ws reserved before, as nothing may be allocated
/// during a capture) over seg captured into a graph on `stream`, then the graph replayed on each
/// of `inputs` in turn (copied into the input `a` reads; the results poisoned first), each
/// replay's results checked against the CPU reference of that input with c's bound.
inline void check_graph_replays(const Kernel& k, const Config& c, const Target& t,
                                const Segmentation& seg, const SegmentedPlan& p, Workspace& ws,
                                const SegmentedArgs& a, Op op,
                                std::initializer_list<const HostArray*> inputs,
                                const cuda::Stream& stream) {
  REQUIRE(inputs.size() > 0);
  const CUstream s = stream.get();
  HostArray got = result_array(op, (*inputs.begin())->dtype, seg.shape.count);
  Graph graph;
  RT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  enqueue(k, p, a, ws, s); // no host wait, no other stream: capturable
  RT_CU(cuStreamEndCapture(s, &graph.graph));
  REQUIRE(graph.graph != nullptr);
  RT_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  for (const HostArray* data : inputs) {
    RT_CU(cuMemcpyHtoDAsync(a.in, data->bytes.data(), data->bytes.size(), s));
    RT_CU(cuMemsetD8Async(a.out, 0xA5, got.bytes.size(), s));
    RT_CU(cuGraphLaunch(graph.exec, s));
    RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), a.out, got.bytes.size(), s));
    stream.synchronize();
    const std::vector<Reference> refs = segmented_reference(*data, seg, op);
    const Check chk = check_segmented(refs, got, seg, op, [&](std::uint64_t len) {
      return segment_depth(c, t, seg.shape, len);
    });
    INFO("got " << chk.observed << ", expected " << chk.expected);
    CHECK(chk.ok);
  }
}

/// A Reducer's segmented call (`call`, writing seg's results of `op` on `data` to `out` on
/// `stream`) run eagerly twice (the first looks up and loads, the second is warm), then captured
/// into a graph that is replayed three times with the results poisoned first; after each run the
/// results are checked against the CPU reference with the bound of `config`, the configuration
/// the Reducer chose.
inline void check_eager_and_captured(const std::function<void()>& call, const HostArray& data,
                                     const Segmentation& seg, Op op, const Config& config,
                                     const Target& t, const cuda::Buffer& out,
                                     const cuda::Stream& stream) {
  const CUstream s = stream.get();
  HostArray got = result_array(op, data.dtype, seg.shape.count);
  const std::vector<Reference> refs = segmented_reference(data, seg, op);
  auto verify = [&] {
    RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), out.get(), got.bytes.size(), s));
    stream.synchronize();
    const Check chk = check_segmented(refs, got, seg, op, [&](std::uint64_t len) {
      return segment_depth(config, t, seg.shape, len);
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

} // namespace reduce_tune::testing
