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
  if (s.problem != Problem::segments) {
    c.of.assign(n, 0);
    c.lengths = {s.shape.length};
    return c;
  }
  c.of.resize(n); // every entry written below
  if (s.offsets.size() != n + 1) return std::nullopt;
  // Segment.length's rule, inline: 2^24 segments are read three times.
  const std::int64_t* off = s.offsets.data();
  const auto length = [off](std::uint64_t i) {
    return off[i + 1] > off[i] ? std::uint64_t(off[i + 1] - off[i]) : std::uint64_t(0);
  };
  const unsigned threads = unsigned(std::clamp<std::uint64_t>(n >> 16, 1, host_cores()));
  std::vector<std::uint64_t> most_of(threads, 0);
  parallel_ranges(n, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    std::uint64_t m = 0;
    for (std::uint64_t i = lo; i < hi; ++i) m = std::max(m, length(i));
    most_of[t] = m;
  });
  const std::uint64_t longest = *std::max_element(most_of.begin(), most_of.end());
  if (longest + 1 <= 4 * n + (1u << 16)) {
    // Lengths bounded by a few times the results: a table by length, marked in parallel.
    std::vector<std::atomic<std::uint32_t>> id(longest + 1);
    for (auto& v : id) v.store(0, std::memory_order_relaxed);
    parallel_ranges(n, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
      for (std::uint64_t i = lo; i < hi; ++i) { // written once a length: the cores share the lines read
        std::atomic<std::uint32_t>& seen = id[length(i)];
        if (!seen.load(std::memory_order_relaxed)) seen.store(1, std::memory_order_relaxed);
      }
    });
    for (std::uint64_t len = 0; len <= longest; ++len)
      if (id[len].load(std::memory_order_relaxed)) {
        if (c.lengths.size() >= most) return std::nullopt;
        id[len].store(std::uint32_t(c.lengths.size()), std::memory_order_relaxed);
        c.lengths.push_back(len);
      }
    parallel_ranges(n, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
      for (std::uint64_t i = lo; i < hi; ++i) c.of[i] = id[length(i)].load(std::memory_order_relaxed);
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
