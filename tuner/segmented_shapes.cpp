// reduce-tune: the default grid of shapes of a segmented problem's sweep (tuner/segmented_shapes.h).
#include "tuner/segmented_shapes.h"

#include <algorithm>
#include <cstdint>

namespace reduce_tune {

std::vector<Shape> default_shapes(Problem problem) {
  std::vector<Shape> out;
  if (problem == Problem::segments) {
    // A call without its element count is looked up by the segment count alone (the lengths
    // are on the device), so the counts run up to one segment per element. 2^16 elements, at the
    // odd powers between the others' counts, serve the calls that give their element count.
    for (int e = 1; e < 16; e += 2) out.push_back({1ull << e, 1ull << (16 - e)});
    for (int total : {20, 24})
      for (int e = 8; e <= total; e += 2) out.push_back({1ull << e, 1ull << (total - e)});
    // Segments of mean 2 at 2^24 elements: between the staged mapping's one element a segment and
    // the flat mappings' four (on an H100 each took up to 1.2x the other's time at its mean).
    out.push_back({1ull << 23, 2});
    out.push_back({1ull << 16, (1ull << 28) >> 16});
    return out;
  }
  // Every power of two (the best mapping changes within a factor of 2 of length) and two odd ones.
  std::vector<std::uint64_t> lengths = {3, 1000};
  for (int e = 0; e <= 24; ++e) lengths.push_back(1ull << e);
  std::sort(lengths.begin(), lengths.end());
  for (std::uint64_t total : {1ull << 16, 1ull << 20, 1ull << 24})
    for (std::uint64_t len : lengths)
      if (len <= total) out.push_back({std::max<std::uint64_t>(1, (total + len / 2) / len), len});
  // 2^28 elements (1 GiB of float32): a medium and a long row length; lookups of other lengths
  // at that size take the 2^24 shapes', which are as memory-bound.
  for (std::uint64_t len : {1ull << 12, 1ull << 20}) out.push_back({(1ull << 28) / len, len});
  return out;
}

} // namespace reduce_tune
