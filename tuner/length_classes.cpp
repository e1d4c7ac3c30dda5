// reduce-tune: an offsets point's distinct segment lengths (tuner/length_classes.h).
#include "tuner/length_classes.h"

#include "tuner/parallel.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>

namespace reduce_tune {

std::optional<LengthClasses> length_classes(const Segmentation& s, std::size_t most) {
  const std::uint64_t n = s.shape.count;
  LengthClasses c;
  c.of.assign(n, 0);
  if (s.problem != Problem::segments) {
    c.lengths = {s.shape.length};
    return c;
  }
  if (s.offsets.size() != n + 1) return std::nullopt;
  std::uint64_t longest = 0;
  for (std::uint64_t i = 0; i < n; ++i) longest = std::max(longest, s.length(i));
  if (longest + 1 <= 4 * n + (1u << 16)) {
    // Lengths bounded by a few times the results: a table by length, marked in parallel.
    std::vector<std::atomic<std::uint32_t>> id(longest + 1);
    for (auto& v : id) v.store(0, std::memory_order_relaxed);
    parallel_for(n, std::uint64_t(1) << 16, [&](std::uint64_t lo, std::uint64_t hi) {
      for (std::uint64_t i = lo; i < hi; ++i) id[s.length(i)].store(1, std::memory_order_relaxed);
    });
    for (std::uint64_t len = 0; len <= longest; ++len)
      if (id[len].load(std::memory_order_relaxed)) {
        if (c.lengths.size() >= most) return std::nullopt;
        id[len].store(std::uint32_t(c.lengths.size()), std::memory_order_relaxed);
        c.lengths.push_back(len);
      }
    parallel_for(n, std::uint64_t(1) << 16, [&](std::uint64_t lo, std::uint64_t hi) {
      for (std::uint64_t i = lo; i < hi; ++i) c.of[i] = id[s.length(i)].load(std::memory_order_relaxed);
    });
    return c;
  }
  // Few segments over many elements: a map of the lengths seen.
  std::unordered_map<std::uint64_t, std::uint32_t> id;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (id.emplace(s.length(i), 0).second && id.size() > most) return std::nullopt;
  }
  for (const auto& kv : id) c.lengths.push_back(kv.first);
  std::sort(c.lengths.begin(), c.lengths.end());
  for (std::uint32_t k = 0; k < c.lengths.size(); ++k) id[c.lengths[k]] = k;
  for (std::uint64_t i = 0; i < n; ++i) c.of[i] = id[s.length(i)];
  return c;
}

} // namespace reduce_tune
