// reduce-tune: the distinct segment lengths of an offsets point, and each segment's index among
// them. The GPU check's bound of a result depends on its segment's length (the rounding depth and
// the count), so a measurement's bounds are computed once a distinct length and looked up on the
// device by each result's class, not computed and uploaded once a result.
#pragma once

#include "tuner/reference.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace reduce_tune {

struct LengthClasses {
  std::vector<std::uint64_t> lengths; ///< the distinct lengths, ascending
  std::vector<std::uint32_t> of;      ///< per result: its length's index in `lengths`
};

/// The classes of `s`'s results (offsets segments; rows and columns: one class), or nullopt
/// where they number more than `most` (a measurement's bounds would then cost the host about what
/// the CPU check does). Empty segments (and decreasing offsets) have length 0.
std::optional<LengthClasses> length_classes(const Segmentation& s, std::size_t most);

} // namespace reduce_tune
