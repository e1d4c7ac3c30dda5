// reduce-tune: the seed an offsets shape's segment lengths are drawn from in the sweeps.
#pragma once

#include "reduce_tune/config.h"

#include <cstdint>

namespace reduce_tune {

/// The seed of a shape's lengths. Offsets below db::kCountOnlyMinTotal elements: of kHeavyDraws
/// draws from `seed` on, the one whose longest segment holds the most elements. There a mapping
/// that gives a segment to one block or group wins or loses by its longest segment, whose share
/// varies most from draw to draw where segments are few (2^9 segments of mean 2^7: 6 % in one
/// draw, a third in another); tuned on the heaviest, its pick holds for heavy mixes too. Other
/// problems: `seed`.
std::uint64_t shape_seed(Problem problem, Shape shape, std::uint64_t seed);

} // namespace reduce_tune
