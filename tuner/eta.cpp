// reduce-tune: the sweep's time-left estimate.
#include "tuner/eta.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

namespace reduce_tune {

Eta::Eta(double prior_s_per_byte, Clock clock)
    : prior_b_(std::max(0.0, prior_s_per_byte)), clock_(std::move(clock)) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  last_ = clock_();
}

void Eta::plan(double bytes, std::size_t count) {
  if (count) left_[bytes] += count;
}

void Eta::start() { last_ = clock_(); }

void Eta::done(double bytes, std::size_t count) {
  auto it = left_.find(bytes);
  if (it == left_.end()) return;
  it->second -= std::min(it->second, count);
  if (it->second == 0) left_.erase(it);
}

void Eta::measured(double bytes) {
  const double now = clock_();
  const double y = std::max(0.0, now - last_);
  last_ = now;
  done(bytes, 1);
  // Welford's update: stable where the sums of squares of byte counts up to 2^30 would cancel.
  ++n_;
  const double dx = bytes - mean_x_;
  mean_x_ += dx / double(n_);
  mean_y_ += (y - mean_y_) / double(n_);
  m2_x_ += dx * (bytes - mean_x_);
  c_xy_ += dx * (y - mean_y_);
  max_x_ = std::max(max_x_, bytes);
}

void Eta::skipped(double bytes, std::size_t count) { done(bytes, count); }

double Eta::point_s(double bytes) const {
  if (n_ == 0) return -1;
  double b = prior_b_;
  double a = std::max(0.0, mean_y_ - b * mean_x_);
  // The data measure the byte term once a size was seen whose bytes cost (by the prior) at least
  // the fixed part; before that a slope fitted to noise at a few KiB would be extrapolated to GiB.
  const bool measurable = m2_x_ > 0 && (prior_b_ == 0 || prior_b_ * max_x_ >= a);
  if (measurable) {
    b = std::max(0.0, c_xy_ / m2_x_);
    a = mean_y_ - b * mean_x_;
    if (a < 0) { // through the origin instead
      const double sxx = m2_x_ + double(n_) * mean_x_ * mean_x_;
      const double sxy = c_xy_ + double(n_) * mean_x_ * mean_y_;
      a = 0;
      b = sxx > 0 ? std::max(0.0, sxy / sxx) : 0;
    }
  }
  return a + b * bytes;
}

double Eta::remaining_s() const {
  if (n_ == 0) return -1;
  double s = 0;
  for (const auto& [bytes, count] : left_) s += double(count) * point_s(bytes);
  return s;
}

std::string format_eta(double seconds) {
  if (!(seconds >= 0)) return "?";
  const auto t = static_cast<long long>(std::llround(seconds));
  char buf[48];
  if (t < 60) std::snprintf(buf, sizeof buf, "%llds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t / 60 % 60);
  return buf;
}

} // namespace reduce_tune
