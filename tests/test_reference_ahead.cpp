// The next shape's references made on a thread of their own (tuner/reference_ahead.h): the same
// bits as the general reference, for the shapes and ops they are asked for and no others.
#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "tuner/fast_check.h"
#include "tuner/reference.h"
#include "tuner/reference_ahead.h"
#include "tuner/sum_prefix.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

using namespace reduce_tune;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void require_same(const std::vector<Reference>& got, const std::vector<Reference>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("result " << i << " of " << got.size());
    REQUIRE(got[i].value == want[i].value);
    REQUIRE(same_bits(got[i].exact, want[i].exact));
    REQUIRE(same_bits(got[i].abs_sum, want[i].abs_sum));
    REQUIRE(got[i].count == want[i].count);
  }
}

Segmentation shape_of(Problem p, Shape sh, std::uint64_t seed) {
  Segmentation s;
  s.problem = p;
  s.shape = sh;
  if (p == Problem::segments) s.offsets = skewed_offsets(sh.count, sh.elements(), seed);
  else s.stride = p == Problem::rows ? sh.length : sh.count;
  return s;
}

} // namespace

TEST_CASE("references made ahead equal the general reference bit for bit", "[reference][reference_ahead]") {
  const std::uint64_t n = std::uint64_t(1) << 16;
  for (DType d : {DType::f32, DType::i32, DType::f64}) {
    const HostArray x = make_input(d, n, 11), y = make_input(d, n, 12);
    const SumPrefix prefix(x);
    for (Problem p : {Problem::rows, Problem::columns, Problem::segments}) {
      ReferenceAhead ahead;
      // Each shape's while the one before is "measured", as the sweep does; two ops, one of two inputs.
      const std::vector<Shape> shapes = {{n, 1}, {n / 3, 3}, {64, n / 64}, {1, n}};
      for (std::size_t k = 0; k < shapes.size(); ++k) {
        const Shape sh = shapes[k];
        const std::uint64_t seed = 5 + k;
        INFO(name(d) << " " << name(p) << " " << sh.count << " x " << sh.length);
        const std::vector<Op> ops = {Op::sum, Op::max, Op::dot};
        ahead.start(sh, [p, sh, seed] { return shape_of(p, sh, seed); }, x, &y, &prefix, ops);
        Segmentation seg;
        CHECK_FALSE(ahead.take_segmentation(Shape{sh.count + 1, sh.length}, seg)); // another shape
        REQUIRE(ahead.take_segmentation(sh, seg));
        CHECK_FALSE(ahead.take_segmentation(sh, seg)); // once
        const Segmentation want_seg = shape_of(p, sh, seed);
        REQUIRE(seg.offsets == want_seg.offsets);
        REQUIRE(seg.stride == want_seg.stride);
        std::vector<Reference> got(7); // memory the next start reuses
        bool from_prefix = true, straight = true;
        CHECK_FALSE(ahead.take(Op::min, got, from_prefix, straight)); // not asked for
        for (Op op : {Op::max, Op::sum, Op::dot}) {
          REQUIRE(ahead.take(op, got, from_prefix, straight));
          CHECK(from_prefix == (op == Op::sum && prefix.serves(want_seg, Op::sum)));
          CHECK_FALSE(straight); // no GPU check data asked for: every reference made
          require_same(got, op == Op::dot ? segmented_reference(x, y, want_seg, op) : segmented_reference(x, want_seg, op));
          CHECK_FALSE(ahead.take(op, got, from_prefix, straight)); // taken
        }
        // The same from the sweep's own dispatch on the calling thread.
        std::vector<Reference> here;
        const bool prefix_served = point_references(x, &y, &prefix, want_seg, Op::sum, here);
        CHECK(prefix_served == prefix.serves(want_seg, Op::sum));
        require_same(here, segmented_reference(x, want_seg, Op::sum));
      }
    }
  }
}

TEST_CASE("a shape's references are taken after the next shape is started, as the sweep does",
          "[reference][reference_ahead]") {
  // The sweep starts the next shape's references at the current shape's first op, then takes the
  // current shape's other ops: those must be the current shape's, made once.
  const std::uint64_t n = std::uint64_t(1) << 14;
  const HostArray x = make_input(DType::f32, n, 21);
  const std::vector<Shape> shapes = {{n / 16, 16}, {n / 4, 4}, {16, n / 16}};
  const std::vector<Op> ops = {Op::sum, Op::min, Op::max};
  ReferenceAhead ahead;
  std::vector<std::size_t> made; // shapes whose ops were made on the thread
  const auto start = [&](std::size_t k) {
    ReferenceAhead::Then then;
    then.made = [&made, k](Op, const std::vector<Reference>&, const Segmentation&) { made.push_back(k); };
    ahead.start(shapes[k], [k, &shapes] { return shape_of(Problem::rows, shapes[k], 0); }, x, nullptr, nullptr, ops,
                then);
  };
  start(0);
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    INFO("shape " << k);
    Segmentation seg;
    REQUIRE(ahead.take_segmentation(shapes[k], seg));
    std::vector<Reference> got;
    bool from_prefix = false, straight = false;
    REQUIRE(ahead.take(ops[0], got, from_prefix, straight));
    require_same(got, segmented_reference(x, seg, ops[0]));
    if (k + 1 < shapes.size()) start(k + 1); // the next shape's, before this one's other ops
    for (std::size_t i = 1; i < ops.size(); ++i) {
      REQUIRE(ahead.take(ops[i], got, from_prefix, straight));
      require_same(got, segmented_reference(x, seg, ops[i]));
    }
    CHECK_FALSE(ahead.take(ops[1], got, from_prefix, straight)); // taken
  }
  ahead.wait();
  CHECK(made.size() == shapes.size() * ops.size()); // each shape's ops made once
}

TEST_CASE("references made ahead throw where the shape takes them", "[reference][reference_ahead]") {
  const HostArray x = make_input(DType::f32, 1024, 3);
  ReferenceAhead ahead;
  // An op of two inputs without the second: refused, as the general reference refuses it.
  ahead.start({4, 256}, [] { return shape_of(Problem::rows, {4, 256}, 0); }, x, nullptr, nullptr, {Op::dot});
  Segmentation seg;
  CHECK_THROWS_AS(ahead.take_segmentation({4, 256}, seg), std::invalid_argument);
  ahead.start({4, 256}, [] { return shape_of(Problem::rows, {4, 256}, 0); }, x, nullptr, nullptr, {Op::sum});
  REQUIRE(ahead.take_segmentation({4, 256}, seg));
  ahead.start({2, 512}, []() -> Segmentation { throw std::runtime_error("no offsets"); }, x, nullptr, nullptr, {Op::sum});
  CHECK_THROWS_WITH(ahead.take_segmentation({2, 512}, seg), "no offsets");
  std::vector<Reference> out;
  bool from_prefix = false, straight = false;
  CHECK_FALSE(ahead.take(Op::sum, out, from_prefix, straight));
}

TEST_CASE("references left unmade for the GPU check's data made straight from the prefix sums equal the eager ones",
          "[reference][reference_ahead][fast_stage]") {
  const std::uint64_t n = std::uint64_t(1) << 16;
  for (DType d : {DType::f32, DType::i64}) {
    const HostArray x = make_input(d, n, 31);
    const SumPrefix prefix(x);
    const DType result = result_dtype(Op::sum, d);
    for (Problem p : {Problem::rows, Problem::segments, Problem::columns}) {
      ReferenceAhead ahead;
      std::size_t straights = 0;
      for (Shape sh : {Shape{8192, 8}, Shape{16, 4096}, Shape{4096, 16}}) {
        INFO(name(d) << " " << name(p) << " " << sh.count << " x " << sh.length);
        // As the sweep asks: the GPU check's data of sum straight from the prefix sums where they
        // serve it; the references of the rest (and the ops made from them, noted).
        FastStage stage;
        std::vector<Op> made_for;
        ReferenceAhead::Then then;
        then.straight = [&](Op op, const SumPrefix& sp, const Segmentation& sg) {
          return op == Op::sum && FastCheck::stage(sp, sg, op, result, FastCheck::kMinResults, stage);
        };
        then.made = [&](Op op, const std::vector<Reference>&, const Segmentation&) { made_for.push_back(op); };
        ahead.start(sh, [p, sh] { return shape_of(p, sh, 17); }, x, nullptr, &prefix, {Op::sum, Op::max}, then);
        Segmentation seg;
        REQUIRE(ahead.take_segmentation(sh, seg));
        const std::vector<Reference> eager = segmented_reference(x, seg, Op::sum);
        FastStage want;
        const bool applies = prefix.serves(seg, Op::sum) &&
                             FastCheck::stage(eager, seg, Op::sum, result, FastCheck::kMinResults, want);
        std::vector<Reference> got(3);
        bool from_prefix = false, straight = false;
        REQUIRE(ahead.take(Op::sum, got, from_prefix, straight));
        CHECK(straight == applies);
        CHECK(from_prefix == prefix.serves(seg, Op::sum));
        CHECK((std::find(made_for.begin(), made_for.end(), Op::sum) == made_for.end()) == straight);
        CHECK(std::find(made_for.begin(), made_for.end(), Op::max) != made_for.end());
        if (straight) {
          ++straights;
          CHECK(got.empty()); // unmade: nothing of another shape's
          REQUIRE(stage.applies);
          CHECK(stage.want == want.want);
          CHECK(std::memcmp(stage.scale.data(), want.scale.data(), want.scale.size() * sizeof(float)) == 0);
          // Made on demand, as the sweep makes them for a CPU check: the eager ones, bit for bit.
          CHECK(point_references(x, nullptr, &prefix, seg, Op::sum, got));
        }
        require_same(got, eager);
        REQUIRE(ahead.take(Op::max, got, from_prefix, straight));
        CHECK_FALSE(straight);
        require_same(got, segmented_reference(x, seg, Op::max));
      }
      // Rows sums straight at 8192 and 4096 results; columns never (not served).
      if (p == Problem::rows) CHECK(straights == 2);
      if (p == Problem::columns) CHECK(straights == 0);
    }
  }
}
