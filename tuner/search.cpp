// reduce-tune: the search strategies (exhaustive, random, guided).
#include "tuner/search.h"

#include "kernels/segmented.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace reduce_tune {

std::string_view name(Strategy s) {
  switch (s) {
  case Strategy::exhaustive: return "exhaustive";
  case Strategy::guided: return "guided";
  case Strategy::random: return "random";
  }
  return "?";
}

std::optional<Strategy> parse_strategy(std::string_view text) {
  for (Strategy s : {Strategy::exhaustive, Strategy::guided, Strategy::random})
    if (text == name(s)) return s;
  return std::nullopt;
}

std::size_t Budget::limit(std::size_t candidates) const {
  if (count) return std::min(count, candidates);
  if (percent > 0) {
    const auto share = std::size_t(std::ceil(double(candidates) * percent / 100));
    return std::min(candidates, std::max(share, floor));
  }
  return candidates;
}

namespace {
/// A point's weight in a run's share: the fourth root of its candidates. A point of many
/// candidates (the 1-D problem's ~950) holds many near-optimal ones and its seeds land near them;
/// a point of ~100 (rows, columns) has few within a few percent of its best, and replayed on the
/// H100 and H200 stores it needs more of its candidates measured than the square root gave it
/// (the points under 0.95 of the best: 12 and 23 with the square root, 6 and 17 with this, each
/// with the seeds of two ranks).
double weight(std::size_t candidates) { return std::sqrt(std::sqrt(double(candidates))); }
} // namespace

std::vector<std::size_t> Budget::plan(const std::vector<std::size_t>& candidates) const {
  std::vector<std::size_t> out(candidates.size());
  if (!(percent > 0)) {
    for (std::size_t i = 0; i < candidates.size(); ++i) out[i] = limit(candidates[i]);
    return out;
  }
  double total = 0, roots = 0;
  for (std::size_t c : candidates) total += double(c), roots += weight(c);
  const double allowed = total * percent / 100;
  // The largest scale whose limits (with the floor) stay within the run's share; the floor alone
  // may exceed it, for runs of points of few configurations.
  double k = roots > 0 ? allowed / roots : 0;
  for (int round = 0; round < 200; ++round, k *= 0.98) {
    double sum = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const auto share = std::size_t(std::llround(k * weight(candidates[i])));
      out[i] = std::min(candidates[i], std::max(share, floor));
      sum += double(out[i]);
    }
    if (sum <= allowed) break;
  }
  return out;
}

std::optional<Budget> parse_budget(std::string_view text, std::string* why) {
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.remove_suffix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || (percent && v > 100) ||
      (!percent && v != std::floor(v))) {
    if (why) *why = "expected a number of measurements a point (e.g. 40) or a share of its configurations (e.g. 5%)";
    return std::nullopt;
  }
  Budget b;
  if (percent) b.percent = v;
  else b.count = std::size_t(v);
  return b;
}

namespace {

constexpr std::size_t kParams = 9;

/// A configuration's parameters as numbers, for neighbourhoods: variant (by name; an evict-first
/// twin by its plain variant's, and a last parameter, 1, set), then the numeric ones, then tail
/// and finish.
struct Params {
  std::array<double, kParams> v{};
};

std::string family(const Config& c) {
  const std::optional<Config> plain = evict_first_twin_of(c);
  return plain ? plain->variant : c.variant;
}

Params params_of(const Config& c, const std::vector<std::string>& variants) {
  Params p;
  p.v[0] = double(std::find(variants.begin(), variants.end(), family(c)) - variants.begin());
  p.v[8] = evict_first_twin_of(c) ? 1 : 0;
  p.v[1] = std::log2(double(std::max(c.block, 1)));
  p.v[2] = std::log2(double(std::max(c.unroll, 1)));
  p.v[3] = std::log2(double(std::max(c.vec, 1)));
  p.v[4] = c.grid ? 1 + std::log2(double(c.grid)) : 0;
  p.v[5] = c.width ? 1 + std::log2(double(c.width)) : 0;
  p.v[6] = double(int(c.tail));
  p.v[7] = double(int(c.finish));
  return p;
}

/// The parameters in which two configurations differ, and by how much (variant, tail and finish
/// count 1 when they differ; the others their log2 distance).
struct Difference {
  int params = 0;
  double size = 0;
  int which = -1; ///< the parameter, when exactly one differs
};
Difference difference(const Params& a, const Params& b) {
  Difference d;
  for (std::size_t i = 0; i < kParams; ++i)
    if (a.v[i] != b.v[i]) {
      ++d.params;
      d.which = int(i);
      d.size += (i == 0 || i >= 6) ? 1.0 : std::abs(a.v[i] - b.v[i]);
    }
  return d;
}

class Exhaustive final : public Search {
public:
  explicit Exhaustive(std::size_t n, std::size_t limit) : left_(n), limit_(limit) {}
  std::optional<std::size_t> next() override {
    if (left_ == 0 || taken_ == limit_) return std::nullopt;
    ++taken_;
    return --left_;
  }
  void observe(std::size_t, double, bool) override {}

private:
  std::size_t left_, limit_, taken_ = 0;
};

class Random final : public Search {
public:
  Random(std::size_t n, std::size_t limit, std::uint64_t seed) : order_(n) {
    std::iota(order_.begin(), order_.end(), std::size_t(0));
    std::mt19937_64 rng(seed);
    std::shuffle(order_.begin(), order_.end(), rng);
    order_.resize(std::min(limit, n));
  }
  std::optional<std::size_t> next() override {
    if (at_ == order_.size()) return std::nullopt;
    return order_[at_++];
  }
  void observe(std::size_t, double, bool) override {}

private:
  std::vector<std::size_t> order_;
  std::size_t at_ = 0;
};

class Guided final : public Search {
public:
  Guided(const std::vector<Config>& candidates, const Hints& hints, std::size_t limit) : limit_(limit) {
    std::vector<std::string> variants;
    for (const Config& c : candidates)
      if (std::find(variants.begin(), variants.end(), family(c)) == variants.end()) variants.push_back(family(c));
    for (const Config& c : candidates) params_.push_back(params_of(c, variants));
    variant_count_ = variants.size();
    time_.assign(candidates.size(), kUnmeasured);
    // Seeds: each hint as it is where it is a candidate, else the candidate nearest to it.
    for (const Config& seed : hints.seeds) {
      const Params p = params_of(seed, variants);
      std::size_t best = candidates.size();
      Difference best_d{int(kParams) + 1, 0, -1};
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        const Difference d = difference(p, params_[i]);
        if (d.params < best_d.params || (d.params == best_d.params && d.size < best_d.size)) best = i, best_d = d;
      }
      if (best < candidates.size() && std::find(queue_.begin(), queue_.end(), best) == queue_.end())
        queue_.push_back(best);
    }
    if (queue_.empty() && !candidates.empty()) queue_.push_back(candidates.size() - 1); // the catalogue's last
    for (const Config& c : hints.nearby) nearby_.push_back(params_of(c, variants));
  }

  std::optional<std::size_t> next() override {
    if (taken_ >= limit_) return std::nullopt;
    // Seeds, but not the whole budget: at least a quarter of it (one, at least) is kept for moves
    // from the best of them, and kExplore more (at most a quarter) for variants no seed is of.
    const std::size_t explore = std::min(kExplore, limit_ / 4);
    std::size_t seed_cap = limit_ - std::max<std::size_t>(1, limit_ * kMoveShare / 100);
    seed_cap = seed_cap > explore ? seed_cap - explore : std::min<std::size_t>(seed_cap, 1);
    while (!queue_.empty() && (seeded_ < seed_cap || limit_ == 1)) {
      const std::size_t i = queue_.front();
      queue_.erase(queue_.begin());
      if (time_[i] == kUnmeasured) return ++seeded_, take(i);
    }
    // Every move starts from the best so far (or the last measured, while none was valid).
    const std::size_t from = best_ < time_.size() ? best_ : last_;
    if (from >= time_.size()) {
      if (!queue_.empty()) return take(pop());
      return std::nullopt;
    }
    // The best's evict-first twin (or plain one) first: a twin differs only in its loads' cache
    // policy, and which policy wins turns with the shape more often than any other parameter.
    if (const auto twin = unmeasured_twin(from)) return take(*twin);
    // The last measurements confirm: the runner-up's twin, as the policy that wins interacts with
    // the other parameters (an evict-first twin may win with v4 loads and lose with v1), so the
    // best's twin alone misses a twin pair that ranks second.
    if (taken_ + kConfirm >= limit_)
      if (const auto twin = unmeasured_twin(runner_up())) return take(*twin);
    // Variants not tried yet, while half the budget is left or the ones kept for them are not
    // spent: first those another GPU found best at the nearest shapes, each at its candidate
    // nearest to that configuration; then each one's candidate nearest to the best so far
    // (another variant's parameters only partly match: the nearest by the others).
    if (2 * taken_ < limit_ || explored_ < explore) {
      std::vector<bool> tried(variant_count_, false);
      for (std::size_t i = 0; i < time_.size(); ++i)
        if (time_[i] != kUnmeasured) tried[std::size_t(params_[i].v[0])] = true;
      if (const auto probe = nearby_probe(tried)) return ++explored_, take(*probe);
      std::size_t pick = time_.size();
      double pick_size = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < time_.size(); ++i) {
        if (time_[i] != kUnmeasured || tried[std::size_t(params_[i].v[0])]) continue;
        const double size = difference(params_[from], params_[i]).size;
        if (size < pick_size) pick = i, pick_size = size;
      }
      if (pick < time_.size()) return ++explored_, take(pick);
    }
    // Neighbours of the best so far: one parameter apart first (the parameters that paid off
    // before, then the smaller steps), then two.
    std::size_t pick = time_.size();
    double pick_score = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < time_.size(); ++i) {
      if (time_[i] != kUnmeasured) continue;
      const Difference d = difference(params_[from], params_[i]);
      if (d.params == 0 || d.params > 2) continue;
      const double paid = d.params == 1 ? gains_[std::size_t(d.which)] : 0;
      const double score = 100.0 * (d.params - 1) + d.size - paid;
      if (score < pick_score) pick = i, pick_score = score;
    }
    if (pick == time_.size()) {
      if (!queue_.empty()) return take(pop());
      return std::nullopt;
    }
    return take(pick);
  }

  void observe(std::size_t i, double us, bool valid) override {
    time_[i] = valid && std::isfinite(us) ? us : std::numeric_limits<double>::infinity();
    if (best_ >= time_.size() || time_[i] < time_[best_]) {
      if (best_ < time_.size() && std::isfinite(time_[best_])) {
        const Difference d = difference(params_[best_], params_[i]);
        if (d.params == 1) gains_[std::size_t(d.which)] += 1;
      }
      if (std::isfinite(time_[i])) best_ = i;
    }
    last_ = i;
  }

private:
  static constexpr double kUnmeasured = -1;
  static constexpr std::size_t kMoveShare = 25; ///< percent of the budget kept from the seeds
  /// Measurements a point keeps from its seeds for variants none of them is of. The seeds are the
  /// best of the nearest points, which were seeded from theirs: at many points all of them are of
  /// one variant, and the moves from the best rarely leave it. Replayed at 5 % without hints, the
  /// points under 0.95 of the best fall from 13 to 7 (H100) and 24 to 22 (H200); with them, no
  /// change; one or three: no better.
  static constexpr std::size_t kExplore = 2;
  /// The measurements at the end of the budget that may go to the runner-up's twin (replayed on
  /// the H100 and H200 stores at 5 % and 10 %: the points within 0.97 of the best rise, none
  /// falls under 0.95; one or three: no better).
  static constexpr std::size_t kConfirm = 2;
  /// The first of the nearby configurations (Hints::nearby, nearest shape first) whose variant is
  /// untried and has an unmeasured candidate: that candidate nearest to it. A mapping wins over
  /// a range of shapes, and the range moves from one GPU to another; the nearest-to-the-best
  /// probe instead goes to the variants most like the seeded one and, for a variant of other
  /// parameters, to a configuration no GPU chose for it.
  std::optional<std::size_t> nearby_probe(const std::vector<bool>& tried) const {
    for (const Params& q : nearby_) {
      if (q.v[0] >= double(variant_count_) || tried[std::size_t(q.v[0])]) continue;
      std::size_t pick = time_.size();
      double pick_size = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < time_.size(); ++i) {
        if (time_[i] != kUnmeasured || params_[i].v[0] != q.v[0]) continue;
        const double size = difference(q, params_[i]).size;
        if (size < pick_size) pick = i, pick_size = size;
      }
      if (pick < time_.size()) return pick;
    }
    return std::nullopt;
  }
  /// The unmeasured evict-first twin (or plain one) of candidate `of`, if any.
  std::optional<std::size_t> unmeasured_twin(std::size_t of) const {
    if (of >= time_.size()) return std::nullopt;
    for (std::size_t i = 0; i < time_.size(); ++i) {
      if (time_[i] != kUnmeasured) continue;
      const Difference d = difference(params_[of], params_[i]);
      if (d.params == 1 && d.which == 8) return i;
    }
    return std::nullopt;
  }
  /// The second fastest valid candidate measured (none: past the end).
  std::size_t runner_up() const {
    std::size_t second = time_.size();
    for (std::size_t i = 0; i < time_.size(); ++i)
      if (i != best_ && time_[i] >= 0 && std::isfinite(time_[i]) && (second == time_.size() || time_[i] < time_[second]))
        second = i;
    return second;
  }
  /// The next unmeasured seed (the queue may hold measured ones).
  std::size_t pop() {
    while (true) {
      const std::size_t i = queue_.front();
      queue_.erase(queue_.begin());
      if (time_[i] == kUnmeasured || queue_.empty()) return i;
    }
  }
  std::size_t take(std::size_t i) {
    ++taken_;
    time_[i] = -2; // asked for, not yet observed
    return i;
  }
  std::vector<Params> params_, nearby_;
  std::vector<double> time_;
  std::vector<std::size_t> queue_;
  std::array<double, kParams> gains_{};
  std::size_t explored_ = 0; ///< measurements that went to a variant not tried before
  std::size_t limit_, taken_ = 0, seeded_ = 0, best_ = std::size_t(-1), last_ = std::size_t(-1), variant_count_ = 0;
};

} // namespace

std::unique_ptr<Search> make_search(Strategy strategy, const std::vector<Config>& candidates,
                                    const Hints& hints, const Budget& budget, std::uint64_t seed) {
  return make_search(strategy, candidates, hints, budget.limit(candidates.size()), seed);
}

std::unique_ptr<Search> make_search(Strategy strategy, const std::vector<Config>& candidates,
                                    const Hints& hints, std::size_t limit, std::uint64_t seed) {
  switch (strategy) {
  case Strategy::exhaustive: return std::make_unique<Exhaustive>(candidates.size(), limit);
  case Strategy::random: return std::make_unique<Random>(candidates.size(), limit, seed);
  case Strategy::guided: break;
  }
  return std::make_unique<Guided>(candidates, hints, limit);
}

} // namespace reduce_tune
