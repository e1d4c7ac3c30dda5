// GPU tests of the runtime library with CUDA's 2-byte floats: the typed helpers take
// __nv_bfloat16 and __half (reduce_tune/reducer.h before CUDA's headers) and return the element
// type; sums accumulate in float32 and round once; min and max are exact; the asynchronous form
// writes exactly one 2-byte element; stored configurations a half sum cannot use are passed over.
#include <catch2/catch.hpp>

#include "reduce_tune/reducer.h" // before CUDA's headers: the typed helpers take their types still

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "tuner/reference.h"
#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/store_fixture.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>

using namespace reduce_tune;
using reduce_tune::testing::TempDir;

static_assert(dtype_of<__nv_bfloat16>() == DType::bf16);
static_assert(dtype_of<__half>() == DType::f16);

namespace {

using Gpu = testing::GpuContext;
using testing::mismatch;

template <typename H> Scalar bits_of(H v, DType d) {
  Scalar s;
  s.dtype = d;
  std::memcpy(&s.bits, &v, 2);
  return s;
}

/// The typed helper of op on CUDA's type for d.
Scalar typed(Reducer& r, DType d, Op op, CUdeviceptr p, std::uint64_t n) {
  if (d == DType::bf16)
    return bits_of(r.reduce(op, reinterpret_cast<const __nv_bfloat16*>(p), n), d);
  return bits_of(r.reduce(op, reinterpret_cast<const __half*>(p), n), d);
}


constexpr DType kHalves[] = {DType::bf16, DType::f16};
constexpr Op kOps[] = {Op::sum, Op::min, Op::max};

/// A store at `path` for this GPU where, for every half dtype and op at 2^20, `fast` took 1 us and
/// `slow` 2 us.
void write_two_rows(const std::filesystem::path& path, const Gpu& g, const std::string& fast,
                    const std::string& slow) {
  std::vector<db::Measurement> rows;
  for (DType d : kHalves)
    for (Op op : kOps)
      for (const auto& [k, us] : {std::pair{fast, 1.0}, std::pair{slow, 2.0}})
        rows.push_back(reduce_tune::testing::stored_row(k, d, op, us));
  reduce_tune::testing::write_gpu_store(path.string(), g.info, rows);
}

} // namespace

TEST_CASE("reducer: bf16 and f16 through the typed helpers, sync and async, any alignment",
          "[gpu][half]") {
  const Gpu g;
  const TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  Reducer r(0, o);
  cuda::Buffer out(8);
  for (DType d : kHalves)
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(1000), std::uint64_t(3 * (1ull << 20) + 17)}) {
      const HostArray a = make_input(d, n + 7, 9 + n);
      cuda::Buffer in(a.bytes.size());
      reduce_tune::cuda::upload_sync(in.get(), a.bytes.data(), a.bytes.size());
      for (std::uint64_t skip : {0u, 1u, 3u, 7u}) {
        HostArray part;
        part.dtype = d, part.n = n;
        part.bytes.assign(a.bytes.begin() + std::ptrdiff_t(2 * skip), a.bytes.begin() + std::ptrdiff_t(2 * (skip + n)));
        const CUdeviceptr p = in.get() + 2 * skip;
        for (Op op : kOps) {
          const Choice c = r.config_for(d, op, n);
          CHECK(c.config == builtin_config(Problem::array, d, op, {1, std::bit_floor(n)}, {}, device_key(g.info)));
          std::string bad = mismatch(g, c, part, op, typed(r, d, op, p, n));
          INFO(name(d) << " " << name(op) << " offset " << skip << ": " << bad);
          CHECK(bad.empty());
          // The asynchronous form writes the element and nothing past it.
          RT_CU(cuMemsetD8Async(out.get(), 0xA5, 8, nullptr));
          r.reduce_async(d, op, reinterpret_cast<const void*>(p), n, reinterpret_cast<void*>(out.get()));
          RT_CU(cuCtxSynchronize());
          unsigned char bytes[8];
          RT_CU(cuMemcpyDtoH(bytes, out.get(), 8));
          Scalar got;
          got.dtype = d;
          std::memcpy(&got.bits, bytes, 2);
          bad = mismatch(g, r.async_config_for(d, op, n), part, op, got);
          INFO("async: " << bad);
          CHECK(bad.empty());
          for (int i = 2; i < 8; ++i) CHECK(bytes[i] == 0xA5);
        }
      }
    }
  // n = 0: the identities, of the element type.
  CHECK(float(r.sum<__nv_bfloat16>(nullptr, 0)) == 0.f);
  CHECK(float(r.min<__half>(nullptr, 0)) == std::numeric_limits<float>::infinity());
  CHECK(float(r.max<__nv_bfloat16>(nullptr, 0)) == -std::numeric_limits<float>::infinity());
  CHECK_THROWS_WITH(r.sum(reinterpret_cast<const __half*>(out.get() + 1), 10),
                    Catch::EndsWith("is not aligned to its 2-byte float16 elements"));
}

TEST_CASE("reducer: a bf16 sum keeps what rounding at every add would lose", "[gpu][half]") {
  // 2^20 followed by 2^20 ones: a bf16 accumulator adding them one by one would stop growing at
  // 256 (where 1 is half an ulp); in float32 every partial is exact and the sum is 2^21, a bf16
  // value.
  const Gpu g;
  const TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  Reducer r(0, o);
  const std::uint64_t n = (1u << 20) + 1;
  std::vector<std::uint16_t> host(n, narrow_half(1.0, DType::bf16));
  host[0] = narrow_half(double(1u << 20), DType::bf16);
  cuda::Buffer in(n * 2);
  reduce_tune::cuda::upload_sync(in.get(), host.data(), n * 2);
  const __nv_bfloat16 s = r.sum(reinterpret_cast<const __nv_bfloat16*>(in.get()), n);
  CHECK(float(s) == float(1u << 21));
}

TEST_CASE("reducer: stored half configurations, and those a half sum cannot use passed over",
          "[gpu][half]") {
  const Gpu g;
  const TempDir dir;
  const auto path = dir.path / "tuning.db";
  write_two_rows(path, g, "streaming.b256.u4.v8.g4.shfl.firstblock", "unroll_warps.b256.u4.shfl.host");
  Options o;
  o.store_path = path.string();
  Reducer r(0, o);
  for (DType d : kHalves)
    for (Op op : kOps) {
      const std::uint64_t n = 1ull << 20;
      const HostArray a = make_input(d, n, 21);
      cuda::Buffer in(a.bytes.size());
      reduce_tune::cuda::upload_sync(in.get(), a.bytes.data(), a.bytes.size());
      const Choice c = r.config_for(d, op, n);
      INFO(name(d) << " " << name(op) << ": " << key(c.config) << " (" << c.note << ")");
      CHECK(c.match == Match::exact);
      if (op == Op::sum) {
        CHECK(key(c.config) == "unroll_warps.b256.u4.shfl.host");
        CHECK_THAT(c.note, Catch::Contains("streaming.b256.u4.v8.g4.shfl.firstblock"));
      } else {
        CHECK(key(c.config) == "streaming.b256.u4.v8.g4.shfl.firstblock");
      }
      const std::string bad = mismatch(g, c, a, op, typed(r, d, op, in.get(), n));
      INFO(bad);
      CHECK(bad.empty());
    }
}

TEST_CASE("reducer: bf16 and f16 with a float32 result, its atomic sums, under graph replay",
          "[gpu][half]") {
  // A stored first-block configuration (a float atomic sum) is faster than the last-block one: a
  // float32 result takes it, an element-typed one passes it over, a deterministic reducer too.
  const Gpu g;
  const TempDir dir;
  const auto path = dir.path / "tuning.db";
  const std::uint64_t n = (1ull << 20) + 3;
  write_two_rows(path, g, "streaming.b256.u4.v8.g4.shfl.firstblock",
                 "vectorized.b256.u2.v8.g4.shfl.lastblock");
  Options o;
  o.store_path = path.string();
  Reducer r(0, o);
  Options det = o;
  det.deterministic = true;
  Reducer rd(0, det);
  cuda::Stream stream;
  cuda::Buffer out(8);
  for (DType d : kHalves)
    for (Op op : kOps) {
      INFO(name(d) << " " << name(op));
      const Choice wide = r.async_config_for(d, op, n, DType::f32);
      CHECK(key(wide.config) == "streaming.b256.u4.v8.g4.shfl.firstblock");
      const Choice narrow = r.async_config_for(d, op, n);
      if (op == Op::sum) {
        CHECK(key(narrow.config) == "vectorized.b256.u2.v8.g4.shfl.lastblock");
        CHECK_THAT(narrow.note, Catch::Contains("float32 result"));
        CHECK(key(rd.async_config_for(d, op, n, DType::f32).config) ==
              "vectorized.b256.u2.v8.g4.shfl.lastblock");
      } else {
        CHECK(key(narrow.config) == "streaming.b256.u4.v8.g4.shfl.firstblock");
      }
      // Eagerly, then captured and replayed with new data every time.
      const HostArray a = make_input(d, n, 33);
      cuda::Buffer in(a.bytes.size());
      reduce_tune::cuda::upload_sync(in.get(), a.bytes.data(), a.bytes.size());
      RT_CU(cuCtxSynchronize());
      auto got = [&] {
        Scalar s;
        s.dtype = DType::f32;
        RT_CU(cuStreamSynchronize(stream.get()));
        RT_CU(cuMemcpyDtoH(&s.bits, out.get(), 4));
        return s;
      };
      RT_CU(cuMemsetD32Async(out.get(), 0xA5A5A5A5u, 2, stream.get()));
      r.reduce_async(d, op, reinterpret_cast<const void*>(in.get()), n,
                     reinterpret_cast<void*>(out.get()), DType::f32, stream.get());
      CHECK(mismatch(g, wide, a, op, got()) == std::string());
      CUgraph graph = nullptr;
      RT_CU(cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
      r.reduce_async(d, op, reinterpret_cast<const void*>(in.get()), n,
                     reinterpret_cast<void*>(out.get()), DType::f32, stream.get());
      RT_CU(cuStreamEndCapture(stream.get(), &graph));
      CUgraphExec exec = nullptr;
      RT_CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
      for (int rep = 0; rep < 20; ++rep) {
        const HostArray b = make_input(d, n, 100 + rep);
        reduce_tune::cuda::upload_sync(in.get(), b.bytes.data(), b.bytes.size());
        // From pageable memory the copy may return before its DMA lands; the stream does not wait
        // for the legacy stream's copy.
        RT_CU(cuCtxSynchronize());
        RT_CU(cuGraphLaunch(exec, stream.get()));
        CHECK(mismatch(g, wide, b, op, got()) == std::string());
      }
      RT_CU(cuGraphExecDestroy(exec));
      RT_CU(cuGraphDestroy(graph));
      // n = 0: the identity as float32.
      r.reduce_async(d, op, reinterpret_cast<const void*>(in.get()), 0,
                     reinterpret_cast<void*>(out.get()), DType::f32, stream.get());
      CHECK(got().as<float>() == identity(DType::f32, op).as<float>());
    }
  // Only the element type, or float32 from bf16/f16.
  const void* p = reinterpret_cast<const void*>(out.get());
  void* q = reinterpret_cast<void*>(out.get());
  CHECK_THROWS_AS(r.reduce_async(DType::f32, Op::sum, p, 1, q, DType::f64), InvalidArgument);
  CHECK_THROWS_WITH(r.reduce_async(DType::bf16, Op::sum, p, 1, q, DType::f16),
                    Catch::Contains("bfloat16 or float32"));
  CHECK_THROWS_WITH(r.async_config_for(DType::i32, Op::sum, 1, DType::f32),
                    Catch::Contains("its result is int32"));
}
