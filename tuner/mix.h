// reduce-tune: the counter-based generator of the sweeps' test data: a value depends only on
// (seed, index), so any thread may make any part of it and the data does not depend on how many
// threads made it.
#pragma once

#include <cstdint>

namespace reduce_tune {

/// A bijective 64-bit mix (the SplitMix64 finalizer after its increment).
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

} // namespace reduce_tune
