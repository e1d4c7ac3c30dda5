// The GPU check's data made on the host (FastCheck::stage, which a sweep runs on the references'
// thread for the next shape): the values and scales the compare kernel reads, as the fast pass
// defines them (tuner/fast_bound.h), and no stage where the fast pass does not apply.
#include <catch2/catch.hpp>

#include "tuner/fast_bound.h"
#include "tuner/fast_check.h"
#include "tuner/reference.h"
#include "tests/segmentation_fixture.h"

#include <cstring>
#include <vector>

using namespace reduce_tune;

namespace {

using testing::rows_of;

double want_at(const FastStage& st, std::size_t i) {
  double w = 0;
  std::memcpy(&w, st.want.data() + i * sizeof(double), sizeof w);
  return w;
}

} // namespace

TEST_CASE("fast check stage: the expected values and scales of the fast pass, made on the host",
          "[fast_check][fast_stage]") {
  const std::uint64_t n = std::uint64_t(1) << 16;
  FastStage st; // reused from point to point, as the sweep does
  SECTION("float32 rows sums: bounded, one length") {
    const HostArray x = make_input(DType::f32, n, 5);
    for (Shape sh : {Shape{4096, 16}, Shape{8192, 8}}) {
      const Segmentation s = rows_of(sh);
      const std::vector<Reference> refs = segmented_reference(x, s, Op::sum);
      REQUIRE(FastCheck::stage(refs, s, Op::sum, DType::f32, FastCheck::kMinResults, st));
      CHECK(st.form == FastForm::bound);
      CHECK_FALSE(st.by_class);
      CHECK(st.shape == sh);
      CHECK(st.count == double(sh.length));
      REQUIRE(st.want.size() == sh.count * sizeof(double));
      REQUIRE(st.scale.size() == sh.count);
      for (std::size_t i = 0; i < sh.count; ++i) {
        REQUIRE(want_at(st, i) == fast_want(refs[i]));
        REQUIRE(st.scale[i] == scale_down(fast_scale(Op::sum, refs[i])));
      }
    }
  }
  SECTION("int32 rows sums: exact, the results' bits") {
    const HostArray x = make_input(DType::i32, n, 6);
    const Segmentation s = rows_of({4096, 16});
    const std::vector<Reference> refs = segmented_reference(x, s, Op::sum);
    REQUIRE(FastCheck::stage(refs, s, Op::sum, DType::i32, FastCheck::kMinResults, st));
    CHECK(st.form == FastForm::exact);
    REQUIRE(st.want.size() == 4096 * 4);
    for (std::size_t i = 0; i < 4096; ++i) REQUIRE(std::memcmp(st.want.data() + 4 * i, &refs[i].value.bits, 4) == 0);
  }
  SECTION("float32 offsets sums: bounds by length class") {
    const HostArray x = make_input(DType::f32, n, 7);
    Segmentation s;
    s.problem = Problem::segments;
    s.shape = {8192, 8};
    s.offsets = skewed_offsets(8192, n, 3);
    const std::vector<Reference> refs = segmented_reference(x, s, Op::sum);
    const bool few = length_classes(s, 8192 / FastCheck::kResultsPerLength).has_value();
    REQUIRE(FastCheck::stage(refs, s, Op::sum, DType::f32, FastCheck::kMinResults, st) == few);
    if (few) {
      CHECK(st.by_class);
      for (std::size_t i = 0; i < 8192; ++i) {
        REQUIRE(st.classes.lengths[st.classes.of[i]] == s.length(i));
        REQUIRE(want_at(st, i) == fast_want(refs[i]));
      }
    }
  }
  SECTION("where the fast pass does not apply") {
    const HostArray x = make_input(DType::f32, n, 8);
    const Segmentation s = rows_of({4096, 16});
    const std::vector<Reference> refs = segmented_reference(x, s, Op::sum);
    CHECK_FALSE(FastCheck::stage(refs, s, Op::sum, DType::f32, 8192, st)); // fewer results than it takes
    CHECK_FALSE(st.applies);
    CHECK_FALSE(FastCheck::stage(refs, s, Op::sum, DType::f64, FastCheck::kMinResults, st)); // another dtype
    CHECK_FALSE(FastCheck::stage(refs, rows_of({2048, 32}), Op::sum, DType::f32, FastCheck::kMinResults, st)); // another shape
  }
}
