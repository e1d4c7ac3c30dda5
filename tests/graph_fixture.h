// What the graph tests share (test_graphs.cpp, test_graphs_segmented.cpp): pinned host memory,
// a captured graph and its instantiation, and whether the driver can capture at all.
#pragma once

#include "kernels/driver.h"

#include <cstddef>

namespace reduce_tune::testing {

/// Pinned host memory for results copied back asynchronously.
struct Pinned {
  void* p = nullptr;
  explicit Pinned(std::size_t bytes) { RT_CU(cuMemHostAlloc(&p, bytes, 0)); }
  ~Pinned() { cuda::driver().cuMemFreeHost(p); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  unsigned char* bytes() const { return static_cast<unsigned char*>(p); }
};

/// A captured graph and its instantiation, destroyed with the scope unless destroy() came first.
struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  void destroy() {
    if (exec) RT_CU(cuGraphExecDestroy(exec));
    if (graph) RT_CU(cuGraphDestroy(graph));
    exec = nullptr, graph = nullptr;
  }
  ~Graph() {
    if (exec) cuda::driver().cuGraphExecDestroy(exec);
    if (graph) cuda::driver().cuGraphDestroy(graph);
  }
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
};

inline const char* mode_name(CUstreamCaptureMode m) {
  return m == CU_STREAM_CAPTURE_MODE_GLOBAL         ? "global"
         : m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread-local"
                                                    : "relaxed";
}

inline bool graphs_supported() {
  const cuda::Driver& d = cuda::driver();
  return d.cuStreamBeginCapture && d.cuUserObjectCreate && d.cuGraphInstantiateWithFlags &&
         d.cuThreadExchangeStreamCaptureMode;
}

} // namespace reduce_tune::testing
