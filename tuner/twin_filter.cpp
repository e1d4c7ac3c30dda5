// reduce-tune: which evict-first twins a segmented sweep measures at a point (tuner/twin_filter.h).
#include "tuner/twin_filter.h"

#include "kernels/segmented.h"

#include <algorithm>

namespace reduce_tune {

void TwinFilter::measured(const Config& c, double median_us) {
  if (!evict_first_twin_of(c)) median_us_[key(c)] = median_us;
}

void TwinFilter::stored(const std::vector<db::Measurement>& ms, const std::set<std::string>& sweep_keys) {
  for (const db::Measurement& m : ms) {
    if (!m.valid || !sweep_keys.count(m.key)) continue;
    const std::optional<Config> c = parse_key(m.key);
    if (c && !evict_first_twin_of(*c)) median_us_[m.key] = m.median_us; // oldest first: the latest wins
  }
}

std::optional<std::string> TwinFilter::skip(const Config& c) const {
  const std::optional<Config> plain = evict_first_twin_of(c);
  if (!plain) return std::nullopt;
  const auto it = median_us_.find(key(*plain));
  if (it == median_us_.end()) return std::nullopt;
  const auto faster = std::size_t(std::count_if(median_us_.begin(), median_us_.end(),
                                                [&](const auto& m) { return m.second < it->second; }));
  if (faster < keep_) return std::nullopt;
  return "its plain configuration " + it->first + " ranks " + std::to_string(faster + 1) +
         " at this shape; only the fastest " + std::to_string(keep_) + " get evict-first twins";
}

} // namespace reduce_tune
