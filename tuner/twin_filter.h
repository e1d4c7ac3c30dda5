// reduce-tune: which evict-first twins a segmented sweep measures at a point.
#pragma once

#include "db/store.h"
#include "reduce_tune/config.h"

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace reduce_tune {

/// Which evict-first twins (kernels/segmented.h, evict_first_twin_of) the sweep measures at one
/// shape, dtype and op: those whose plain configuration is among the `keep` fastest measured there.
/// A twin changes only the loads' cache policy, so it is worth measuring only where the plain
/// configuration is already near the best; that keeps a problem's sweep time near what its plain
/// variants take (the plain ones are measured first).
class TwinFilter {
public:
  static constexpr std::size_t kKeep = 6;
  explicit TwinFilter(std::size_t keep = kKeep) : keep_(keep) {}
  /// A configuration's median (valid measurements only; twins' own are not ranked).
  void measured(const Config& c, double median_us);
  /// Seeds the ranks from a point's stored measurements (oldest first), as a resumed sweep finds
  /// them: the valid ones of the plain configurations in `sweep_keys` (this sweep's own), the
  /// latest of each. A resumed sweep skips the plain configurations the store holds, so without
  /// their stored times it would rank the twins on the few it measures again, and measure twins an
  /// uninterrupted run never measures; seeded, it decides every twin as that run did.
  void stored(const std::vector<db::Measurement>& ms, const std::set<std::string>& sweep_keys);
  /// Why the twin `c` is not measured, or nullopt (measure it: not a twin, its plain configuration
  /// ranks among the `keep` fastest, or it was not measured in this sweep).
  std::optional<std::string> skip(const Config& c) const;

private:
  std::size_t keep_;
  std::map<std::string, double> median_us_; // key of a plain configuration -> its median
};

} // namespace reduce_tune
