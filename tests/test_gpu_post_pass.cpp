// GPU tests of the segmented atomic finish with a post pass (kernels/catalogue.h,
// atomic_post_pass): mean, norm2, any and all (and bf16/f16 sums) through every atomic mapping of
// rows, columns and offsets segments against the CPU reference; the same launches captured into a
// CUDA graph and replayed on new data; and the Reducer's calls that a store points at those
// mappings, eager and captured. test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/ops.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/config_fixture.h"
#include "tests/graph_fixture.h"
#include "tests/segmented_gpu_fixture.h"
#include "tests/store_fixture.h"

#include <cstring>
#include <set>
#include <vector>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;
using testing::cfg;
using testing::upload;

namespace {

struct Case {
  Problem p;
  Shape shape;
  std::uint64_t stride;
};

// Columns tall and short (the split mappings' row slices), wide and odd; rows long enough for
// several blocks a row; offsets with empty and very long segments.
constexpr Case kCases[] = {
    {Problem::columns, {256, 4099}, 256},  {Problem::columns, {33, 10003}, 33},
    {Problem::columns, {3001, 17}, 3005},  {Problem::rows, {7, 70001}, 70003},
    {Problem::rows, {333, 777}, 780},      {Problem::segments, {3000, 0}, 0},
};

Segmentation segmentation(const Case& cs) {
  Segmentation seg;
  seg.problem = cs.p;
  seg.shape = cs.shape;
  seg.stride = cs.stride;
  if (cs.p == Problem::segments) {
    const std::uint64_t total = cs.shape.count * 200 + 11;
    seg.offsets = skewed_offsets(cs.shape.count, total, 41 + cs.shape.count);
    seg.shape.length = total / cs.shape.count;
  }
  return seg;
}

/// make_input with result s's elements all zero where s % 3 == 0 and one of them zero where
/// s % 3 == 1, so that any and all give both answers.
HostArray input_for(DType d, const Segmentation& seg, std::uint64_t seed) {
  HostArray a = make_input(d, seg.input_elements(), seed);
  const std::size_t es = size_of(d);
  auto zero = [&](std::uint64_t i) { std::memset(a.bytes.data() + i * es, 0, es); };
  for (std::uint64_t s = 0; s < seg.shape.count; ++s) {
    const std::uint64_t len = seg.length(s);
    if (s % 3 == 2 || len == 0) continue;
    for (std::uint64_t j = 0; j < (s % 3 == 0 ? len : 1); ++j) {
      const std::uint64_t k = s % 3 == 0 ? j : (s * 7) % len;
      if (seg.problem == Problem::columns) zero(k * seg.stride + s);
      else if (seg.problem == Problem::rows) zero(s * seg.stride + k);
      else zero(std::uint64_t(seg.offsets[s]) + k);
    }
  }
  return a;
}

/// One valid configuration of each atomic mapping of `problem` that takes the post pass for t.
std::vector<Config> post_configs(const Target& t, Problem problem) {
  std::vector<Config> out;
  for (const Variant& v : variants(problem)) {
    for (const Config& c : space(v)) {
      if (c.finish != Finish::atomic || invalid_reason(c, t)) continue;
      out.push_back(c);
      break;
    }
  }
  return out;
}

struct OpDtype {
  Op op;
  DType d;
};
constexpr OpDtype kPairs[] = {
    {Op::mean, DType::f32},  {Op::norm2, DType::f32}, {Op::any, DType::f32}, {Op::all, DType::f32},
    {Op::mean, DType::i32},  {Op::any, DType::i64},   {Op::all, DType::u32}, {Op::mean, DType::bf16},
    {Op::norm2, DType::f16}, {Op::sum, DType::bf16},  {Op::sum, DType::f16}, {Op::mean, DType::f64},
};

} // namespace

TEST_CASE("post pass: every atomic mapping of mean, norm2, any, all matches the CPU",
          "[gpu][post_pass][segmented]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  for (const OpDtype& od : kPairs)
    for (const Case& cs : kCases) {
      Target t = g.target(od.d, od.op);
      t.problem = cs.p;
      REQUIRE(atomic_post_pass(od.op, od.d, cs.p));
      const std::vector<Config> configs = post_configs(t, cs.p);
      REQUIRE(!configs.empty());
      std::vector<CompileJob> jobs;
      for (const Config& c : configs) jobs.push_back({c, od.d, od.op});
      for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
      const Segmentation seg = segmentation(cs);
      const HostArray data = input_for(od.d, seg, 7 + cs.shape.count);
      INFO(name(od.d) << " " << name(od.op) << " " << name(cs.p) << " " << seg.shape.count << " x "
                      << seg.shape.length);
      checked += testing::check_configs(g, configs, t, seg, data, od.op, 1);
    }
  CHECK(checked > 0);
}

TEST_CASE("post pass: the launches captured in a graph replay right on new data",
          "[gpu][post_pass][graphs]") {
  // In the results (float32 mean), in a workspace (any's 32-bit accumulators), offsets whose counts
  // the post pass reads, and the binned mapping's two kernels before it.
  testing::check_captured_cases(
      {
          {"columns_split.b256.u2.v4.g4.atomic", Op::mean, DType::f32,
           segmentation({Problem::columns, {256, 4099}, 256})},
          {"columns_split.b256.u2.v2.g8.atomic", Op::any, DType::f32,
           segmentation({Problem::columns, {33, 10003}, 33})},
          {"rows_split.b256.u2.v4.g4.atomic", Op::norm2, DType::f32,
           segmentation({Problem::rows, {7, 70001}, 70003})},
          {"segments_binned.b256.w8.u1.v2.g4.atomic", Op::all, DType::i32,
           segmentation({Problem::segments, {3000, 0}, 0})},
          {"segments_flat.b128.u4.v4.g16.atomic", Op::mean, DType::i32,
           segmentation({Problem::segments, {3000, 0}, 0})},
      },
      input_for);
}

TEST_CASE("post pass: the Reducer's calls through it, eager and captured",
          "[gpu][post_pass][graphs][reducer]") {
  testing::check_stored_calls(
      {
          {"columns_split.b256.u2.v4.g4.atomic", Op::mean, DType::f32,
           segmentation({Problem::columns, {256, 4099}, 256}), {256, 4099}},
          {"columns_split.b256.u2.v2.g4.atomic", Op::any, DType::f32,
           segmentation({Problem::columns, {33, 10003}, 33}), {33, 10003}},
          {"rows_split.b256.u2.v4.g4.atomic", Op::norm2, DType::f32,
           segmentation({Problem::rows, {7, 70001}, 70001}), {7, 70001}},
          {"segments_split.b256.u2.v4.g4.atomic", Op::all, DType::f32,
           segmentation({Problem::segments, {3000, 0}, 0}), {3000, 200}},
      },
      input_for);
}
