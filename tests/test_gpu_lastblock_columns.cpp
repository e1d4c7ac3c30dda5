// GPU tests of the columns' last-block finish (Finish::lastblock on columns_split: partials
// folded in row-slice order by the last block of a group of slices, then of a stripe, in the main
// kernel): argmax, var and logsumexp (and argmin, std, sum, a bf16 argmax) against the CPU
// reference on a single stripe of hundreds of row slices, a stripe narrower than its width, many
// stripes whose last is cut short, uneven groups of slices and a single slice; each configuration
// launched twice with one workspace (the counters the first launch left are the second's); a
// non-commutative user reduction against its own CPU evaluation; the launch captured in a CUDA
// graph and replayed three times; the Reducer's calls that a store points at it, eager, warm and
// captured. test_gpu_main.cpp skips them (exit 4) where there is no GPU.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/ops.h"
#include "kernels/user_op.h"
#include "tests/config_fixture.h"
#include "tests/fixtures.h"
#include "tests/gpu_fixture.h"
#include "tests/graph_fixture.h"
#include "tests/segmented_gpu_fixture.h"
#include "tests/store_fixture.h"
#include "tests/user_reductions.h"

#include <cstring>
#include <random>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using testing::Gpu;
using testing::gpu;
using testing::column_layout;
using testing::upload;
using testing::first_nonzero_value;

namespace {


HostArray input_for(DType d, const Segmentation& seg, std::uint64_t seed) {
  return make_input(d, seg.input_elements(), seed);
}

struct Case {
  const char* what;
  Segmentation seg;
  const char* key;
  std::uint64_t min_slices; ///< the plan must cut the rows into at least these (132 SMs or more)
};

std::vector<Case> cases() {
  return {
      // One stripe of 256 columns (64 threads of 4), 500 or more row slices: groups of about 23.
      {"256 columns", column_layout(256, 20011, 256), "columns_split.b256.u2.v4.g4.lastblock", 33},
      // 33 columns in a stripe 64 wide, hundreds of slices.
      {"33 columns", column_layout(33, 10003, 33), "columns_split.b512.u1.v2.g8.lastblock", 33},
      // 12 stripes of 256 columns, the last of 184; 44 or more slices.
      {"3000 columns", column_layout(3000, 2001, 3000), "columns_split.b256.u1.v1.g4.lastblock", 33},
      // 4 stripes, 10 slices of 4 rows: groups of 4, 4 and 2.
      {"1000 columns of 37 rows", column_layout(1000, 37, 1003), "columns_split_streaming.b256.u4.v1.g2.lastblock", 10},
      // A single slice: each block writes its columns.
      {"3001 columns of 4 rows", column_layout(3001, 4, 3005), "columns_split.b256.u4.v1.g2.lastblock", 1},
  };
}

struct OpDtype {
  Op op;
  DType d;
};
constexpr OpDtype kPairs[] = {{Op::argmax, DType::f32}, {Op::var, DType::f32}, {Op::logsumexp, DType::f32}};
// On the first and third cases only.
constexpr OpDtype kMore[] = {{Op::argmin, DType::i32}, {Op::std_, DType::f64}, {Op::sum, DType::f32},
                             {Op::argmax, DType::bf16}};

/// The configuration of `cs` for `d`: 8-byte elements take v2 where the key has v4.
Config config_for(const Case& cs, DType d) {
  Config c = cfg(cs.key);
  if (size_of(d) * c.vec > 16) c.vec = 2;
  return c;
}

} // namespace

TEST_CASE("columns lastblock: argmax, var, logsumexp and more match the CPU, twice in a row",
          "[gpu][lastblock_columns][segmented]") {
  Gpu& g = gpu();
  std::size_t checked = 0;
  const std::vector<Case> all = cases();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Case& cs = all[i];
    std::vector<OpDtype> pairs(std::begin(kPairs), std::end(kPairs));
    if (i == 0 || i == 2) pairs.insert(pairs.end(), std::begin(kMore), std::end(kMore));
    for (const OpDtype& od : pairs) {
      Target t = g.target(od.d, od.op);
      t.problem = Problem::columns;
      const Config c = config_for(cs, od.d);
      INFO(cs.what << " " << key(c) << " " << name(od.d) << " " << name(od.op));
      REQUIRE_FALSE(invalid_reason(c, t));
      const SegmentedPlan p = segmented_plan(c, t, cs.seg.shape);
      const std::uint64_t slices = p.aux >> 11;
      INFO(slices << " row slices");
      REQUIRE(slices >= cs.min_slices);
      REQUIRE(p.post == false);
      REQUIRE((p.ticket_bytes != 0) == (slices > 1));
      const HostArray data = input_for(od.d, cs.seg, 11 + cs.seg.shape.count);
      if (slices == 1) { // no finish state: check_configs wants one, so launch it here
        const CUstream s = g.stream.get();
        const Kernel k = g.loader.load(c, od.d, od.op);
        const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
        HostArray got = testing::result_array(od.op, od.d, cs.seg.shape.count);
        const cuda::Buffer out(got.bytes.size() + testing::kPoisonedTail);
        Workspace ws;
        ws.reserve(p);
        testing::check_launches(k, c, t, cs.seg, p, in.get(), 0, out, ws, got,
                                segmented_reference(data, cs.seg, od.op), od.op, s, 2);
        checked += cs.seg.shape.count;
        continue;
      }
      checked += testing::check_configs(g, {c}, t, cs.seg, data, od.op, 2);
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("columns lastblock: a non-commutative user reduction keeps its row order",
          "[gpu][lastblock_columns][user]") {
  Gpu& g = gpu();
  const CUstream s = g.stream.get();
  const Reduction r = first_nonzero_value();
  const std::shared_ptr<const UserOp> u = make_user_op(r);
  REQUIRE(u->ordered());
  std::size_t checked = 0;
  for (const Case& cs : cases()) {
    const Segmentation& seg = cs.seg;
    Target t = g.target(DType::f32, Op::sum);
    t.problem = Problem::columns;
    t.user = u.get();
    const Config c = cfg(cs.key);
    INFO(cs.what << " " << cs.key);
    REQUIRE_FALSE(invalid_reason(c, t));
    const HostArray data = testing::sparse_input(seg.input_elements(), unsigned(seg.shape.count));
    const cuda::Buffer in = upload(data.bytes.data(), data.bytes.size());
    const std::vector<double> want = testing::user_expected(r, data, seg);
    const cuda::Buffer out(want.size() * 8);
    const Kernel k = g.loader.load(c, DType::f32, u);
    const SegmentedPlan p = segmented_plan(c, t, seg.shape);
    REQUIRE_FALSE(p.post);
    Workspace ws;
    ws.reserve(p);
    for (int rep = 0; rep < 2; ++rep) { // twice: the counters as the first launch left them
      INFO("launch " << rep);
      testing::check_user_launch(k, p, seg, in.get(), 0, out, ws, want, s);
    }
    checked += want.size();
  }
  CHECK(checked > 0);
}

TEST_CASE("columns lastblock: the launch captured in a graph replays right on new data",
          "[gpu][lastblock_columns][graphs]") {
  testing::check_captured_cases(
      {
          {"columns_split.b256.u2.v4.g4.lastblock", Op::argmax, DType::f32, column_layout(256, 20011, 256)},
          {"columns_split.b512.u1.v2.g8.lastblock", Op::var, DType::f32, column_layout(33, 10003, 33)},
          {"columns_split.b256.u1.v1.g4.lastblock", Op::logsumexp, DType::f32, column_layout(3000, 2001, 3000)},
      },
      input_for);
}

TEST_CASE("columns lastblock: the Reducer's calls through it, eager, warm and captured",
          "[gpu][lastblock_columns][graphs][reducer]") {
  testing::check_stored_calls(
      {
          {"columns_split.b256.u2.v4.g4.lastblock", Op::argmax, DType::f32, column_layout(256, 20011, 256),
           {256, 20011}},
          {"columns_split.b512.u1.v2.g8.lastblock", Op::logsumexp, DType::f32, column_layout(33, 10003, 33),
           {33, 10003}},
          {"columns_split.b256.u1.v1.g4.lastblock", Op::var, DType::f32, column_layout(3000, 2001, 3000),
           {3000, 2001}},
      },
      input_for);
}
