// GPU tests of the runtime library (runtime/reducer.cpp): results against the CPU reference with
// the built-in default and with stored configurations of every finish, bad input, unaligned and
// huge inputs, the asynchronous form and concurrent callers. test_gpu_main.cpp skips them (exit
// 4) where there is no GPU.
#include <catch2/catch.hpp>

#include <bit>

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "tuner/reference.h"
#include "reduce_tune/reducer.h"
#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/store_fixture.h"

#include <atomic>
#include <filesystem>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

using namespace reduce_tune;
namespace fs = std::filesystem;

namespace {

constexpr DType kDTypes[] = {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64};
constexpr Op kOps[] = {Op::sum, Op::min, Op::max};
const std::uint64_t kSizes[] = {1, 1000, 3 * (1ull << 20) + 17};

/// GPU 0's primary context (the reducer's), current on the calling thread for the test's own
/// allocations and copies.
using Gpu = testing::GpuContext;
using testing::mismatch;

/// A unique directory under the temp directory, removed at the end.
using reduce_tune::testing::TempDir;

/// Options whose store does not exist: every lookup gives the built-in default.
Options without_store(const TempDir& dir) {
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  return o;
}

cuda::Buffer upload(const HostArray& a) {
  cuda::Buffer b(std::max<std::size_t>(a.bytes.size(), 1));
  reduce_tune::cuda::upload_sync(b.get(), a.bytes.data(), a.bytes.size());
  return b;
}

HostArray download(CUdeviceptr p, DType d, std::uint64_t n) {
  HostArray a;
  a.dtype = d;
  a.n = n;
  a.bytes.resize(n * size_of(d));
  RT_CU(cuMemcpyDtoH(a.bytes.data(), p, a.bytes.size()));
  return a;
}

/// The synchronous reduction through the typed API.
Scalar reduce_sync(Reducer& r, DType d, Op op, CUdeviceptr p, std::uint64_t n,
                   CUstream s = nullptr) {
  return visit(d, [&](auto zero) {
    using T = decltype(zero);
    return Scalar::of(r.reduce<T>(op, reinterpret_cast<const T*>(p), n, s));
  });
}


/// A store at `path` with rows for this GPU at 2^20, for every dtype and op: an in-place host
/// finish (fastest), an atomic finish, a host finish and a two-pass finish.
void write_store(const fs::path& path, const cuda::DeviceInfo& info) {
  std::vector<db::Measurement> rows;
  for (DType dt : kDTypes)
    for (Op op : kOps)
      for (const auto& [k, us] : {std::pair{"neighbored_gmem.b256.host", 1.0},
                                  std::pair{"streaming.b256.u4.v2.g4.shfl.firstblock", 3.0},
                                  std::pair{"multi_seq.b256.g4.shfl.atomic", 4.0},
                                  std::pair{"unroll_warps.b256.u4.shfl.host", 5.0},
                                  std::pair{"vectorized.b512.u2.v2.g4.shfl.twopass", 6.0}}) {
        if (std::string_view(k).ends_with("firstblock") && op != Op::min) continue; // min only
        rows.push_back(reduce_tune::testing::stored_row(k, dt, op, us));
      }
  reduce_tune::testing::write_gpu_store(path.string(), info, rows);
}

} // namespace

TEST_CASE("reducer: every dtype and op matches the CPU with the built-in default", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  Reducer r(0, without_store(dir));
  CHECK(r.device_name() == g.info.name);
  for (DType d : kDTypes)
    for (std::uint64_t n : kSizes) {
      const HostArray a = make_input(d, n, 7 + n);
      const cuda::Buffer in = upload(a);
      for (Op op : kOps) {
        const Choice c = r.config_for(d, op, n);
        CHECK(c.match == Match::builtin);
        CHECK(c.config == builtin_config(Problem::array, d, op, {1, std::bit_floor(n)}, {},
                                         device_key(g.info))); // the reducer looks a bucket up at its start
        CHECK_THAT(c.note, Catch::StartsWith("no tuning store at "));
        const std::string bad = mismatch(g, c, a, op, reduce_sync(r, d, op, in.get(), n));
        INFO(bad);
        CHECK(bad.empty());
      }
      CHECK(download(in.get(), d, n).bytes == a.bytes); // the input is never modified
    }
}

TEST_CASE("reducer: stored configurations of every finish run and match the CPU", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  write_store(dir.path / "tuning.db", g.info);
  for (const bool deterministic : {false, true})
    for (const bool in_place : {false, true}) {
      Options o;
      o.store_path = (dir.path / "tuning.db").string();
      o.deterministic = deterministic;
      o.allow_in_place = in_place;
      Reducer r(0, o);
      cuda::Buffer out(8);
      for (DType d : kDTypes) {
        // What the lookup must choose: the fastest row the options admit.
        const bool atomic_ok = !deterministic || !is_float(d);
        for (std::uint64_t n : kSizes) {
          const HostArray a = make_input(d, n, 11 + n);
          const cuda::Buffer in = upload(a);
          for (Op op : kOps) {
            // The first-block finish is stored for min only (the fastest row there).
            const std::string atomic_key = op == Op::min ? "streaming.b256.u4.v2.g4.shfl.firstblock"
                                                         : "multi_seq.b256.g4.shfl.atomic";
            const std::string sync_key = in_place    ? "neighbored_gmem.b256.host"
                                         : atomic_ok ? atomic_key
                                                     : "unroll_warps.b256.u4.shfl.host";
            const std::string async_key =
                atomic_ok ? atomic_key : "vectorized.b512.u2.v2.g4.shfl.twopass";
            INFO("deterministic " << deterministic << ", in place " << in_place);
            const Choice c = r.config_for(d, op, n);
            CHECK(key(c.config) == sync_key);
            CHECK(c.match == Match::nearest_size);
            CHECK(c.tuned_n == 1ull << 20);
            std::string bad = mismatch(g, c, a, op, reduce_sync(r, d, op, in.get(), n));
            INFO(bad);
            CHECK(bad.empty());

            const Choice ac = r.async_config_for(d, op, n);
            CHECK(key(ac.config) == async_key);
            r.reduce_async(d, op, reinterpret_cast<const void*>(in.get()), n,
                           reinterpret_cast<void*>(out.get()));
            RT_CU(cuCtxSynchronize());
            Scalar got;
            got.dtype = d;
            RT_CU(cuMemcpyDtoH(&got.bits, out.get(), size_of(d)));
            bad = mismatch(g, ac, a, op, got);
            INFO("async: " << bad);
            CHECK(bad.empty());
          }
          CHECK(download(in.get(), d, n).bytes == a.bytes); // in place works on a copy
        }
      }
    }
}

TEST_CASE("reducer: config_for grades the size asked about", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  write_store(dir.path / "tuning.db", g.info);
  Options o;
  o.store_path = (dir.path / "tuning.db").string();
  const Reducer r(0, o);
  const std::uint64_t k20 = 1ull << 20;
  CHECK(r.config_for(DType::f32, Op::sum, k20).match == Match::exact);
  // The same bucket [2^20, 2^21) and so the same configuration, but not tuned at this n.
  const Choice near = r.config_for(DType::f32, Op::sum, k20 + 5);
  CHECK(near.match == Match::nearest_size);
  CHECK(near.config == r.config_for(DType::f32, Op::sum, k20).config);
  CHECK(near.tuned_n == k20);
  CHECK(r.config_for(DType::f32, Op::sum, 2 * k20).match == Match::nearest_size);
  CHECK(r.config_for(DType::f32, Op::sum, 0).config == r.config_for(DType::f32, Op::sum, 1).config);
}

TEST_CASE("reducer: n = 0 gives the identity without launching", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  Reducer r(0, without_store(dir));
  CHECK(r.sum<std::int32_t>(nullptr, 0) == 0);
  CHECK(r.sum<double>(nullptr, 0) == 0.0);
  CHECK(r.min<std::int32_t>(nullptr, 0) == std::numeric_limits<std::int32_t>::max());
  CHECK(r.max<std::int32_t>(nullptr, 0) == std::numeric_limits<std::int32_t>::lowest());
  CHECK(r.min<std::uint32_t>(nullptr, 0) == std::numeric_limits<std::uint32_t>::max());
  CHECK(r.max<std::uint32_t>(nullptr, 0) == 0u);
  CHECK(r.min<std::int64_t>(nullptr, 0) == std::numeric_limits<std::int64_t>::max());
  CHECK(r.max<std::int64_t>(nullptr, 0) == std::numeric_limits<std::int64_t>::lowest());
  CHECK(r.min<float>(nullptr, 0) == std::numeric_limits<float>::infinity());
  CHECK(r.max<double>(nullptr, 0) == -std::numeric_limits<double>::infinity());

  cuda::Buffer out(8);
  RT_CU(cuMemsetD8Async(out.get(), 0xA5, 8, nullptr));
  r.reduce_async(DType::i64, Op::min, nullptr, 0, reinterpret_cast<void*>(out.get()));
  RT_CU(cuCtxSynchronize());
  std::int64_t v = 0;
  RT_CU(cuMemcpyDtoH(&v, out.get(), 8));
  CHECK(v == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("reducer: bad input throws InvalidArgument naming the problem", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  Reducer r(0, without_store(dir));
  cuda::Buffer buf(1024 * sizeof(float));
  const auto* d = reinterpret_cast<const float*>(buf.get());
  void* out = reinterpret_cast<void*>(buf.get());

  CHECK_THROWS_WITH(r.sum<float>(nullptr, 5), "reduce_tune: d_in is null");
  CHECK_THROWS_AS(r.sum<float>(nullptr, 5), InvalidArgument);

  const std::vector<float> host(1000, 1.0f);
  CHECK_THROWS_AS(r.sum(host.data(), 1000), InvalidArgument);
  CHECK_THROWS_WITH(r.sum(host.data(), 1000),
                    Catch::StartsWith("reduce_tune: d_in (0x") && Catch::Contains("host"));

  void* pinned = nullptr;
  RT_CU(cuMemHostAlloc(&pinned, 4096, 0));
  CHECK_THROWS_WITH(r.sum(static_cast<const float*>(pinned), 1000),
                    Catch::EndsWith("is host memory (page-locked), not device memory"));
  RT_CU(cuMemFreeHost(pinned));

  // The driver may report the allocation rounded up: far past it either way.
  const std::uint64_t past = 1024 + (1u << 24);
  CHECK_THROWS_AS(r.sum(d, past), InvalidArgument);
  CHECK_THROWS_WITH(r.sum(d + 10, past),
                    Catch::StartsWith("reduce_tune: d_in (0x") && Catch::Contains(" has room for ") &&
                        Catch::EndsWith("fewer than n = " + std::to_string(past)));
  CHECK_THROWS_WITH(r.sum(reinterpret_cast<const float*>(buf.get() + 2), 10),
                    Catch::EndsWith("is not aligned to its 4-byte float32 elements"));

  CHECK_THROWS_WITH(r.reduce_async(static_cast<DType>(7), Op::sum, d, 10, out),
                    Catch::StartsWith("reduce_tune: unsupported dtype (enum value 7)"));
  CHECK_THROWS_WITH(r.reduce_async(DType::f32, static_cast<Op>(99), d, 10, out),
                    Catch::StartsWith("reduce_tune: unsupported op (enum value 99)"));
  CHECK_THROWS_AS(r.config_for(static_cast<DType>(-1), Op::sum, 10), InvalidArgument);
  CHECK_THROWS_WITH(r.reduce_async(DType::f32, Op::sum, d, 10, nullptr),
                    "reduce_tune: d_out is null");
  float host_out = 0;
  CHECK_THROWS_WITH(r.reduce_async(DType::f32, Op::sum, d, 10, &host_out),
                    Catch::StartsWith("reduce_tune: d_out (0x"));
  CHECK_THROWS_WITH(r.reduce_async(DType::f32, Op::sum, nullptr, 10, out),
                    "reduce_tune: d_in is null");
}

TEST_CASE("reducer: pointers that are not 16-byte aligned work", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  Reducer r(0, without_store(dir));
  for (DType d : {DType::f32, DType::i32, DType::f64})
    for (std::uint64_t n : {std::uint64_t(1000), std::uint64_t(3 * (1ull << 20) + 17)}) {
      const HostArray a = make_input(d, n, 3);
      const cuda::Buffer in = upload(a);
      for (std::uint64_t skip : {1u, 2u, 3u}) {
        HostArray tail;
        tail.dtype = d;
        tail.n = n - skip;
        tail.bytes.assign(a.bytes.begin() + std::ptrdiff_t(skip * size_of(d)), a.bytes.end());
        const CUdeviceptr p = in.get() + skip * size_of(d);
        for (Op op : kOps) {
          const std::string bad =
              mismatch(g, r.config_for(d, op, tail.n), tail, op, reduce_sync(r, d, op, p, tail.n));
          INFO("offset " << skip << ": " << bad);
          CHECK(bad.empty());
        }
      }
    }
}

TEST_CASE("reducer: asynchronous reductions queue on the stream", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  // Deterministic: the same bits every round (the built-in default may otherwise finish with
  // floating-point atomics, whose order varies).
  Options deterministic = without_store(dir);
  deterministic.deterministic = true;
  Reducer r(0, deterministic);
  const cuda::Stream stream;
  const std::uint64_t n = 3 * (1ull << 20) + 17;
  const HostArray a = make_input(DType::f32, n, 5);
  const cuda::Buffer in = upload(a);
  constexpr int kRounds = 8;
  cuda::Buffer out(kRounds * 3 * sizeof(float));
  // Several in flight before the one synchronization: each into its own slot.
  for (int i = 0; i < kRounds; ++i)
    for (int k = 0; k < 3; ++k)
      r.reduce_async(DType::f32, kOps[k], reinterpret_cast<const void*>(in.get()), n,
                     reinterpret_cast<void*>(out.get() + (i * 3 + k) * sizeof(float)),
                     stream.get());
  stream.synchronize();
  std::vector<float> got(kRounds * 3);
  RT_CU(cuMemcpyDtoH(got.data(), out.get(), got.size() * sizeof(float)));
  for (int i = 0; i < kRounds; ++i)
    for (int k = 0; k < 3; ++k) {
      const std::string bad = mismatch(g, r.async_config_for(DType::f32, kOps[k], n), a, kOps[k],
                                       Scalar::of(got[i * 3 + k]));
      INFO("round " << i << ": " << bad);
      CHECK(bad.empty());
    }
  // Options::deterministic: the same input gives the same bits every time.
  for (int i = 1; i < kRounds; ++i) CHECK(got[i * 3] == got[0]);
}

TEST_CASE("reducer: concurrent callers on their own streams", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  Reducer r(0, without_store(dir));
  struct Work {
    DType dtype;
    std::uint64_t n;
    HostArray host;
    cuda::Buffer in, out;
  };
  std::vector<Work> work;
  for (auto [d, n] : {std::pair{DType::f32, 3 * (1ull << 20) + 17}, std::pair{DType::i64, 1000ull},
                      std::pair{DType::u32, (1ull << 20) + 3}, std::pair{DType::f64, 77777ull}}) {
    HostArray h = make_input(d, n, n);
    cuda::Buffer in = upload(h);
    work.push_back({d, n, std::move(h), std::move(in), cuda::Buffer(8)});
  }
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (Work& work_item : work)
    threads.emplace_back([&, &w = work_item] {
      try {
        g.ctx.make_current(); // for the test's stream and copies; the reducer needs none
        const cuda::Stream s;
        for (int i = 0; i < 30; ++i) {
          const Op op = kOps[i % 3];
          std::string bad;
          if (i % 2) {
            bad = mismatch(g, r.config_for(w.dtype, op, w.n), w.host, op,
                           reduce_sync(r, w.dtype, op, w.in.get(), w.n, s.get()));
          } else {
            r.reduce_async(w.dtype, op, reinterpret_cast<const void*>(w.in.get()), w.n,
                           reinterpret_cast<void*>(w.out.get()), s.get());
            s.synchronize();
            Scalar got;
            got.dtype = w.dtype;
            RT_CU(cuMemcpyDtoH(&got.bits, w.out.get(), size_of(w.dtype)));
            bad = mismatch(g, r.async_config_for(w.dtype, op, w.n), w.host, op, got);
          }
          if (!bad.empty()) {
            std::lock_guard lock(mu);
            failures.push_back(bad);
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        failures.push_back(e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

TEST_CASE("reducer: the caller's current context is left as it was", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  Reducer r(0, without_store(dir));
  const HostArray a = make_input(DType::i32, 1000, 9);
  const cuda::Buffer in = upload(a);
  std::int32_t got = 0;
  CUcontext during = reinterpret_cast<CUcontext>(1);
  std::string error;
  // A thread with no current context at all.
  std::thread t([&] {
    try {
      got = r.sum(reinterpret_cast<const std::int32_t*>(in.get()), 1000);
      RT_CU(cuCtxGetCurrent(&during));
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  t.join();
  REQUIRE(error.empty());
  CHECK(during == nullptr);
  CHECK(Scalar::of(got) == reference(a, Op::sum).value);
}

TEST_CASE("reducer: n past 2^32 works", "[gpu]") {
  const Gpu g;
  const TempDir dir;
  const std::uint64_t big = 1ull << 32, n = big + 1000;
  std::size_t free_bytes = 0, total = 0;
  RT_CU(cuMemGetInfo(&free_bytes, &total));
  if (free_bytes < n * 4 + (1ull << 30)) {
    WARN("skipped: needs " << (n * 4 >> 30) << " GiB free, the GPU has " << (free_bytes >> 30));
    return;
  }
  Reducer r(0, without_store(dir));
  cuda::Buffer in(n * 4);
  // 2^32 ones, then 1000 sevens: a count cut to 32 bits would see only ones.
  RT_CU(cuMemsetD32Async(in.get(), 1, big, nullptr));
  RT_CU(cuMemsetD32Async(in.get() + big * 4, 7, 1000, nullptr));
  RT_CU(cuCtxSynchronize());
  const auto* p = reinterpret_cast<const std::uint32_t*>(in.get());
  CHECK(r.sum(p, n) == 7000u); // 2^32 + 7000, wrapped
  CHECK(r.max(p, n) == 7u);
  CHECK(r.min(p, n) == 1u);
  CHECK(r.min(p + 1000, n - 1000) == 1u);
}
