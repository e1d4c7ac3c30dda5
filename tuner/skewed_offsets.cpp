// reduce-tune: the offsets sweep's skewed segment layouts (tuner/reference.h), on the host's
// cores: 2^24 segments' lengths (a pow each) took a core a few hundred ms a shape.
#include "tuner/mix.h"
#include "tuner/parallel.h"
#include "tuner/reference.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace reduce_tune {

std::uint64_t longest_segment(const std::vector<std::int64_t>& offsets) {
  const std::uint64_t segments = offsets.empty() ? 0 : offsets.size() - 1;
  // On the host's cores from 2^20 segments (a maximum: the same on any number of threads).
  const auto threads = unsigned(std::clamp<std::uint64_t>(segments >> 20, 1, host_cores()));
  std::vector<std::int64_t> part(threads, 0);
  parallel_ranges(segments, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    std::int64_t longest = 0;
    for (std::uint64_t i = lo; i < hi; ++i) longest = std::max(longest, offsets[i + 1] - offsets[i]);
    part[t] = longest;
  });
  return std::uint64_t(*std::max_element(part.begin(), part.end()));
}

std::vector<std::int64_t> skewed_offsets(std::uint64_t segments, std::uint64_t total, std::uint64_t seed,
                                         unsigned threads) {
  std::vector<std::int64_t> off(segments + 1, 0);
  if (segments == 0) return off;
  if (!threads) threads = unsigned(std::clamp<std::uint64_t>(segments >> 16, 1, host_cores()));
  // Pareto lengths (shape 1.2: the mean is 6x the scale, 88 % of the segments are shorter than
  // the mean, and the longest of N is about N^(1/1.2) times the scale), scaled to the total and
  // rounded down, so short segments come out empty. Each length depends on (seed, i) alone.
  // Written in full below: not zeroed first on this thread (128 MiB at 2^24 segments).
  const std::unique_ptr<double[]> len = std::make_unique_for_overwrite<double[]>(segments);
  parallel_ranges(segments, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
    for (std::uint64_t i = lo; i < hi; ++i) {
      const double u = double((mix(seed * 0x2545f4914f6cdd1dull + i) >> 11) + 1) / double(1ull << 53);
      len[i] = std::pow(u, -1 / 1.2) - 1;
    }
  });
  double sum = 0;
  for (std::uint64_t i = 0; i < segments; ++i) sum += len[i]; // in order: the same scale on any number of threads
  const double scale = sum > 0 ? double(total) / sum : 0;
  // The offsets are the running sum of the rounded lengths capped at the total: min(total, a + b)
  // taken in turn is min(total, the whole sum) (no length is negative), so each chunk sums its own
  // and starts from the capped sum of the chunks before it.
  std::vector<std::uint64_t> part(threads, 0);
  parallel_ranges(segments, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    std::uint64_t s = 0;
    for (std::uint64_t i = lo; i < hi; ++i) s += std::uint64_t(len[i] * scale);
    part[t] = s;
  });
  std::vector<std::uint64_t> start(threads, 0);
  for (unsigned t = 1; t < threads; ++t) start[t] = std::min<std::uint64_t>(total, start[t - 1] + part[t - 1]);
  parallel_ranges(segments, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    std::uint64_t at = start[t];
    for (std::uint64_t i = lo; i < hi; ++i) {
      at = std::min<std::uint64_t>(total, at + std::uint64_t(len[i] * scale));
      off[i + 1] = std::int64_t(at);
    }
  });
  off[segments] = std::int64_t(total); // rounding leftovers go to the last segment
  return off;
}

} // namespace reduce_tune
