// GPU tests of the warm path (runtime/warm.h): the same asynchronous call again, on pointers in
// allocations the thread checked before, asks the driver for no pointer and takes no lookup, and
// computes the same results as the full path (one block with no workspace, a grid with a lease,
// rows); new pointers, host pointers and other threads take the full path with its checks.
// test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/driver.h"
#include "reduce_tune/reducer.h"
#include "runtime/counters.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tuner/reference.h"

#include <thread>
#include <vector>

using namespace reduce_tune;

namespace {

using Gpu = testing::GpuContext;
using testing::mismatch;

struct Count {
  std::uint64_t queries = detail::counters.pointer_queries.load();
  std::uint64_t cold = detail::counters.cold_calls.load();
};

cuda::Buffer upload(const HostArray& a) {
  cuda::Buffer b(a.bytes.size());
  reduce_tune::cuda::upload_sync(b.get(), a.bytes.data(), a.bytes.size());
  return b;
}

const void* at(const cuda::Buffer& b, std::size_t offset = 0) {
  return reinterpret_cast<const void*>(b.get() + offset);
}
void* at_out(const cuda::Buffer& b, std::size_t offset = 0) {
  return reinterpret_cast<void*>(b.get() + offset);
}

} // namespace

TEST_CASE("warm calls: no pointer query or lookup after the first, the same results",
          "[gpu][warm]") {
  const Gpu g;
  const testing::TempDir dir;
  Options o;
  o.store_path = dir.file("absent.db");
  Reducer r(0, o);
  const cuda::Stream s;
  // A small array and a large one (the built-in default's plans: one block or a grid, with a
  // lease where its finish needs one), and rows.
  for (const std::uint64_t n : {std::uint64_t(1000), std::uint64_t(1) << 22}) {
    INFO("n " << n);
    const HostArray a = make_input(DType::f32, n, 3);
    const cuda::Buffer in = upload(a), out(64 * sizeof(float));
    r.reduce_async(DType::f32, Op::max, at(in), n, at_out(out), s.get()); // cold: checks, lookup
    const Count before;
    for (int i = 0; i < 64; ++i)
      r.reduce_async(DType::f32, Op::max, at(in), n, at_out(out, i * sizeof(float)), s.get());
    const Count after;
    CHECK(after.queries == before.queries);
    CHECK(after.cold == before.cold);
    std::vector<float> got(64);
    RT_CU(cuStreamSynchronize(s.get()));
    RT_CU(cuMemcpyDtoH(got.data(), out.get(), got.size() * sizeof(float)));
    for (float v : got) CHECK(mismatch(g, r.async_config_for(DType::f32, Op::max, n), a, Op::max,
                                       Scalar::of(v)).empty());
  }
  const std::uint64_t rows = 32, cols = 32;
  const HostArray m = make_input(DType::i32, rows * cols, 4);
  const cuda::Buffer mat(m.bytes.size()), row_sums(rows * 4);
  reduce_tune::cuda::upload_sync(mat.get(), m.bytes.data(), m.bytes.size());
  r.reduce_rows(DType::i32, Op::sum, at(mat), rows, cols, at_out(row_sums), s.get());
  const Count before;
  for (int i = 0; i < 20; ++i)
    r.reduce_rows(DType::i32, Op::sum, at(mat), rows, cols, at_out(row_sums), s.get());
  CHECK(Count().queries == before.queries);
  CHECK(Count().cold == before.cold);
  std::vector<std::int32_t> sums(rows);
  RT_CU(cuStreamSynchronize(s.get()));
  RT_CU(cuMemcpyDtoH(sums.data(), row_sums.get(), rows * 4));
  for (std::uint64_t i = 0; i < rows; ++i) {
    std::uint32_t want = 0; // int32 sums wrap
    for (std::uint64_t j = 0; j < cols; ++j)
      want += std::uint32_t(m.data<std::int32_t>()[i * cols + j]);
    CHECK(sums[i] == std::int32_t(want));
  }
}

TEST_CASE("warm calls: new or bad pointers and other threads take the full path, with its checks",
          "[gpu][warm]") {
  const Gpu g;
  const testing::TempDir dir;
  Options o;
  o.store_path = dir.file("absent.db");
  Reducer r(0, o);
  const cuda::Stream s;
  const std::uint64_t n = 1000;
  const HostArray a = make_input(DType::f32, n, 5), b = make_input(DType::f32, n, 6);
  const cuda::Buffer in = upload(a), in2 = upload(b), out(8);
  // On a thread of its own: the allocations that earlier tests freed, whose addresses these may
  // reuse, are not remembered there.
  std::thread([&] {
    g.ctx.make_current(); // for the test's own copies
    r.reduce_async(DType::f32, Op::sum, at(in), n, at_out(out), s.get());
    // Another allocation: checked (the output's allocation is known, the input's is not), then
    // warm.
    Count c0;
    r.reduce_async(DType::f32, Op::sum, at(in2), n, at_out(out), s.get());
    Count c1;
    CHECK(c1.cold == c0.cold + 1);
    CHECK(c1.queries > c0.queries);
    r.reduce_async(DType::f32, Op::sum, at(in2), n, at_out(out), s.get());
    CHECK(Count().cold == c1.cold);
    float got = 0;
    RT_CU(cuStreamSynchronize(s.get()));
    RT_CU(cuMemcpyDtoH(&got, out.get(), 4));
    CHECK(mismatch(g, r.async_config_for(DType::f32, Op::sum, n), b, Op::sum, Scalar::of(got))
              .empty());
    // The same call on host memory: refused as ever (the extent rule: tests/test_arguments.cpp).
    std::vector<float> host(n);
    CHECK_THROWS_WITH(r.reduce_async(DType::f32, Op::sum, host.data(), n, at_out(out), s.get()),
                      Catch::Contains("is not memory CUDA knows"));
    CHECK_THROWS_WITH(r.reduce_async(DType::f32, Op::sum, at(in), n, host.data(), s.get()),
                      Catch::Contains("is not memory CUDA knows"));
    // Another thread has made no call: its first is checked (and its context set) in full.
    std::thread([&] {
      const Count t0;
      r.reduce_async(DType::f32, Op::sum, at(in), n, at_out(out), s.get());
      const Count t1;
      CHECK(t1.cold == t0.cold + 1);
      CHECK(t1.queries >= t0.queries + 2);
    }).join();
    RT_CU(cuStreamSynchronize(s.get()));
    RT_CU(cuMemcpyDtoH(&got, out.get(), 4));
    CHECK(mismatch(g, r.async_config_for(DType::f32, Op::sum, n), a, Op::sum, Scalar::of(got))
              .empty());
  }).join();
}
