// GPU tests of the segmented problems: every configuration of the sweep's space is right for rows,
// columns and offsets segments at awkward shapes (odd lengths, strided and unaligned rows, empty
// and very long segments), checked result by result against the CPU; the input is never modified,
// and the mappings without atomics give the same bits on every launch.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"

#include <numeric>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

/// One layout to check: the segmentation, and where the input starts in the buffer (elements past
/// a 16-byte-aligned allocation, so vector loads see unaligned starts).
struct Case {
  Segmentation seg;
  std::uint64_t shift = 0;         ///< elements the input starts past an aligned address
  std::uint64_t offsets_shift = 0; ///< offsets the offsets start past an aligned address
};

Case rows(std::uint64_t r, std::uint64_t c, std::uint64_t pad = 0, std::uint64_t shift = 0) {
  Case k;
  k.seg.problem = Problem::rows;
  k.seg.shape = {r, c};
  k.seg.stride = c + pad;
  k.shift = shift;
  return k;
}

Case columns(std::uint64_t r, std::uint64_t c, std::uint64_t pad = 0, std::uint64_t shift = 0) {
  Case k = rows(r, c, pad, shift);
  k.seg.problem = Problem::columns;
  k.seg.shape = {c, r};
  return k;
}

Case segments(std::vector<std::int64_t> offsets, std::uint64_t shift = 0) {
  Case k;
  k.seg.problem = Problem::segments;
  const std::uint64_t count = offsets.size() - 1;
  k.seg.shape = {count, count ? std::uint64_t(offsets.back()) / count : 0};
  k.seg.offsets = std::move(offsets);
  k.shift = shift;
  return k;
}

// Runs every valid configuration of the problem's sweep space (or those of `only`) on each case;
// returns the number of results checked.
std::size_t check_problem(Problem problem, DType d, Op op, const std::vector<Case>& cases,
                          const std::vector<std::string>& only = {}) {
  Gpu& g = gpu();
  Target t = g.target(d, op);
  t.problem = problem;
  std::vector<CompileJob> jobs;
  for (const Variant& v : variants(problem))
    if (only.empty() || std::find(only.begin(), only.end(), v.name) != only.end())
      for (const Config& c : space(v))
        if (!invalid_reason(c, t)) jobs.push_back({c, d, op});
  REQUIRE(!jobs.empty());
  for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
  const std::size_t es = size_of(d);
  const CUstream s = g.stream.get();
  Workspace ws;
  std::size_t checked = 0;
  for (const Case& k : cases) {
    const Segmentation& seg = k.seg;
    const std::uint64_t elements = seg.input_elements();
    const HostArray data = make_input(d, elements + k.shift, 7000 + elements);
    HostArray view = data; // the reference reads the input from its shifted start
    view.bytes.erase(view.bytes.begin(), view.bytes.begin() + std::ptrdiff_t(k.shift * es));
    const std::vector<Reference> refs = segmented_reference(view, seg, op);
    cuda::Buffer in(std::max<std::size_t>(data.bytes.size(), 16));
    reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
    const std::size_t off_at = k.offsets_shift * 8;
    cuda::Buffer offsets(std::max<std::size_t>(off_at + seg.offsets.size() * 8, 8));
    if (!seg.offsets.empty())
      reduce_tune::cuda::upload_sync(offsets.get() + off_at, seg.offsets.data(), seg.offsets.size() * 8);
    cuda::Buffer out(std::max<std::size_t>(seg.shape.count * es, 8));
    HostArray got;
    got.dtype = d;
    got.n = seg.shape.count;
    got.bytes.resize(seg.shape.count * es);
    for (const CompileJob& j : jobs) {
      const Kernel kern = g.loader.load(j.config, d, op);
      const SegmentedPlan p = segmented_plan(j.config, t, seg.shape);
      ws.reserve(p);
      RT_CU(cuMemsetD8Async(out.get(), 0xA5, seg.shape.count * es, s));
      const SegmentedArgs a =
          testing::segmented_args(seg, in.get() + k.shift * es, offsets.get() + off_at, out.get());
      // Twice: the second launch finds the self-resetting state as the first left it. Without
      // atomics (the direct finish) it gives the same bits as the first.
      HostBytes first;
      for (int rep = 0; rep < 2; ++rep) {
        const Check c = testing::launch_checked(kern, j.config, t, seg, p, a, ws, got, refs, op, s);
        INFO(key(j.config) << " " << name(d) << " " << name(op) << " " << name(problem) << " "
                           << seg.shape.count << " x " << seg.shape.length << " stride "
                           << seg.stride << " shift " << k.shift << " offsets shift "
                           << k.offsets_shift << " launch " << rep
                           << ": got " << c.observed << ", expected " << c.expected << " (error "
                           << c.error << ", bound " << c.bound << ")");
        REQUIRE(c.ok);
        if (rep == 0) first = got.bytes;
        else if (j.config.finish != Finish::atomic) REQUIRE(got.bytes == first);
        checked += seg.shape.count;
      }
    }
    HostArray after;
    after.bytes.resize(data.bytes.size());
    RT_CU(cuMemcpyDtoH(after.bytes.data(), in.get(), after.bytes.size()));
    CHECK(after.bytes == data.bytes);
  }
  return checked;
}

const std::vector<Case>& row_cases() {
  static const std::vector<Case> c = {
      rows(1, 1), rows(7, 1), rows(1000, 3), rows(33, 100, 0, 1), rows(300, 33, 5),
      rows(5, 70001), rows(2, (1u << 20) + 3, 0, 3), rows(100000, 4), rows(1, 1u << 22)};
  return c;
}

const std::vector<Case>& column_cases() {
  static const std::vector<Case> c = {
      columns(1, 1), columns(1000, 3), columns(100, 1000), columns(3, 5001, 0, 1),
      columns(70001, 2), columns(257, 67, 9, 2), columns(1u << 16, 1), columns(4096, 64)};
  return c;
}

// Skewed, with empty segments, one very long segment, offsets that start past 0, a run of
// 300,000 one-element segments (many segment ends per tile of the merge mapping), and 10^5 empty
// segments around one of 5,000 elements (segment ends only).
const std::vector<Case>& segment_cases() {
  static const std::vector<Case> c = [] {
    std::vector<Case> v;
    v.push_back(segments(skewed_offsets(1000, 50000, 1)));
    v.push_back(segments(skewed_offsets(100, 300000, 2), 1));
    v.push_back(segments(skewed_offsets(20000, 1u << 22, 3)));
    Case unaligned = segments(skewed_offsets(5000, 20000, 6), 1); // offsets 8 bytes past 16
    unaligned.offsets_shift = 1;
    v.push_back(std::move(unaligned));
    v.push_back(segments({0, 0, 5, 5, 5, 1u << 21, (1u << 21) + 1, (1u << 21) + 1}));
    v.push_back(segments({7, 7, 7, 8, 1000, 1000, 1000, 200000, 200001, 200001}));
    v.push_back(segments({0, 1}));
    std::vector<std::int64_t> ones(300001);
    std::iota(ones.begin(), ones.end(), 0);
    v.push_back(segments(std::move(ones), 3));
    std::vector<std::int64_t> empties(100001, 0);
    for (std::size_t i = 50000; i < empties.size(); ++i) empties[i] = 5000;
    v.push_back(segments(std::move(empties)));
    return v;
  }();
  return c;
}

} // namespace

TEST_CASE("segmented: every rows configuration is right at awkward shapes", "[gpu][segmented]") {
  for (DType d : {DType::i32, DType::f32})
    CHECK(check_problem(Problem::rows, d, Op::sum, row_cases()) > 10000);
}

TEST_CASE("segmented: every columns configuration is right at awkward shapes", "[gpu][segmented]") {
  for (DType d : {DType::i32, DType::f32})
    CHECK(check_problem(Problem::columns, d, Op::sum, column_cases()) > 10000);
}

TEST_CASE("segmented: every offsets configuration is right, empty and long segments included",
          "[gpu][segmented][merge]") {
  for (DType d : {DType::i32, DType::f32})
    CHECK(check_problem(Problem::segments, d, Op::sum, segment_cases()) > 10000);
}

TEST_CASE("segmented: min and max and every dtype through the same templates",
          "[gpu][segmented][merge]") {
  const std::vector<Case> r = {rows(33, 100, 0, 1), rows(3, 70001)};
  const std::vector<Case> c = {columns(257, 67, 9, 2), columns(5000, 3)};
  const std::vector<Case> s = {segments(skewed_offsets(500, 200000, 4), 1)};
  for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64})
    for (Op op : {Op::sum, Op::min, Op::max}) {
      CHECK(check_problem(Problem::rows, d, op, r, {"rows_group", "rows_split"}) > 0);
      CHECK(check_problem(Problem::columns, d, op, c) > 0);
      CHECK(check_problem(Problem::segments, d, op, s,
                          {"segments_binned", "segments_block", "segments_merge",
                           "segments_flat", "segments_staged"}) > 0);
    }
}

TEST_CASE("segmented: bf16 and f16, every configuration, sum in float32, exact min and max",
          "[gpu][half][segmented]") {
  const std::vector<Case> r = {rows(33, 100, 0, 1), rows(3, 70001), rows(1000, 7, 2, 3)};
  const std::vector<Case> c = {columns(257, 67, 9, 2), columns(5000, 3), columns(100, 1000, 0, 5)};
  const std::vector<Case> s = {segments(skewed_offsets(500, 200000, 4), 1),
                               segments({0, 0, 5, 5, 5, 1u << 20, (1u << 20) + 1})};
  for (DType d : {DType::bf16, DType::f16})
    for (Op op : {Op::sum, Op::min, Op::max}) {
      CHECK(check_problem(Problem::rows, d, op, r) > 0);
      CHECK(check_problem(Problem::columns, d, op, c) > 0);
      CHECK(check_problem(Problem::segments, d, op, s) > 0);
    }
}

// The flat mapping where its tiles and blocks cut: a segment over thousands of blocks with several
// tiles each, empty segments on tile and block boundaries (tiles of 2048 and 4096 elements start
// at multiples of them in an aligned input) and at the very end of an input that ends on a tile
// boundary. And runs of thousands of segments beside long ones, segments up to a quarter as many as
// the elements, more tiles than blocks: skewed lengths, and 2^20 empty segments between 2^16
// one-element ones and one long one. The staged mapping's blocks of segments meet the same: blocks
// whose elements fit, blocks with a long segment (listed chunks), blocks of empty ones.
TEST_CASE("segmented: the flat and staged mappings are right where tiles and blocks cut segments and "
          "where empty ones sit on their boundaries",
          "[gpu][segmented][merge]") {
  std::vector<std::int64_t> bounded = {0, 0};
  for (std::int64_t e = 1024, k = 0; e <= (1 << 20); e += 1024, ++k)
    for (std::int64_t r = 0; r <= k % 4; ++r) bounded.push_back(e); // 0-3 empties after each
  bounded.push_back(1 << 20);
  std::vector<std::int64_t> crowded(1 << 16);
  std::iota(crowded.begin(), crowded.end(), 0); // 2^16 - 1 one-element segments
  const std::int64_t last = crowded.back();
  crowded.insert(crowded.end(), 1 << 20, last); // 2^20 empty ones
  crowded.push_back(1 << 22);                   // a long one
  const std::vector<Case> cases = {segments({0, (1 << 23) + 5}, 1), segments(std::move(bounded)),
                                   segments({0, 4096, 4096, 4096, 1 << 22, 1 << 22}),
                                   segments(skewed_offsets(1 << 19, 1 << 22, 5), 3),
                                   segments(std::move(crowded), 2)};
  const std::vector<std::string> flat = {"segments_flat", "segments_flat_streaming",
                                         "segments_flat_carry", "segments_flat_carry_streaming",
                                         "segments_staged"};
  for (DType d : {DType::i32, DType::f32})
    CHECK(check_problem(Problem::segments, d, Op::sum, cases, flat) > 1000);
  CHECK(check_problem(Problem::segments, DType::f64, Op::max, cases, flat) > 1000);
}

TEST_CASE("segmented: offsets out of order (outside the contract) never fault the merge, flat and "
          "staged mappings, nor spoil the next call",
          "[gpu][segmented][merge]") {
  Gpu& g = gpu();
  Target t = g.target(DType::f32, Op::sum);
  t.problem = Problem::segments;
  // The second: segments that overlap over many blocks of either mapping.
  const std::vector<std::int64_t> bad[] = {{0, 0, 5, 5, 3, 1 << 21, 7, (1 << 21) + 1, 2},
                                           {0, 0, 5, 5, 3, 1 << 21, 7, (1 << 21) + 1, 1 << 20}};
  const std::uint64_t count = bad[0].size() - 1, elements = (1 << 21) + 1;
  const HostArray data = make_input(DType::f32, elements, 99);
  cuda::Buffer in(data.bytes.size()), offsets(2 * bad[0].size() * 8), out(count * 4);
  reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
  for (int i = 0; i < 2; ++i)
    reduce_tune::cuda::upload_sync(offsets.get() + i * bad[0].size() * 8, bad[i].data(), bad[i].size() * 8);
  // After each, a call within the contract on the same workspace (what a mapping keeps there must
  // not carry a bad call into a good one): one segment over every block of the grid, then an empty
  // and a one-element one.
  Segmentation good;
  good.problem = Problem::segments;
  good.offsets = {0, 1 << 21, 1 << 21, (1 << 21) + 1};
  good.shape = {good.offsets.size() - 1, 0};
  const std::vector<Reference> refs = segmented_reference(data, good, Op::sum);
  cuda::Buffer good_offsets(good.offsets.size() * 8);
  reduce_tune::cuda::upload_sync(good_offsets.get(), good.offsets.data(), good.offsets.size() * 8);
  HostArray got;
  got.dtype = DType::f32;
  got.n = good.shape.count;
  got.bytes.resize(good.shape.count * 4);
  Workspace ws;
  std::size_t launched = 0, checked = 0;
  std::vector<Config> configs = space(*find_variant("segments_merge"));
  for (const char* v : {"segments_flat", "segments_flat_carry", "segments_staged"})
    for (const Config& c : space(*find_variant(v))) configs.push_back(c);
  for (int i = 0; i < 2; ++i) {
    for (const Config& c : configs) {
      if (invalid_reason(c, t)) continue;
      const Kernel k = g.loader.load(c, DType::f32, Op::sum);
      const SegmentedPlan p = segmented_plan(c, t, {count, 0});
      ws.reserve(p);
      SegmentedArgs a;
      a.in = in.get();
      a.offsets = offsets.get() + i * bad[0].size() * 8;
      a.out = out.get();
      a.shape = {count, 0};
      enqueue(k, p, a, ws, g.stream.get());
      // A read outside the buffers or a hang would fail here (or time out the test).
      RT_CU(cuStreamSynchronize(g.stream.get()));
      ++launched;
      const SegmentedPlan gp = segmented_plan(c, t, good.shape);
      ws.reserve(gp);
      a.offsets = good_offsets.get();
      a.shape = good.shape;
      enqueue(k, gp, a, ws, g.stream.get());
      RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), out.get(), got.bytes.size(), g.stream.get()));
      RT_CU(cuStreamSynchronize(g.stream.get()));
      const Check r = check_segmented(refs, got, good, Op::sum, [&](std::uint64_t len) {
        return segment_depth(c, t, good.shape, len);
      });
      INFO(key(c) << ": got " << r.observed << ", expected " << r.expected);
      REQUIRE(r.ok);
      ++checked;
    }
  }
  CHECK(launched >= 40);
  CHECK(checked == launched);
}
