// reduce-tune: search strategies. A strategy decides, point by point (one dtype, op, problem and
// shape), which of the point's valid configurations to measure next, from what it has measured so
// far and what it knows from elsewhere (hints: the best configurations of points already searched,
// the built-in default, another GPU's tuning). The same strategy runs against a GPU (the sweep) or
// against a store's recorded measurements (replay), one loop with two back ends.
#pragma once

#include "reduce_tune/config.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reduce_tune {

enum class Strategy { exhaustive, guided, random };
std::string_view name(Strategy);
std::optional<Strategy> parse_strategy(std::string_view);

/// How many measurements a point may take: `count` measurements, or `percent` of the point's
/// valid configurations (at least `floor`); 0 and 0: no limit (exhaustive).
struct Budget {
  std::size_t count = 0;
  double percent = 0;
  std::size_t floor = 3;
  /// The limit for a point of `candidates` configurations, alone.
  std::size_t limit(std::size_t candidates) const;
  /// The limits of a run's points of `candidates` configurations each. A share is the run's: the
  /// run may take `percent` of all its points' configurations, dealt out in proportion to the
  /// fourth root of each point's (at least `floor`, at most all of them), as a point of many
  /// configurations needs a smaller share of them than one of few. A count is each point's.
  std::vector<std::size_t> plan(const std::vector<std::size_t>& candidates) const;
};
/// "40" (measurements a point) or "5%" (of each point's valid configurations); nullopt, with the
/// reason in *why, otherwise.
std::optional<Budget> parse_budget(std::string_view text, std::string* why = nullptr);

/// What a strategy may start from at a point, most promising first.
struct Hints {
  std::vector<Config> seeds;
  /// The best configurations known from elsewhere (the lookup's answers, other GPUs' tuning) at
  /// the shapes nearest this point's (its own included), nearest first: where the search probes a
  /// variant none of its seeds is of.
  std::vector<Config> nearby;
};

/// One point's search. next() names the candidate to measure (an index into the candidates it was
/// made with), or nullopt when it is done; observe() reports that candidate's time in
/// microseconds (or that it failed its check).
class Search {
public:
  virtual ~Search() = default;
  virtual std::optional<std::size_t> next() = 0;
  virtual void observe(std::size_t candidate, double median_us, bool valid) = 0;
};

/// A search over `candidates` (the point's valid configurations, none twice). exhaustive measures
/// every candidate, in reverse order (the catalogue runs from the slowest kernels to the fastest);
/// random draws `budget` of them (seeded); guided measures the hints' seeds (at most three quarters
/// of its budget, less two kept for variants none of them is of), then from the best so far: its
/// evict-first twin (or plain one), a candidate of each untried variant while half the budget or
/// the two kept are left (the variants of the hints' nearby configurations first, each at its
/// candidate nearest to that configuration; then each one's candidate nearest to the best), then
/// the untried candidates that differ from it in one parameter (variant, block, unroll, vec, grid,
/// width, tail, finish), the parameters that paid off first,
/// until the budget is spent or no neighbour is left untried; its last two measurements go to the
/// evict-first twin (or plain one) of the runner-up, where that is unmeasured.
std::unique_ptr<Search> make_search(Strategy strategy, const std::vector<Config>& candidates,
                                    const Hints& hints, const Budget& budget, std::uint64_t seed = 1);
/// The same with the point's limit given (from Budget::plan).
std::unique_ptr<Search> make_search(Strategy strategy, const std::vector<Config>& candidates,
                                    const Hints& hints, std::size_t limit, std::uint64_t seed = 1);

} // namespace reduce_tune
