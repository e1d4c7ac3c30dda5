// Offsets segments for the fast check's tests: empty segments and segments of one element first,
// then skewed ones (skewed_offsets: empty ones among them too).
#pragma once

#include "tuner/reference.h"

#include <cstdint>
#include <vector>

namespace reduce_tune::testing {

inline Segmentation offsets_with_edges(std::uint64_t skewed, std::uint64_t total, std::uint64_t seed) {
  // Empty, 1, empty, 1, 3, empty, 1.
  std::vector<std::int64_t> off = {0, 0, 1, 1, 2, 5, 5, 6};
  const std::int64_t head = off.back();
  const std::vector<std::int64_t> tail = skewed_offsets(skewed, total, seed);
  for (std::size_t k = 1; k < tail.size(); ++k) off.push_back(head + tail[k]);
  Segmentation s;
  s.problem = Problem::segments;
  s.shape = {off.size() - 1, std::max<std::uint64_t>(1, std::uint64_t(off.back()) / (off.size() - 1))};
  s.offsets = std::move(off);
  return s;
}

} // namespace reduce_tune::testing
