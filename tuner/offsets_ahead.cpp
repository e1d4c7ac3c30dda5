// reduce-tune: the offsets sweep's layouts, drawn ahead (tuner/offsets_ahead.h).
#include "tuner/offsets_ahead.h"

#include "db/store.h"
#include "tuner/reference.h"

namespace reduce_tune {
namespace {

/// The offsets draws a small shape's sweep picks its heaviest from.
constexpr int kHeavyDraws = 8;

} // namespace

std::uint64_t shape_seed(Problem problem, Shape shape, std::uint64_t seed) {
  if (problem != Problem::segments || shape.elements() >= db::kCountOnlyMinTotal) return seed;
  std::uint64_t best = seed, heaviest = 0;
  for (int k = 0; k < kHeavyDraws; ++k) {
    const std::uint64_t s = seed + std::uint64_t(k) * 0x9e3779b97f4a7c15ull;
    const std::uint64_t longest = longest_segment(skewed_offsets(shape.count, shape.elements(), s));
    if (k == 0 || longest > heaviest) best = s, heaviest = longest;
  }
  return best;
}

DrawnLayout draw_layout(Problem problem, Shape shape, std::uint64_t seed) {
  DrawnLayout out;
  if (problem != Problem::segments) return out;
  out.offsets = skewed_offsets(shape.count, shape.elements(), shape_seed(problem, shape, seed));
  out.longest = longest_segment(out.offsets);
  return out;
}

LayoutAhead::~LayoutAhead() { drop(); }

void LayoutAhead::drop() {
  if (!next_.valid()) return;
  try {
    next_.get(); // the thread reads nothing of ours, but must end before we do
  } catch (...) {
    // Not taken: a failure to draw it (out of memory) is reported if it is ever drawn again.
  }
}

void LayoutAhead::start(Problem problem, Shape shape, std::uint64_t seed) {
  drop();
  problem_ = problem, shape_ = shape, seed_ = seed;
  next_ = std::async(std::launch::async, [=] { return draw_layout(problem, shape, seed); });
}

DrawnLayout LayoutAhead::take(Problem problem, Shape shape, std::uint64_t seed) {
  if (next_.valid() && problem_ == problem && shape_ == shape && seed_ == seed) {
    ++ahead_;
    return next_.get(); // rethrows what drawing it threw
  }
  drop();
  return draw_layout(problem, shape, seed);
}

} // namespace reduce_tune
