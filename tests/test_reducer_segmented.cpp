// GPU tests of the library's segmented calls (Reducer::reduce_rows / reduce_columns /
// reduce_segments and their typed helpers): every dtype and op against the CPU reference with the
// built-in defaults and with stored configurations, strided and unaligned rows, empty segments,
// bad input. test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "tuner/reference.h"
#include "reduce_tune/reducer.h"
#include "runtime/lookup.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/store_fixture.h"

#include <filesystem>
#include <vector>

using namespace reduce_tune;
namespace fs = std::filesystem;

namespace {

constexpr DType kDTypes[] = {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64, DType::bf16, DType::f16};
constexpr Op kOps[] = {Op::sum, Op::min, Op::max};

using Gpu = reduce_tune::testing::GpuContext;

using reduce_tune::testing::TempDir;

cuda::Buffer upload(const void* p, std::size_t bytes) {
  cuda::Buffer b(std::max<std::size_t>(bytes, 16));
  reduce_tune::cuda::upload_sync(b.get(), p, bytes);
  return b;
}

/// One segmented call on `in` (elements `a`), checked against the CPU. Returns "" when right.
std::string run_and_check(Reducer& r, const Gpu& g, Problem p, DType d, Op op, const HostArray& a,
                          CUdeviceptr in, const Segmentation& seg, CUdeviceptr offsets = 0,
                          std::uint64_t elements = 0) {
  const std::uint64_t results = seg.shape.count;
  cuda::Buffer out(std::max<std::size_t>(results * size_of(d), 16));
  RT_CU(cuMemsetD8Async(out.get(), 0xA5, results * size_of(d), nullptr));
  const void* d_in = reinterpret_cast<const void*>(in);
  void* d_out = reinterpret_cast<void*>(out.get());
  if (p == Problem::rows)
    r.reduce_rows(d, op, d_in, seg.shape.count, seg.shape.length, d_out, nullptr, seg.stride);
  else if (p == Problem::columns)
    r.reduce_columns(d, op, d_in, seg.shape.length, seg.shape.count, d_out, nullptr, seg.stride);
  else
    r.reduce_segments(d, op, d_in, reinterpret_cast<const std::int64_t*>(offsets), results, d_out,
                      nullptr, elements);
  RT_CU(cuCtxSynchronize());
  HostArray got;
  got.dtype = d;
  got.n = results;
  got.bytes.resize(results * size_of(d));
  RT_CU(cuMemcpyDtoH(got.bytes.data(), out.get(), got.bytes.size()));
  const Choice c = p == Problem::segments ? r.segments_config_for(d, op, d_in, results, elements)
                                           : r.config_for(d, op, p, seg.shape);
  Target t = g.target(d, op);
  t.problem = p;
  const Check k = check_segmented(segmented_reference(a, seg, op), got, seg, op, [&](std::uint64_t len) {
    return segment_depth(c.config, t, seg.shape, len);
  });
  if (k.ok) return "";
  return key(c.config) + " " + std::string(name(p)) + " " + std::string(name(d)) + " " +
         std::string(name(op)) + " " + std::to_string(seg.shape.count) + "x" +
         std::to_string(seg.shape.length) + ": " + k.expected + ", got " + k.observed;
}

/// Every dtype and op of the three problems at a few awkward shapes, through reducer `r`.
void check_all(Reducer& r, const Gpu& g) {
  struct Case { Problem p; Shape shape; std::uint64_t stride; };
  const Case cases[] = {
      {Problem::rows, {1000, 1}, 1},          {Problem::rows, {333, 77}, 80},
      {Problem::rows, {5, 300001}, 300003},   {Problem::rows, {4096, 1024}, 1024},
      {Problem::columns, {1, 5000}, 1},       {Problem::columns, {3001, 7}, 3005},
      {Problem::columns, {33, 100003}, 33},   {Problem::segments, {1, 0}, 0},
      {Problem::segments, {5000, 0}, 0},      {Problem::segments, {17, 0}, 0},
      // Shapes that take another path (runtime/arguments.cpp, matrix_call): copies (a dense
      // column of 1000 rows, a row of 7000 columns) and the 1-D reduction (one row, one dense
      // column), and their strided twins, which stay segmented.
      {Problem::rows, {1000, 1}, 3},          {Problem::columns, {7000, 1}, 7000},
      {Problem::rows, {1, 70001}, 70001},     {Problem::columns, {1, 5000}, 3},
  };
  for (const Case& cs : cases)
    for (DType d : kDTypes) {
      Segmentation seg;
      seg.problem = cs.p;
      seg.shape = cs.shape;
      seg.stride = cs.stride;
      cuda::Buffer offsets;
      if (cs.p == Problem::segments) {
        const std::uint64_t total = cs.shape.count * 300 + 11;
        seg.offsets = skewed_offsets(cs.shape.count, total, 99 + cs.shape.count);
        seg.shape.length = total / cs.shape.count;
        offsets = upload(seg.offsets.data(), seg.offsets.size() * sizeof(std::int64_t));
      }
      const HostArray a = make_input(d, seg.input_elements(), 5 + cs.shape.count);
      const cuda::Buffer in = upload(a.bytes.data(), a.bytes.size());
      // Offsets: a call without its element count (these inputs' allocations are small, so their
      // extent stands in for it) and one that gives it.
      const std::uint64_t span = seg.offsets.empty() ? 0 : std::uint64_t(seg.offsets.back() - seg.offsets.front());
      for (Op op : kOps)
        for (std::uint64_t elements : {std::uint64_t(0), span}) {
          const std::string bad = run_and_check(r, g, cs.p, d, op, a, in.get(), seg, offsets.get(), elements);
          INFO(bad);
          CHECK(bad.empty());
          if (span == 0) break;
        }
    }
}

} // namespace

TEST_CASE("reducer: segmented calls match the CPU with the built-in defaults", "[gpu][segmented]") {
  const Gpu g;
  const TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  for (bool det : {false, true}) {
    o.deterministic = det;
    Reducer r(0, o);
    CHECK(r.config_for(DType::f32, Op::sum, Problem::rows, {4096, 1024}).match == Match::builtin);
    check_all(r, g);
  }
}

TEST_CASE("reducer: segmented calls match the CPU with stored configurations", "[gpu][segmented]") {
  const Gpu g;
  const TempDir dir;
  const fs::path path = dir.path / "tuning.db";
  {
    std::vector<db::Measurement> rows;
    auto add = [&](const char* k, Problem p, Shape shape) {
      for (DType dt : kDTypes)
        for (Op op : kOps) rows.push_back(reduce_tune::testing::stored_row(k, dt, op, 1, p, shape));
    };
    add("rows_group.b256.w4.u2.v2.direct", Problem::rows, {1024, 64});
    add("rows_split.b512.u2.v4.g2.atomic", Problem::rows, {8, 1 << 20});
    add("columns_split.b256.u2.v2.g4.atomic", Problem::columns, {64, 1 << 16});
    add("segments_block.b128.u4.v1.direct", Problem::segments, {4096, 300});
    add("segments_group.b256.w4.u1.v2.direct", Problem::segments, {4096, 4}); // 2^14 elements
    reduce_tune::testing::write_gpu_store(path.string(), g.info, rows);
  }
  Options o;
  o.store_path = path.string();
  Reducer r(0, o);
  const Choice c = r.config_for(DType::f32, Op::sum, Problem::rows, {1024, 64});
  CHECK(c.match == Match::exact);
  CHECK(key(c.config) == "rows_group.b256.w4.u2.v2.direct");
  CHECK(r.config_for(DType::f32, Op::sum, Problem::rows, {3, 1 << 21}).config.variant == "rows_split");
  // Offsets by count and mean length where the call gives its element count; by the count alone
  // (the large total's) where it does not.
  const std::string small_key = "segments_group.b256.w4.u1.v2.direct", large_key = "segments_block.b128.u4.v1.direct";
  CHECK(key(r.config_for(DType::f32, Op::sum, Problem::segments, {4096, 4}).config) == small_key);
  CHECK(key(r.config_for(DType::f32, Op::sum, Problem::segments, {4096, 0}).config) == large_key);
  // What a call uses: the element count it gives; without it, the extent of an allocation of
  // fewer than 2^22 elements (the call spans no more), else the count alone.
  const cuda::Buffer small(4096 * 4 * sizeof(float)), large((std::size_t(1) << 22) * sizeof(float));
  const auto* d_small = reinterpret_cast<const void*>(small.get());
  const auto* d_large = reinterpret_cast<const void*>(large.get());
  CHECK(key(r.segments_config_for(DType::f32, Op::sum, d_small, 4096).config) == small_key);
  CHECK(key(r.segments_config_for(DType::f32, Op::sum, d_large, 4096).config) == large_key);
  CHECK(key(r.segments_config_for(DType::f32, Op::sum, d_large, 4096, 4096 * 4).config) == small_key);
  CHECK_THROWS_AS(r.segments_config_for(DType::f32, Op::sum, d_small, 4096, 4096 * 300), InvalidArgument);
  check_all(r, g);
}

TEST_CASE("reducer: segmented typed helpers, zero counts and bad input", "[gpu][segmented]") {
  const Gpu g;
  const TempDir dir;
  Options o;
  o.store_path = (dir.path / "absent.db").string();
  Reducer r(0, o);
  std::vector<float> h(12 * 5);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = float(i % 7) - 2.5f;
  const cuda::Buffer in = upload(h.data(), h.size() * sizeof(float));
  const cuda::Buffer out(64 * sizeof(float));
  const auto* d_in = reinterpret_cast<const float*>(in.get());
  auto* d_out = reinterpret_cast<float*>(out.get());
  std::vector<float> got(12);
  r.max_rows(d_in, 12, 5, d_out);
  RT_CU(cuMemcpyDtoH(got.data(), out.get(), 12 * sizeof(float)));
  for (std::size_t i = 0; i < 12; ++i)
    CHECK(got[i] == *std::max_element(h.begin() + long(i * 5), h.begin() + long(i * 5 + 5)));
  r.sum_columns(d_in, 12, 5, d_out);
  RT_CU(cuMemcpyDtoH(got.data(), out.get(), 5 * sizeof(float)));
  for (std::size_t j = 0; j < 5; ++j) {
    float s = 0;
    for (std::size_t i = 0; i < 12; ++i) s += h[i * 5 + j];
    CHECK(got[j] == Approx(s));
  }
  const std::vector<std::int64_t> offs = {0, 0, 7, 7, 60};
  const cuda::Buffer d_offs = upload(offs.data(), offs.size() * sizeof(std::int64_t));
  const auto* offsets = reinterpret_cast<const std::int64_t*>(d_offs.get());
  r.min_segments(d_in, offsets, 4, d_out);
  RT_CU(cuMemcpyDtoH(got.data(), out.get(), 4 * sizeof(float)));
  CHECK(got[0] == std::numeric_limits<float>::infinity()); // empty: the identity of min
  CHECK(got[1] == *std::min_element(h.begin(), h.begin() + 7));
  CHECK(got[2] == std::numeric_limits<float>::infinity());
  CHECK(got[3] == *std::min_element(h.begin() + 7, h.end()));
  // The element count picks the configuration only: the same results.
  const std::vector<float> before = got;
  RT_CU(cuMemsetD8Async(out.get(), 0, 4 * sizeof(float), nullptr));
  r.min_segments(d_in, offsets, 4, d_out, nullptr, 60);
  RT_CU(cuMemcpyDtoH(got.data(), out.get(), 4 * sizeof(float)));
  CHECK(std::equal(got.begin(), got.begin() + 4, before.begin()));

  // Nothing to do: no launch, no error, even with null pointers.
  r.sum_rows<float>(nullptr, 0, 5, nullptr);
  r.sum_columns<float>(nullptr, 5, 0, nullptr);
  r.sum_segments<float>(nullptr, nullptr, 0, nullptr);
  // Bad input names the problem.
  CHECK_THROWS_WITH(r.sum_rows(d_in, 12, 5, d_out, nullptr, 4), Catch::Contains("row_stride"));
  CHECK_THROWS_AS(r.sum_rows<float>(nullptr, 3, 5, d_out), InvalidArgument);
  CHECK_THROWS_AS(r.sum_rows(h.data(), 12, 5, d_out), InvalidArgument); // host memory
  CHECK_THROWS_WITH(r.sum_rows(d_in, std::uint64_t(1) << 62, 8, d_out), Catch::Contains("overflow"));
  CHECK_THROWS_AS(r.sum_segments(d_in, offs.data(), 4, d_out), InvalidArgument); // host offsets
  // More elements than d_in's allocation holds.
  CHECK_THROWS_WITH(r.sum_segments(d_in, offsets, 4, d_out, nullptr, std::uint64_t(1) << 40),
                    Catch::Contains("d_in") && Catch::Contains("room"));
  CHECK_THROWS_AS(r.sum_columns(d_in, 12, 5, static_cast<float*>(nullptr)), InvalidArgument);
  // The reducer is still usable.
  r.sum_rows(d_in, 12, 5, d_out);
  RT_CU(cuCtxSynchronize());
}
