// reduce-tune: the seeds of a guided search (tuner/seeds.h).
#include "tuner/seeds.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace reduce_tune {

namespace {
constexpr std::size_t kSeedRanks = 2;
/// The points whose best known from elsewhere Hints::nearby holds. Replayed at 5 % on the H100's store
/// with the H200's rows: 4, 3 points under 0.95 of the best; 6 to all of them, 1; on the H200's,
/// no change.
constexpr std::size_t kNearby = 8;

double lg(std::uint64_t v) { return std::log2(double(std::max<std::uint64_t>(v, 1))); }
/// shape_distance from the shapes' logarithms.
double log_distance(double count_a, double length_a, double count_b, double length_b) {
  return 2 * std::abs(length_a - length_b) + std::abs(count_a - count_b);
}
} // namespace

double shape_distance(Shape a, Shape b) {
  return log_distance(lg(a.count), lg(a.length), lg(b.count), lg(b.length));
}

SeedBook::Known& SeedBook::at(std::map<PointId, Known>& m, const PointId& p) {
  const auto [it, added] = m.try_emplace(p);
  if (added) it->second.log_count = lg(p.shape.count), it->second.log_length = lg(p.shape.length);
  return it->second;
}

void SeedBook::elsewhere(const PointId& p, std::vector<Config> fastest_first) {
  auto& list = at(elsewhere_, p).configs;
  for (Config& c : fastest_first)
    if (std::find(list.begin(), list.end(), c) == list.end()) list.push_back(std::move(c));
}

void SeedBook::first(const PointId& p, const std::vector<Config>& configs) {
  auto& list = at(elsewhere_, p).configs;
  for (auto c = configs.rbegin(); c != configs.rend(); ++c) {
    list.erase(std::remove(list.begin(), list.end(), *c), list.end());
    list.insert(list.begin(), *c);
  }
}

void SeedBook::found(const PointId& p, const std::vector<std::pair<Config, double>>& measured) {
  std::vector<std::pair<Config, double>> valid;
  for (const auto& m : measured)
    if (std::isfinite(m.second)) valid.push_back(m);
  std::stable_sort(valid.begin(), valid.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  auto& list = at(found_, p).configs;
  list.clear();
  for (auto& m : valid) list.push_back(m.first);
}

std::vector<const std::vector<Config>*> SeedBook::nearest(const std::map<PointId, Known>& m,
                                                          const PointId& p, std::size_t most) const {
  // The `most` nearest by distance, ties in the map's order: selected, not the whole list sorted
  // (a run of every dtype and op holds thousands of points, and each point asks three times).
  struct Near {
    double distance;
    std::size_t at; ///< in the map's order
    const std::vector<Config>* list;
  };
  std::vector<Near> near;
  near.reserve(m.size());
  const double count = lg(p.shape.count), length = lg(p.shape.length);
  for (const auto& [q, known] : m) {
    if (q.problem != p.problem || known.configs.empty()) continue;
    // Another dtype or op of the problem: after every point of p's own within 6 steps.
    const double other = q.dtype == p.dtype && q.op == p.op ? 0 : size_of(q.dtype) == size_of(p.dtype) && q.op == p.op ? 0.5 : 6;
    near.push_back({log_distance(count, length, known.log_count, known.log_length) + other, near.size(), &known.configs});
  }
  const auto k = std::min(most, near.size());
  std::partial_sort(near.begin(), near.begin() + std::ptrdiff_t(k), near.end(), [](const Near& a, const Near& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.at < b.at);
  });
  std::vector<const std::vector<Config>*> out;
  for (std::size_t i = 0; i < k; ++i) out.push_back(near[i].list);
  return out;
}

Hints SeedBook::hints(const PointId& p) const {
  Hints h;
  auto add = [&h](const Config& c) {
    if (std::find(h.seeds.begin(), h.seeds.end(), c) == h.seeds.end()) h.seeds.push_back(c);
  };
  std::vector<const std::vector<Config>*> other;
  if (auto it = elsewhere_.find(p); it != elsewhere_.end()) other.push_back(&it->second.configs);
  else other = nearest(elsewhere_, p, 1);
  const std::vector<const std::vector<Config>*> mine = nearest(found_, p, 3);
  // Rank by rank: the nearest point's best, elsewhere's best, the default; then the second of
  // each, and the next nearest points'. Two ranks: the third ones took measurements the moves
  // from the best put to better use (replayed: fewer points under 0.95 of the best on both GPUs).
  for (std::size_t rank = 0; rank < kSeedRanks; ++rank) {
    if (!mine.empty() && rank < mine[0]->size()) add((*mine[0])[rank]);
    if (!other.empty() && rank < other[0]->size()) add((*other[0])[rank]);
    if (rank == 0 && default_) add(default_(p));
    for (std::size_t i = 1; i < mine.size(); ++i)
      if (rank < mine[i]->size()) add((*mine[i])[rank]);
  }
  // The best known from elsewhere at the nearest shapes: where a variant none of the seeds is of
  // is probed.
  for (const std::vector<Config>* list : nearest(elsewhere_, p, kNearby)) h.nearby.push_back(list->front());
  return h;
}

} // namespace reduce_tune
