// reduce-tune: a small parallel for over the host's cores, for the sweeps' host work (inputs,
// offsets, references, hashes), which a sweep otherwise does on one core of many while the GPU
// waits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace reduce_tune {

/// The host's cores (1 where unknown).
inline unsigned host_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

/// f(lo, hi, t) for t in [0, threads): the items [n t / threads, n (t + 1) / threads), each range
/// on a thread of its own (the calling thread alone for one).
template <typename F> void parallel_ranges(std::uint64_t n, unsigned threads, F&& f) {
  threads = std::max(1u, threads);
  if (threads == 1) return void(f(std::uint64_t(0), n, 0u));
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads, t); });
  for (std::thread& th : pool) th.join();
}

/// f(lo, hi) over n items on one thread a core, at least `min_each` items a thread (a thread's
/// start costs tens of microseconds).
template <typename F> void parallel_for(std::uint64_t n, std::uint64_t min_each, F&& f) {
  const auto threads = unsigned(std::clamp<std::uint64_t>(n / std::max<std::uint64_t>(min_each, 1), 1, host_cores()));
  parallel_ranges(n, threads, [&](std::uint64_t lo, std::uint64_t hi, unsigned) { f(lo, hi); });
}

} // namespace reduce_tune
