// reduce-tune: how a sweep picks what to measure at each point. Exhaustive: every candidate, in
// the sweep's own order. Guided or random: a search (tuner/search.h) within the run's budget,
// seeded (tuner/seeds.h) from what the runtime's lookup would use there (this GPU's earlier tuning,
// the shipped or carried tuning) and the best of the points this run searched before, plus the
// built-in default. The GPU sweeps and their tests with a fake back end share it.
#pragma once

#include "tuner/search.h"
#include "tuner/seeds.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace reduce_tune {

class SweepSearch {
public:
  /// The run's points, with their candidates' count each (for the budget's plan).
  SweepSearch(Strategy strategy, const Budget& budget, const std::vector<std::pair<PointId, std::size_t>>& points);

  Strategy strategy() const { return strategy_; }
  SeedBook& seeds() { return book_; }

  /// Searches point `p` over `candidates`: `measure(i)` measures candidate i and returns its
  /// time in microseconds (infinity: it failed its check; NaN: it was not measured, e.g. skipped
  /// as pointless); `stop()` (optional) ends the search early, before a measurement. Exhaustive
  /// visits every candidate in order. Returns how many candidates were visited.
  std::size_t run(const PointId& p, const std::vector<Config>& candidates,
                  const std::function<double(std::size_t)>& measure, const std::function<bool()>& stop = {});

  /// What is known of a point without measuring it (the runtime's lookup), a seed beside the
  /// points searched before; nullopt: nothing. Asked of every planned point before the first
  /// search, as the nearby points' answers direct the probes of unseeded variants (Hints::nearby),
  /// the points searched later included, as the replay has them.
  void known(std::function<std::optional<Config>(const PointId&)> f) { known_ = std::move(f); }

  /// The limit of `p` (its candidates when the point was not planned).
  std::size_t limit(const PointId& p, std::size_t candidates) const;

  /// Seconds spent seeding the points so far (the lookups, the hints), for `tune --profile`.
  double seeding_s() const { return seeding_s_; }

private:
  Strategy strategy_;
  Budget budget_;
  std::map<PointId, std::size_t> limits_;
  SeedBook book_;
  std::function<std::optional<Config>(const PointId&)> known_;
  bool known_asked_ = false; ///< known_ asked of every planned point
  double seeding_s_ = 0;
};

struct DeviceKey;
namespace db { class Store; }

/// The search of a sweep with strategy `strategy` and `budget` over `points` on `device`: the
/// runtime's lookup over `store` (the user's, may be null) and the shipped tuning seeds each point
/// (unless it gives the built-in default, which is a seed of its own).
SweepSearch sweep_search(Strategy strategy, const Budget& budget,
                         const std::vector<std::pair<PointId, std::size_t>>& points, const db::Store* store,
                         const DeviceKey& device);

} // namespace reduce_tune
