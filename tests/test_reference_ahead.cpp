// The next shape's references made on a thread of their own (tuner/reference_ahead.h): the same
// bits as the general reference, for the shapes and ops they are asked for and no others.
#include <catch2/catch.hpp>

#include "tuner/reference.h"
#include "tuner/reference_ahead.h"
#include "tuner/sum_prefix.h"

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
        bool from_prefix = true;
        CHECK_FALSE(ahead.take(Op::min, got, from_prefix)); // not asked for
        for (Op op : {Op::max, Op::sum, Op::dot}) {
          REQUIRE(ahead.take(op, got, from_prefix));
          CHECK(from_prefix == (op == Op::sum && prefix.serves(want_seg, Op::sum)));
          require_same(got, op == Op::dot ? segmented_reference(x, y, want_seg, op) : segmented_reference(x, want_seg, op));
          CHECK_FALSE(ahead.take(op, got, from_prefix)); // taken
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
  bool from_prefix = false;
  CHECK_FALSE(ahead.take(Op::sum, out, from_prefix));
}
