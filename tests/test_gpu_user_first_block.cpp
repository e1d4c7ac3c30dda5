// GPU tests of a user reduction's first-block finish on the 1-D problem: its blocks combine into
// the result with a compare-and-swap loop (the combine is code), and its first block writes the
// identity. A sum of squares (float32, float64) and a maximum (float32, int32), on data-sized and
// grid-stride grids, at sizes from one element to 2^24, launched back to back over three rounds
// with no host step between them (the ticket state each launch leaves is the next one's), each
// result checked against the reduction's CPU evaluation. test_gpu_main.cpp skips them (exit 4)
// where there is no GPU.
#include <catch2/catch.hpp>

#include "kernels/user_op.h"
#include "tests/gpu_fixture.h"
#include "tuner/reference.h"
#include "tuner/user_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace reduce_tune;
using reduce_tune::testing::gpu;
using reduce_tune::testing::Gpu;

namespace {

Reduction sum_of_squares() {
  Reduction r;
  r.map = "x * x";
  r.inputs = {DType::f32, DType::f64};
  // In long double: a float64 sum of 2^24 squares summed in double on the CPU is itself off by
  // more than the bound of the GPU's tree (the bound takes the CPU evaluation as exact).
  r.check = [](const double* x, std::size_t n) {
    long double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<long double>(x[i]) * x[i];
    return static_cast<double>(s);
  };
  return r;
}

Reduction maximum(DType dtype) {
  Reduction r;
  r.combine = "a > b ? a : b";
  r.identity = dtype == DType::i32 ? "-2147483647 - 1" : "-INFINITY";
  r.inputs = {dtype};
  r.check = [](const double* x, std::size_t n) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    return m;
  };
  return r;
}

} // namespace

TEST_CASE("user reductions finish in the first block: data and stride grids, back to back, against the CPU",
          "[gpu][user]") {
  Gpu& g = gpu();
  std::vector<Config> configs;
  for (const char* k : {"vectorized.b256.u4.v2.g0.shfl.firstblock", // data-sized: thousands of blocks at 2^24
                        "vectorized.b128.u1.v2.g0.shfl.firstblock", "streaming.b256.u2.v2.g8.shfl.firstblock",
                        "vectorized.b512.u2.v2.g4.shfl.firstblock",
                        "vectorized.b256.u4.v2.g0.shfl.lastblock"}) // shares the state's bytes
    configs.push_back(*parse_key(k));
  const std::vector<std::uint64_t> sizes = {1, 1000, (std::uint64_t(1) << 20) + 3, std::uint64_t(1) << 24};
  for (auto [r, d] : {std::pair{sum_of_squares(), DType::f32}, std::pair{sum_of_squares(), DType::f64},
                      std::pair{maximum(DType::f32), DType::f32}, std::pair{maximum(DType::i32), DType::i32}}) {
    const std::shared_ptr<const UserOp> u = make_user_op(r);
    INFO(u->name << " (" << r.map << ", " << r.combine << ") " << name(d));
    Target t = g.target(d, Op::sum);
    t.user = u.get();
    const DType result = u->result_dtype(d);
    const std::size_t es = size_of(d), rs = size_of(result);
    std::vector<Kernel> kernels;
    for (const Config& c : configs) {
      INFO(key(c));
      REQUIRE_FALSE(invalid_reason(c, t));
      kernels.push_back(g.loader.load(c, d, u));
    }
    std::vector<UserExpected> expected;
    std::vector<cuda::Buffer> inputs;
    Workspace ws;
    for (std::uint64_t n : sizes) {
      const HostArray data = make_input(d, n, 91 + n);
      expected.push_back(user_expected(*u, data));
      REQUIRE(expected.back().checked);
      inputs.emplace_back(n * es);
      reduce_tune::cuda::upload_sync(inputs.back().get(), data.bytes.data(), n * es);
      for (const Config& c : configs) ws.reserve(plan(c, t, n), d, n); // no reallocation below
    }
    const int rounds = 3;
    const std::size_t slots = rounds * sizes.size() * configs.size();
    cuda::Buffer results(slots * rs);
    RT_CU(cuMemsetD8Async(results.get(), 0xA5, slots * rs, g.stream.get()));
    std::size_t slot = 0;
    for (int round = 0; round < rounds; ++round)
      for (std::size_t i = 0; i < sizes.size(); ++i)
        for (std::size_t k = 0; k < configs.size(); ++k)
          enqueue(kernels[k], plan(configs[k], t, sizes[i]), inputs[i].get(), sizes[i], ws, g.stream.get(),
                  results.get() + rs * slot++);
    std::vector<unsigned char> got(slots * rs);
    RT_CU(cuMemcpyDtoHAsync(got.data(), results.get(), got.size(), g.stream.get()));
    RT_CU(cuStreamSynchronize(g.stream.get()));
    slot = 0;
    std::size_t checked = 0;
    for (int round = 0; round < rounds; ++round)
      for (std::size_t i = 0; i < sizes.size(); ++i)
        for (std::size_t k = 0; k < configs.size(); ++k) {
          Scalar v;
          v.dtype = result;
          std::memcpy(&v.bits, got.data() + rs * slot++, rs);
          const Check c = check_user(*u, d, expected[i], 0, v.to_double(), summation_depth(configs[k], t, sizes[i]));
          INFO(key(configs[k]) << " n=" << sizes[i] << " round " << round << ": got " << c.observed << ", expected "
                               << c.expected << " (error " << c.error << ", bound " << c.bound << ")");
          CHECK(c.ok);
          ++checked;
        }
    CHECK(checked == slots);
  }
}
