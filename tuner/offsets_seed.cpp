// reduce-tune: the seed of an offsets shape (tuner/offsets_seed.h).
#include "tuner/offsets_seed.h"

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

} // namespace reduce_tune
