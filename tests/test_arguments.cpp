// Tests of the call path's rules that need no GPU (runtime/arguments.cpp, runtime/warm.cpp): what
// a call accepts of the driver's answer about a pointer, inside and outside a stream capture; the
// allocations a thread remembers as checked; the warm calls' table; and which plans need a
// workspace.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "runtime/arguments.h"
#include "runtime/warm.h"

#include <string>
#include <thread>

using namespace reduce_tune;
using namespace reduce_tune::detail;

namespace {

constexpr CUdeviceptr kBase = 0x7f0000000000ull;

PointerFacts device_memory(int gpu, CUdeviceptr start = kBase, std::size_t size = 4096) {
  PointerFacts f;
  f.type = CU_MEMORYTYPE_DEVICE;
  f.device = gpu;
  f.start = start;
  f.size = size;
  return f;
}

/// judge_pointer's message, or "" where it accepts.
std::string refusal(CUdeviceptr p, std::uint64_t count, bool capturing, const PointerFacts& f,
                    int gpu = 0) {
  try {
    judge_pointer("d_in", p, count, DType::f32, gpu, capturing, f);
    return "";
  } catch (const InvalidArgument& e) {
    return e.what();
  }
}

} // namespace

TEST_CASE("pointers: memory CUDA does not know is refused, except on a capturing stream",
          "[arguments]") {
  const PointerFacts unknown; // what cuPointerGetAttributes answers for a host pointer
  CHECK_THAT(refusal(kBase, 10, false, unknown),
             Catch::Contains("is not memory CUDA knows (a host pointer?)"));
  // During a capture, a stream-ordered allocation of the capture is unknown until the graph runs.
  CHECK(refusal(kBase, 10, true, unknown).empty());
  CHECK_FALSE(judge_pointer("d_in", kBase, 10, DType::f32, 0, true, unknown).has_value());
}

TEST_CASE("pointers: what the driver knows is judged alike inside and outside a capture",
          "[arguments]") {
  for (const bool capturing : {false, true}) {
    INFO("capturing " << capturing);
    PointerFacts pinned;
    pinned.type = CU_MEMORYTYPE_HOST;
    CHECK_THAT(refusal(kBase, 1, capturing, pinned),
               Catch::Contains("is host memory (page-locked)"));
    CHECK_THAT(refusal(kBase, 1, capturing, device_memory(1)),
               Catch::Contains("is memory of GPU 1; this reducer runs on GPU 0"));
    // Managed memory: any device, either memory type.
    PointerFacts managed = device_memory(1);
    managed.managed = true;
    managed.type = CU_MEMORYTYPE_HOST;
    CHECK(refusal(kBase, 1, capturing, managed).empty());
    // The extent: 4096 bytes from kBase hold 1024 floats; 1000 from 100 floats in.
    CHECK(judge_pointer("d_in", kBase, 1024, DType::f32, 0, capturing, device_memory(0)) == 1024u);
    CHECK(judge_pointer("d_in", kBase + 400, 924, DType::f32, 0, capturing, device_memory(0)) ==
          924u);
    CHECK_THAT(refusal(kBase + 400, 925, capturing, device_memory(0)),
               Catch::Contains("has room for 924 float32"));
    // An extent the driver does not say: nothing to compare with.
    CHECK_FALSE(judge_pointer("d_in", kBase, 1 << 30, DType::f32, 0, capturing,
                              device_memory(0, 0, 0))
                    .has_value());
  }
}

TEST_CASE("pointers: a thread takes on trust what it checked before, and nothing else",
          "[arguments]") {
  std::thread([] { // a thread of its own: nothing remembered yet
    const auto at = [](CUdeviceptr p) { return reinterpret_cast<const void*>(p); };
    CHECK_FALSE(checked_before(at(kBase), 1, DType::f32, 0));
    remember_checked(kBase, 4096, 0);
    CHECK(checked_before(at(kBase), 1024, DType::f32, 0));
    CHECK(checked_before(at(kBase + 4092), 1, DType::f32, 0));
    CHECK_FALSE(checked_before(at(kBase + 4092), 2, DType::f32, 0)); // past the end
    CHECK_FALSE(checked_before(at(kBase + 2), 1, DType::f32, 0));    // misaligned
    CHECK_FALSE(checked_before(at(kBase), 1, DType::f32, 1));        // another GPU
    CHECK_FALSE(checked_before(at(kBase - 4), 2, DType::f32, 0));    // starts before it
    CHECK_FALSE(checked_before(nullptr, 0, DType::f32, 0));
    CHECK_FALSE(checked_before(at(~CUdeviceptr(0) - 3), 2, DType::f32, 0)); // wraps around
    // Another thread has checked nothing.
    std::thread([&] { CHECK_FALSE(checked_before(at(kBase), 1, DType::f32, 0)); }).join();
    // A check that finds something else at those addresses replaces what was remembered.
    remember_checked(kBase + 2048, 64, 1);
    CHECK_FALSE(checked_before(at(kBase), 1, DType::f32, 0));
    CHECK(checked_before(at(kBase + 2048), 16, DType::f32, 1));
    // The 8 most recent are kept.
    for (CUdeviceptr i = 0; i < 8; ++i) remember_checked(kBase + (i + 1) * 0x100000, 4096, 0);
    CHECK_FALSE(checked_before(at(kBase + 2048), 1, DType::f32, 1));
    for (CUdeviceptr i = 0; i < 8; ++i)
      CHECK(checked_before(at(kBase + (i + 1) * 0x100000), 1024, DType::f32, 0));
  }).join();
}

TEST_CASE("warm calls: found by every argument, per thread", "[arguments]") {
  std::thread([] {
    Entry e;
    WarmCall w;
    w.key = WarmKey{7, 1024, 0, 0, Problem::array, DType::f32, Op::sum, DType::f32};
    w.entry = &e;
    w.call.in_count = 1024;
    CHECK(find_warm(w.key) == nullptr);
    remember_warm(w);
    const WarmCall* found = find_warm(w.key);
    REQUIRE(found != nullptr);
    CHECK(found->entry == &e);
    CHECK(found->call.in_count == 1024u);
    for (WarmKey other : {WarmKey{8, 1024, 0, 0, Problem::array, DType::f32, Op::sum, DType::f32},
                          WarmKey{7, 1025, 0, 0, Problem::array, DType::f32, Op::sum, DType::f32},
                          WarmKey{7, 1024, 1, 0, Problem::array, DType::f32, Op::sum, DType::f32},
                          WarmKey{7, 1024, 0, 0, Problem::rows, DType::f32, Op::sum, DType::f32},
                          WarmKey{7, 1024, 0, 0, Problem::array, DType::i32, Op::sum, DType::f32},
                          WarmKey{7, 1024, 0, 0, Problem::array, DType::f32, Op::max, DType::f32},
                          WarmKey{7, 1024, 0, 0, Problem::array, DType::f32, Op::sum, DType::f64}}) {
      const WarmCall* f = find_warm(other);
      CHECK((f == nullptr || !(f->key == w.key)));
    }
    std::thread([&] { CHECK(find_warm(w.key) == nullptr); }).join();
  }).join();
}

TEST_CASE("workspaces: what the plans of each finish need", "[arguments]") {
  const Target t{DType::f32, Op::sum, 90, 1024, 132, false};
  const auto needs = [&](const char* key, std::uint64_t n) {
    const std::optional<Config> c = parse_key(key);
    REQUIRE(c);
    return needs_workspace(plan(*c, t, n));
  };
  // One block of the two-pass, last-block and first-block finishes writes the result itself.
  for (const char* finish : {"twopass", "lastblock", "firstblock"}) {
    const std::string key = std::string("vectorized.b256.u2.v2.g4.shfl.") + finish;
    INFO(key);
    CHECK_FALSE(needs(key.c_str(), 1000));
    CHECK(needs(key.c_str(), 1 << 22));
  }
  // The atomic finish: the result set first, atomics into it; no workspace at any size.
  CHECK_FALSE(needs("multi_seq.b256.g4.shfl.atomic", 1000));
  CHECK_FALSE(needs("multi_seq.b256.g4.shfl.atomic", 1 << 22));
  // The host finish reads partials back; an in-place variant reduces a scratch copy.
  LaunchPlan p;
  p.grid = 1;
  p.host_finish = true;
  CHECK(needs_workspace(p));
  p.host_finish = false;
  p.scratch = true;
  CHECK(needs_workspace(p));
  SegmentedPlan s;
  CHECK_FALSE(needs_workspace(s));
  s.work_bytes = 16;
  CHECK(needs_workspace(s));
}
