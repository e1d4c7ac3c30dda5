// reduce-tune: the sweep's search at each point (tuner/sweep_search.h).
#include "tuner/sweep_search.h"

#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "runtime/shipped.h"

#include <memory>

namespace reduce_tune {

SweepSearch::SweepSearch(Strategy strategy, const Budget& budget,
                         const std::vector<std::pair<PointId, std::size_t>>& points)
    : strategy_(strategy), budget_(budget) {
  std::vector<std::size_t> sizes;
  for (const auto& [p, n] : points) sizes.push_back(n);
  const std::vector<std::size_t> plan = budget.plan(sizes);
  for (std::size_t i = 0; i < points.size(); ++i) limits_[points[i].first] = plan[i];
}

std::size_t SweepSearch::limit(const PointId& p, std::size_t candidates) const {
  const auto it = limits_.find(p);
  return std::min(candidates, it == limits_.end() ? budget_.limit(candidates) : it->second);
}

std::size_t SweepSearch::run(const PointId& p, const std::vector<Config>& candidates,
                             const std::function<double(std::size_t)>& measure, const std::function<bool()>& stop) {
  std::size_t visited = 0;
  if (strategy_ == Strategy::exhaustive) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (stop && stop()) break;
      ++visited;
      measure(i);
    }
    return visited;
  }
  if (known_)
    if (const std::optional<Config> c = known_(p)) book_.elsewhere(p, {*c});
  auto search = make_search(strategy_, candidates, book_.hints(p), limit(p, candidates.size()),
                            p.shape.count * 0x9e3779b97f4a7c15ull ^ p.shape.length ^ std::uint64_t(p.dtype));
  std::vector<std::pair<Config, double>> measured;
  while (const auto i = search->next()) {
    if (stop && stop()) break;
    ++visited;
    const double us = measure(*i);
    const bool valid = std::isfinite(us);
    search->observe(*i, valid ? us : INFINITY, valid);
    if (!std::isnan(us)) measured.emplace_back(candidates[*i], valid ? us : INFINITY);
  }
  book_.found(p, measured);
  return visited;
}

SweepSearch sweep_search(Strategy strategy, const Budget& budget,
                         const std::vector<std::pair<PointId, std::size_t>>& points, const db::Store* store,
                         const DeviceKey& device) {
  SweepSearch s(strategy, budget, points);
  if (strategy == Strategy::exhaustive) return s;
  std::string why;
  std::shared_ptr<db::Store> shipped(open_shipped_store(&why));
  s.known([store, shipped, device](const PointId& p) -> std::optional<Config> {
    try {
      const Choice c = lookup(store, shipped.get(), device, p.dtype, p.op, p.problem, p.shape, {});
      if (c.match == Match::builtin) return std::nullopt;
      return c.config;
    } catch (const db::StoreError&) {
      return std::nullopt; // a seed the less; the sweep itself reports a store it cannot write
    }
  });
  s.seeds().defaults([device](const PointId& p) { return builtin_config(p.problem, p.dtype, p.op, p.shape, {}, device); });
  return s;
}

} // namespace reduce_tune
