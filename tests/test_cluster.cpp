// The cluster mapping of the columns problem (columns_cluster and its evict-first twin: a
// thread-block cluster of c blocks per stripe of columns, their partials combined in rank order
// through distributed shared memory): its keys round-trip; the validity rules admit it on sm_90
// for every op, struct accumulators and non-commutative user reductions included, and refuse it
// below sm_90 and for sizes other than 2, 4 and 8; the sweep's space and the plan (a grid that is
// a multiple of the cluster, no post pass); the rendering; and NVRTC compiles it for sm_90. No GPU
// needed.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/runner.h"
#include "kernels/segmented.h"
#include "kernels/user_op.h"
#include "runtime/lookup.h"
#include "tests/config_fixture.h"
#include "tests/user_reductions.h"
#include "tuner/search.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace reduce_tune;
using reduce_tune::testing::cfg;
using reduce_tune::testing::reason;
using reduce_tune::testing::sm;
using reduce_tune::testing::first_nonzero_value;

namespace {

constexpr const char* kCluster = "columns_cluster.b256.c4.u4.v4.direct";
constexpr Shape kShapes[] = {{256, 65536}, {4096, 4096}, {1000, 17}, {3, 100000}};

Target columns(int cc, DType d, Op op) { return sm(cc, d, op, Problem::columns); }

} // namespace

TEST_CASE("cluster: keys name the cluster size and round-trip", "[cluster][config]") {
  const Config c = cfg("columns_cluster_streaming.b512.c8.u2.v1.direct");
  CHECK(c.cluster == 8);
  CHECK(c.block == 512);
  CHECK(c.unroll == 2);
  CHECK(c.vec == 1);
  CHECK(key(c) == "columns_cluster_streaming.b512.c8.u2.v1.direct");
  // Tokens in any order, the finish left to its default.
  CHECK(key(cfg("columns_cluster.u4.c2.v4.b256")) == "columns_cluster.b256.c2.u4.v4.direct");
  // Other variants take no cluster size, and a key without it keeps the field 0.
  std::string why;
  CHECK_FALSE(parse_key("columns_split.b256.c4.u2.v2.g4.twopass", &why));
  CHECK_THAT(why, Catch::Contains("takes no parameter 'c4'"));
  CHECK(cfg("columns_split.b256.u2.v2.g4.twopass").cluster == 0);
  CHECK_FALSE(parse_key("columns_cluster.b256.c4.c8.u4.v4.direct", &why));
  CHECK_THAT(why, Catch::Contains("repeats"));
  // Configurations differing in the cluster alone differ.
  Config other = c;
  other.cluster = 4;
  CHECK(other != c);
  CHECK(key(other) != key(c));
  // Every point of the sweep round-trips.
  for (const char* v : {"columns_cluster", "columns_cluster_streaming"})
    for (const Config& s : space(*find_variant(v))) {
      INFO(key(s));
      const auto back = parse_key(key(s));
      REQUIRE(back);
      CHECK(*back == s);
    }
}

TEST_CASE("cluster: valid on sm_90 for every op, refused below it", "[cluster][catalogue]") {
  for (const OpDescription& o : op_descriptions())
    for (DType d : {DType::i32, DType::u32, DType::i64, DType::f32, DType::f64, DType::bf16, DType::f16}) {
      if (op_unsupported(o.op, d)) continue;
      INFO(o.name << " " << name(d));
      CHECK(reason("columns_cluster.b256.c4.u4.v2.direct", columns(90, d, o.op)).empty());
      CHECK(reason("columns_cluster_streaming.b512.c8.u1.v1.direct", columns(100, d, o.op)).empty());
      CHECK_THAT(reason("columns_cluster.b256.c4.u4.v2.direct", columns(80, d, o.op)),
                 Catch::Contains("need sm_90") && Catch::Contains("sm_80"));
      CHECK(deterministic(cfg(kCluster), d));
    }
  // Non-commutative user reductions: the blocks combine in rank order, which is row order.
  const auto u = make_user_op(first_nonzero_value());
  REQUIRE(u->ordered());
  Target ut = columns(90, DType::f32, Op::sum);
  ut.user = u.get();
  CHECK(reason(kCluster, ut).empty());
  // The portable sizes only, and the cluster size belongs to the cluster mapping alone.
  for (const char* k : {"columns_cluster.b256.c1.u4.v4.direct", "columns_cluster.b256.c3.u4.v4.direct",
                        "columns_cluster.b256.c16.u4.v4.direct", "columns_cluster.b256.u4.v4.direct"}) {
    INFO(k);
    CHECK_THAT(reason(k, columns(90, DType::f32, Op::sum)), Catch::Contains("is not 2, 4 or 8"));
  }
  Config split = cfg("columns_split.b256.u2.v2.g4.twopass");
  split.cluster = 4;
  CHECK_THAT(invalid_reason(split, columns(90, DType::f32, Op::sum)).value_or(""),
             Catch::Contains("takes no cluster size"));
  // Shared memory: block x vec accumulators, as every columns mapping.
  CHECK_THAT(reason("columns_cluster.b1024.c2.u1.v4.direct", columns(90, DType::f32, Op::argmax)),
             Catch::Contains("48 KiB"));
  // A driver without cuLaunchKernelEx launches no cluster.
  Target old_driver = columns(90, DType::f32, Op::sum);
  old_driver.cluster_launch = false;
  CHECK_THAT(invalid_reason(cfg(kCluster), old_driver).value_or(""), Catch::Contains("cuLaunchKernelEx"));
  CHECK_FALSE(invalid_reason(cfg("columns_split.b256.u2.v2.g4.twopass"), old_driver));
  // The lookup's target carries the driver's answer from the GPU's key.
  DeviceKey gpu;
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  CHECK_FALSE(invalid_reason(cfg(kCluster), target_of(gpu, DType::f32, Op::argmax, Problem::columns, {})));
  gpu.cluster_launch = false;
  CHECK(invalid_reason(cfg(kCluster), target_of(gpu, DType::f32, Op::argmax, Problem::columns, {})));
  // It reduces columns only.
  CHECK_THAT(reason(kCluster, sm(90, DType::f32, Op::sum, Problem::rows)), Catch::Contains("reduces columns"));
}

TEST_CASE("cluster: the columns sweep holds every cluster size", "[cluster][segmented]") {
  const auto listed = variants(Problem::columns);
  for (const char* v : {"columns_cluster", "columns_cluster_streaming"}) {
    INFO(v);
    CHECK(std::any_of(listed.begin(), listed.end(), [&](const Variant& x) { return x.name == v; }));
    const std::vector<Config> s = space(*find_variant(v));
    REQUIRE_FALSE(s.empty());
    for (int n : {2, 4, 8})
      CHECK(std::count_if(s.begin(), s.end(), [&](const Config& c) { return c.cluster == n; }) ==
            std::ptrdiff_t(s.size() / 3));
    for (const Config& c : s) {
      INFO(key(c));
      CHECK(c.finish == Finish::direct);
      CHECK_FALSE(invalid_reason(c, columns(90, DType::f32, Op::argmax)));
      CHECK(invalid_reason(c, columns(89, DType::f32, Op::argmax)));
    }
  }
  // The twin is found as the plain configuration's.
  const auto plain = evict_first_twin_of(cfg("columns_cluster_streaming.b256.c4.u4.v4.direct"));
  REQUIRE(plain);
  CHECK(key(*plain) == kCluster);
}

TEST_CASE("cluster: the plan launches whole clusters, one kernel, no workspace",
          "[cluster][segmented]") {
  for (const char* k : {kCluster, "columns_cluster.b512.c2.u1.v1.direct",
                        "columns_cluster_streaming.b256.c8.u2.v2.direct"}) {
    const Config c = cfg(k);
    for (Op op : {Op::sum, Op::argmax, Op::var, Op::logsumexp})
      for (const Shape& shape : kShapes) {
        INFO(k << " " << name(op) << " " << shape.count << " columns of " << shape.length);
        const SegmentedPlan p = segmented_plan(c, columns(90, DType::f32, op), shape);
        CHECK(p.cluster == unsigned(c.cluster));
        CHECK(p.grid % p.cluster == 0);
        CHECK(p.grid >= p.cluster);
        CHECK((p.aux >> 11) == std::uint64_t(c.cluster)); // a slice of the rows a block
        const std::uint64_t tx = p.aux & 2047;
        CHECK(tx >= 1);
        CHECK(tx <= 8); // narrow stripes
        CHECK(p.block % tx == 0);
        // Every column in one stripe: stripes x tx x v cover the columns.
        const std::uint64_t stripes = p.grid / p.cluster;
        CHECK(stripes * tx * std::uint64_t(c.vec) >= shape.count);
        CHECK((stripes - 1) * tx * std::uint64_t(c.vec) < shape.count);
        CHECK_FALSE(p.post);
        CHECK_FALSE(p.fill);
        CHECK(p.post_bytes == 0);
        CHECK(p.work_bytes == 0);
        CHECK(p.partition_grid == 0);
        CHECK(p.chunk_grid == 0);
        CHECK(p.smem_bytes == unsigned(c.block * c.vec * accumulator_bytes(op, DType::f32)));
      }
  }
  // 65536 x 256: stripes of one thread (a vector of 4 columns), 64 stripes of 4 blocks.
  const SegmentedPlan tall = segmented_plan(cfg(kCluster), columns(90, DType::f32, Op::argmax), {256, 65536});
  CHECK((tall.aux & 2047) == 1);
  CHECK(tall.grid == 256 / 4 * 4);
  // A cluster of 8: stripes of 2 threads (32 bytes of a row), 32 stripes of 8 blocks.
  const SegmentedPlan eight =
      segmented_plan(cfg("columns_cluster.b512.c8.u4.v4.direct"), columns(90, DType::f32, Op::var), {256, 65536});
  CHECK((eight.aux & 2047) == 2);
  CHECK(eight.grid == 256);
  // Other mappings launch no cluster.
  CHECK(segmented_plan(cfg("columns_split.b256.u2.v2.g4.twopass"), columns(90, DType::f32, Op::argmax),
                       {256, 65536}).cluster == 0);
  CHECK(segmented_plan(cfg("columns_tile.b256.u2.v4.direct"), columns(90, DType::f32, Op::sum),
                       {256, 65536}).cluster == 0);
}

TEST_CASE("cluster: what the sweep passes over, and the rounding depth", "[cluster][segmented]") {
  // 17 rows over a cluster of 8: 3 rows a block for 256 threads down them.
  CHECK_THAT(pointless(cfg("columns_cluster.b256.c8.u1.v4.direct"), {1000, 17}).value_or(""),
             Catch::Contains("rows for"));
  CHECK_FALSE(pointless(cfg(kCluster), {256, 65536}));
  CHECK_FALSE(pointless(cfg("columns_cluster.b512.c8.u4.v1.direct"), {4096, 4096}));
  // u4 where a thread reads 2 rows of its block's slice.
  CHECK_THAT(pointless(cfg("columns_cluster.b256.c2.u4.v4.direct"), {4096, 128}).value_or(""),
             Catch::Contains("u2 reads them"));
  // The depth: a block's rows a thread, its tree and the cluster's combine of c partials.
  const Target t = columns(90, DType::f32, Op::sum);
  const std::uint64_t c2 = segment_depth(cfg("columns_cluster.b256.c2.u4.v4.direct"), t, {256, 65536}, 65536);
  const std::uint64_t c8 = segment_depth(cfg("columns_cluster.b256.c8.u4.v4.direct"), t, {256, 65536}, 65536);
  CHECK(c8 < c2); // shorter runs a thread
  CHECK(c2 == 65536 / 2 / 256 + 8 + 2 + 1);
}

TEST_CASE("cluster: rendered with its size", "[cluster][catalogue]") {
  const std::string s = render(cfg(kCluster), DType::f32, Op::argmax);
  CHECK_THAT(s, Catch::Contains("#define RT_CLUSTER 4") && Catch::Contains("#define RT_FINISH_DIRECT 1") &&
                    !Catch::Contains("RT_POST_PASS"));
  CHECK_THAT(render(cfg("columns_cluster_streaming.b256.c8.u4.v4.direct"), DType::f32, Op::sum),
             Catch::Contains("#define RT_CLUSTER 8") && Catch::Contains("#define RT_EVICT_FIRST 1"));
  CHECK_THAT(render(cfg("columns_split.b256.u2.v2.g4.twopass"), DType::f32, Op::sum),
             !Catch::Contains("#define RT_CLUSTER"));
  const auto u = make_user_op(first_nonzero_value());
  CHECK_THAT(render(cfg(kCluster), DType::f32, *u), Catch::Contains("#define RT_CLUSTER 4") &&
                                                        Catch::Contains("#define RT_ORDERED 1"));
}

// NVRTC needs no GPU: the cluster barrier, the rank and the mapping of another block's shared
// memory are sm_90 PTX.
TEST_CASE("cluster: the template compiles for sm_90", "[cluster][nvrtc]") {
  Nvrtc nvrtc;
  CompileCache none("");
  KernelLoader loader(nvrtc, none, nvrtc.target_for(90));
  std::vector<CompileJob> jobs;
  struct Pair {
    Op op;
    DType d;
  };
  for (const char* k : {kCluster, "columns_cluster_streaming.b512.c8.u2.v1.direct",
                        "columns_cluster.b256.c2.u1.v2.direct"})
    for (const Pair& p : {Pair{Op::sum, DType::f32}, Pair{Op::sum, DType::i32}, Pair{Op::sum, DType::bf16},
                          Pair{Op::argmax, DType::f32}, Pair{Op::var, DType::f32},
                          Pair{Op::logsumexp, DType::f32}}) {
      const Config c = cfg(k);
      REQUIRE_FALSE(invalid_reason(c, columns(90, p.d, p.op)));
      jobs.push_back({c, p.d, p.op});
    }
  for (const auto& o : compile_all(loader, jobs, 0)) {
    CHECK(o.error.substr(0, 2000).empty());
    CHECK_FALSE(o.compiled.image.empty());
  }
  const auto u = make_user_op(first_nonzero_value());
  const Compiled user = loader.compile(cfg(kCluster), DType::f32, u);
  CHECK_FALSE(user.image.empty());
  // The PTX holds the cluster's barrier, the mapping of another block's shared memory and the
  // check of the cluster's size; the tile mapping's none of them.
  const ArchTarget ptx = nvrtc.parse_target("compute_90");
  const std::string cluster = nvrtc.compile(render(cfg(kCluster), DType::f32, Op::var), "cluster.cu", ptx).image;
  CHECK_THAT(cluster, Catch::Contains("barrier.cluster.arrive.release.aligned") &&
                          Catch::Contains("barrier.cluster.wait.acquire.aligned") &&
                          Catch::Contains("mapa.u64") && Catch::Contains("%cluster_nctarank") &&
                          Catch::Contains("trap"));
  const std::string tile =
      nvrtc.compile(render(cfg("columns_tile.b256.u2.v4.direct"), DType::f32, Op::var), "tile.cu", ptx).image;
  CHECK_THAT(tile, !Catch::Contains("barrier.cluster") && !Catch::Contains("mapa"));
}

// The cluster size is a dimension the guided search moves along: configurations that differ in
// it alone are neighbours, not the same point.
TEST_CASE("cluster: the guided search climbs along the cluster size", "[cluster][search]") {
  const std::vector<Config> cs = space(*find_variant("columns_cluster"));
  // A smooth landscape with its optimum at c8 b512 u2 v2.
  auto cost = [](const Config& c) {
    return 10 + std::abs(std::log2(c.cluster / 8.0)) + std::abs(std::log2(c.block / 512.0)) +
           std::abs(std::log2(c.unroll / 2.0)) + std::abs(std::log2(c.vec / 2.0));
  };
  Hints h;
  h.seeds.push_back(cfg("columns_cluster.b256.c2.u1.v1.direct"));
  auto g = make_search(Strategy::guided, cs, h, *parse_budget("20"));
  REQUIRE(cs.size() > 20);
  double best = 1e300;
  Config best_c;
  std::size_t used = 0;
  bool moved_cluster_alone = false;
  std::optional<Config> last;
  while (auto i = g->next()) {
    ++used;
    const double t = cost(cs[*i]);
    g->observe(*i, t, true);
    if (last) {
      Config same = *last;
      same.cluster = cs[*i].cluster;
      moved_cluster_alone |= same == cs[*i] && last->cluster != cs[*i].cluster;
    }
    last = cs[*i];
    if (t < best) best = t, best_c = cs[*i];
  }
  CHECK(used <= 20);
  CHECK(moved_cluster_alone);
  INFO(key(best_c));
  CHECK(best == Approx(10));
  CHECK(best_c.cluster == 8);
}
