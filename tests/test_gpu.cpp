// GPU tests: every valid configuration reduces correctly at awkward sizes, and the input is never
// modified. Run where a GPU exists; test_gpu_main.cpp skips them (exit 4) elsewhere.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"

#include <cstring>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

// Runs each valid one of `configs` for (dtype, op) at each size; returns the number of results
// checked. Each result is checked against the CPU reference; the input is compared byte for byte
// afterwards. `wide`: bf16/f16 with the float32 result (Target::wide_result).
std::size_t check_configs(DType d, Op op, const std::vector<std::uint64_t>& sizes,
                          const std::vector<Config>& configs, bool wide = false) {
  Gpu& g = gpu();
  Target t = g.target(d, op);
  t.wide_result = wide;
  std::vector<CompileJob> jobs;
  for (const Config& c : configs)
    if (!invalid_reason(c, t)) jobs.push_back({c, d, op, wide});
  for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
  Workspace ws;
  std::size_t checked = 0;
  for (std::uint64_t n : sizes) {
    const HostArray data = make_input(d, n, 1000 + n);
    const Reference ref = reference(data, op);
    cuda::Buffer in(n * size_of(d));
    reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
    for (const CompileJob& j : jobs) {
      const Kernel k = g.loader.load(j.config, d, op, wide);
      const LaunchPlan p = plan(j.config, t, n);
      ws.reserve(p, d, n);
      RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, g.stream.get()));
      if (p.partials)
        RT_CU(cuMemsetD8Async(ws.partials(), 0xA5, p.grid * size_of(accumulator_of(d)), g.stream.get()));
      const Scalar got = reduce_once(k, p, in.get(), n, ws, g.stream.get());
      REQUIRE(got.dtype == (wide ? DType::f32 : d));
      const Check c = check(ref, got, op, summation_depth(j.config, t, n));
      INFO(key(j.config) << " " << name(d) << " " << name(op) << " n=" << n << ": got " << c.observed
                         << ", expected " << c.expected << " (error " << c.error << ", bound " << c.bound << ")");
      CHECK(c.ok);
      ++checked;
    }
    HostArray after;
    after.bytes.resize(data.bytes.size());
    RT_CU(cuMemcpyDtoH(after.bytes.data(), in.get(), after.bytes.size()));
    CHECK(after.bytes == data.bytes);
  }
  return checked;
}

// Every configuration the sweep tries of `variants` (all when empty).
std::size_t check_all(DType d, Op op, const std::vector<std::uint64_t>& sizes,
                      const std::vector<std::string>& only = {}, bool wide = false) {
  std::vector<Config> configs;
  for (const Variant& v : variants())
    if (only.empty() || std::find(only.begin(), only.end(), v.name) != only.end())
      for (const Config& c : space(v)) configs.push_back(c);
  return check_configs(d, op, sizes, configs, wide);
}

const std::vector<std::uint64_t> kSizes = {1, 2, 31, 32, 33, 1000, (1u << 20) + 1, 1u << 24, 3u * (1u << 22) + 5};

} // namespace

TEST_CASE("every valid int32 sum configuration is right at awkward sizes", "[gpu]") {
  CHECK(check_all(DType::i32, Op::sum, kSizes) > 4000);
}

TEST_CASE("every valid float32 sum configuration is right at awkward sizes", "[gpu]") {
  CHECK(check_all(DType::f32, Op::sum, kSizes) > 4000);
}

TEST_CASE("min and max, and the other dtypes, through the same templates", "[gpu]") {
  const std::vector<std::uint64_t> sizes = {1, 33, 1000, (1u << 20) + 1};
  const std::vector<std::string> some = {"interleaved", "unroll_warps", "multi_seq", "vectorized", "atomic_shared"};
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64})
    for (Op op : {Op::sum, Op::min, Op::max}) {
      INFO(name(d) << " " << name(op));
      CHECK(check_all(d, op, sizes, some) > 0);
    }
}

TEST_CASE("every valid bf16 and f16 configuration is right at awkward sizes", "[gpu][half]") {
  // Sums accumulate in float32 and round once (the bound of tuner/reference.h); min and max are
  // exact, their atomic finishes a 16-bit compare-and-swap.
  const std::vector<std::uint64_t> some = {1, 33, 1000, (1u << 20) + 1, 3u * (1u << 22) + 5};
  for (DType d : {DType::bf16, DType::f16})
    for (Op op : {Op::sum, Op::min, Op::max}) {
      INFO(name(d) << " " << name(op));
      CHECK(check_all(d, op, op == Op::sum ? kSizes : some) > 1000);
    }
}

TEST_CASE("bf16 and f16 with a float32 result: every valid configuration, the atomic sums too",
          "[gpu][half]") {
  // The result is the float32 accumulator (Reducer::reduce_async with DType::f32): sums within the
  // float32 bound (no rounding to the element type), which lets them finish with float atomics;
  // min and max the exact element widened.
  const std::vector<std::uint64_t> some = {1, 33, 1000, (1u << 20) + 1, 3u * (1u << 22) + 5};
  for (DType d : {DType::bf16, DType::f16})
    for (Op op : {Op::sum, Op::min, Op::max}) {
      INFO(name(d) << " " << name(op) << ", float32 result");
      CHECK(check_all(d, op, op == Op::sum ? kSizes : some, {}, true) > 1000);
    }
}

TEST_CASE("the two-pass finish, one block or many, its second kernel launched programmatically "
          "on sm_90+", "[gpu]") {
  // Not in the sweep's space (the last-block finish measured as fast or faster), so checked here.
  const Config probe = *parse_key("vectorized.b256.u4.v4.g0.shfl.twopass");
  INFO("second pass launched programmatically: "
       << gpu().loader.load(probe, DType::f32, Op::sum).programmatic);
  std::vector<Config> configs;
  // Valid for every dtype and op (two 8-byte elements make a 16-byte vector).
  for (const char* k : {"vectorized.b128.u1.v2.g0.shfl.twopass", "vectorized.b256.u4.v2.g0.shfl.twopass",
                        "streaming.b512.u2.v2.g8.shfl.twopass", "vectorized.b1024.u8.v2.g4.shfl.twopass"})
    configs.push_back(*parse_key(k));
  const std::vector<std::uint64_t> sizes = {1, 1000, 4096, 4097, (1u << 20) + 1, 3u * (1u << 22) + 5};
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64})
    for (Op op : {Op::sum, Op::min, Op::max}) {
      INFO(name(d) << " " << name(op));
      CHECK(check_configs(d, op, sizes, configs) == configs.size() * sizes.size());
    }
}

TEST_CASE("the first-block finish keeps its state right over back-to-back launches of any grid",
          "[gpu]") {
  // Its ticket and ready words live in the workspace and are left ready by each launch, whatever
  // its grid; the last-block finish shares the same bytes. Launches of every shape are queued back
  // to back on one stream with no host step between them, each into its own result slot, then all
  // results are checked.
  Gpu& g = gpu();
  std::vector<Config> configs;
  for (const char* k : {"vectorized.b128.u1.v2.g0.shfl.firstblock", // many blocks at large n
                        "streaming.b256.u4.v2.g8.shfl.firstblock", "vectorized.b512.u2.v2.g4.shfl.firstblock",
                        "vectorized.b256.u4.v2.g0.shfl.lastblock"})
    configs.push_back(*parse_key(k));
  const std::vector<std::uint64_t> sizes = {1, 1000, 4097, (1u << 20) + 1, (1u << 22) + 3};
  for (auto [d, op] : {std::pair{DType::i32, Op::sum}, std::pair{DType::f32, Op::sum},
                       std::pair{DType::u32, Op::max}, std::pair{DType::f64, Op::min}}) {
    INFO(name(d) << " " << name(op));
    const Target t = g.target(d, op);
    const std::size_t es = size_of(d);
    std::vector<Kernel> kernels;
    for (const Config& c : configs) kernels.push_back(g.loader.load(c, d, op));
    std::vector<HostArray> data;
    std::vector<cuda::Buffer> inputs;
    Workspace ws;
    for (std::uint64_t n : sizes) {
      data.push_back(make_input(d, n, 77 + n));
      inputs.emplace_back(n * es);
      reduce_tune::cuda::upload_sync(inputs.back().get(), data.back().bytes.data(), n * es);
      for (const Config& c : configs) ws.reserve(plan(c, t, n), d, n); // no reallocation below
    }
    const int rounds = 3;
    const std::size_t slots = rounds * sizes.size() * configs.size();
    cuda::Buffer results(slots * es);
    RT_CU(cuMemsetD8Async(results.get(), 0xA5, slots * es, g.stream.get()));
    std::size_t slot = 0;
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < sizes.size(); ++i)
        for (std::size_t k = 0; k < configs.size(); ++k)
          enqueue(kernels[k], plan(configs[k], t, sizes[i]), inputs[i].get(), sizes[i], ws,
                  g.stream.get(), results.get() + es * slot++);
    std::vector<unsigned char> got(slots * es);
    RT_CU(cuMemcpyDtoHAsync(got.data(), results.get(), got.size(), g.stream.get()));
    RT_CU(cuStreamSynchronize(g.stream.get()));
    slot = 0;
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const Reference ref = reference(data[i], op);
        for (std::size_t k = 0; k < configs.size(); ++k) {
          Scalar v;
          v.dtype = d;
          std::memcpy(&v.bits, got.data() + es * slot++, es);
          const Check c = check(ref, v, op, summation_depth(configs[k], t, sizes[i]));
          INFO(key(configs[k]) << " n=" << sizes[i] << " round " << r << ": got " << c.observed
                               << ", expected " << c.expected);
          CHECK(c.ok);
        }
      }
  }
}

TEST_CASE("vectorized loads handle an unaligned start", "[gpu]") {
  Gpu& g = gpu();
  const std::uint64_t n = (1u << 20) + 7;
  const HostArray data = make_input(DType::f32, n + 3, 5);
  cuda::Buffer in((n + 3) * 4);
  reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
  Workspace ws;
  for (int offset = 0; offset < 4; ++offset) {
    HostArray part;
    part.dtype = DType::f32, part.n = n;
    part.bytes.assign(data.bytes.begin() + offset * 4, data.bytes.begin() + (offset + n) * 4);
    const Reference ref = reference(part, Op::sum);
    for (const char* key_text : {"vectorized.b256.u4.v4.g0.shfl.lastblock", "vectorized.b512.u2.v4.g4.shfl.twopass"}) {
      const Config c = *parse_key(key_text);
      const Target t = g.target(DType::f32, Op::sum);
      const Kernel k = g.loader.load(c, DType::f32, Op::sum);
      const LaunchPlan p = plan(c, t, n);
      ws.reserve(p, DType::f32, n);
      const Scalar got = reduce_once(k, p, in.get() + offset * 4, n, ws, g.stream.get());
      INFO(key_text << " offset " << offset);
      CHECK(check(ref, got, Op::sum, summation_depth(c, t, n)).ok);
    }
  }
}

TEST_CASE("16-byte loads of bf16 and f16 handle every unaligned start", "[gpu][half]") {
  // Eight elements a vector: a head of up to 7 scalars before the first aligned one.
  Gpu& g = gpu();
  const std::uint64_t n = (1u << 20) + 7;
  for (DType d : {DType::bf16, DType::f16}) {
    const HostArray data = make_input(d, n + 7, 5);
    cuda::Buffer in((n + 7) * 2);
    reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
    Workspace ws;
    for (int offset = 0; offset < 8; ++offset)
      for (Op op : {Op::sum, Op::max}) {
        HostArray part;
        part.dtype = d, part.n = n;
        part.bytes.assign(data.bytes.begin() + offset * 2, data.bytes.begin() + (offset + n) * 2);
        const Reference ref = reference(part, op);
        for (const char* key_text : {"vectorized.b256.u4.v8.g0.shfl.lastblock",
                                     "streaming.b512.u2.v8.g4.shfl.twopass",
                                     "vectorized.b128.u8.v8.g8.shfl.host"}) {
          const Config c = *parse_key(key_text);
          const Target t = g.target(d, op);
          const Kernel k = g.loader.load(c, d, op);
          const LaunchPlan p = plan(c, t, n);
          ws.reserve(p, d, n);
          const Scalar got = reduce_once(k, p, in.get() + offset * 2, n, ws, g.stream.get());
          const Check ck = check(ref, got, op, summation_depth(c, t, n));
          INFO(key_text << " " << name(d) << " " << name(op) << " offset " << offset << ": got "
                        << ck.observed << ", expected " << ck.expected);
          CHECK(ck.ok);
        }
      }
  }
}

TEST_CASE("a host registration page-locks the caller's memory for device copies, then lets go",
          "[gpu]") {
  gpu(); // the context, or a skip without a GPU
  std::vector<std::uint32_t> host(1 << 20, 0);
  cuda::Buffer dev(host.size() * 4);
  RT_CU(cuMemsetD32Async(dev.get(), 0xC0FFEE, host.size(), nullptr));
  {
    const cuda::HostRegistration pinned(host.data(), host.size() * 4);
    CHECK(pinned.pinned()); // the H100 and H200 hosts measured allow it
    unsigned flags = 0;
    CHECK(cuda::driver().cuMemHostGetFlags(&flags, host.data()) == CUDA_SUCCESS);
    RT_CU(cuMemcpyDtoH(host.data(), dev.get(), host.size() * 4));
    CHECK(host.front() == 0xC0FFEEu);
    CHECK(host.back() == 0xC0FFEEu);
  }
  unsigned flags = 0; // unregistered at the end of its scope
  CHECK(cuda::driver().cuMemHostGetFlags(&flags, host.data()) != CUDA_SUCCESS);
  const cuda::HostRegistration none(nullptr, 0);
  CHECK_FALSE(none.pinned());
}
