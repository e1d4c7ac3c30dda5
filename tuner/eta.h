// reduce-tune: the sweep's time-left estimate. The remaining points' work at the rate observed so
// far, with the clock injectable so that a test can drive it.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace reduce_tune {

/// Estimates how long the rest of a sweep takes. A point of the sweep costs a fixed time (launches,
/// L2 flushes, synchronisation, the store's commit) plus a time per byte of input (every timed
/// repetition reads it): t(bytes) = a + b * bytes. Both are fitted by least squares to the time
/// each measured point took (the interval since the previous one ended, so data preparation and
/// everything else between points is counted too). While the sizes seen so far are too small for
/// the byte term to be measurable (each point mostly fixed cost), b is the prior the caller gives
/// (e.g. the repetitions' reads at the device's bandwidth), so the first minutes of a sweep that
/// ends with 1 GiB inputs do not promise a finish in seconds. Points that were already stored
/// (skipped on resume) cost nothing and teach nothing.
class Eta {
public:
  /// Seconds on a monotonic clock.
  using Clock = std::function<double()>;

  /// `prior_s_per_byte`: b until the data measure it (0: none). `clock` defaults to steady_clock.
  explicit Eta(double prior_s_per_byte = 0, Clock clock = {});

  /// Adds `count` points of `bytes` input each to the work ahead.
  void plan(double bytes, std::size_t count);
  /// Starts the clock: the first measured point's time runs from here.
  void start();
  /// A point of `bytes` was measured; its time is the interval since the previous point (or start).
  void measured(double bytes);
  /// `count` points of `bytes` were done without measuring (already stored, or skipped).
  void skipped(double bytes, std::size_t count = 1);

  /// Seconds left for the planned points not yet done; negative while nothing was measured.
  double remaining_s() const;
  /// The fitted cost of one point of `bytes` (seconds); negative while nothing was measured.
  double point_s(double bytes) const;

private:
  void done(double bytes, std::size_t count);

  double prior_b_;
  Clock clock_;
  double last_ = 0;
  std::map<double, std::size_t> left_; // bytes per point -> points of that size not yet done
  // Running least-squares sums (Welford), over measured points: x = bytes, y = seconds.
  std::size_t n_ = 0;
  double mean_x_ = 0, mean_y_ = 0, m2_x_ = 0, c_xy_ = 0, max_x_ = 0;
};

/// `seconds` for a progress line: "42s", "3m05s", "1h02m"; "?" when negative (not known yet).
std::string format_eta(double seconds);

} // namespace reduce_tune
