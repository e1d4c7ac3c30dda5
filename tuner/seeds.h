// reduce-tune: where a guided search starts at a point. One GPU's points are searched one after
// the other; each search is seeded from what is known without measuring that point: the
// configurations other GPUs were tuned to there (the shipped or carried tuning), the best ones this
// run found at the nearest points already searched, and the built-in default. The sweep and the
// replay share it, so the replay judges the seeds the sweep uses.
#pragma once

#include "tuner/search.h"

#include <functional>
#include <map>
#include <tuple>
#include <vector>

namespace reduce_tune {

/// One point of a GPU's search.
struct PointId {
  DType dtype = DType::f32;
  Op op = Op::sum;
  Problem problem = Problem::array;
  Shape shape{1, 1};
  friend bool operator<(const PointId& a, const PointId& b) {
    return std::tuple(a.dtype, a.op, a.problem, a.shape.count, a.shape.length) <
           std::tuple(b.dtype, b.op, b.problem, b.shape.count, b.shape.length);
  }
};

/// The distance between two shapes of a problem, in factors of two: the segment length's and the
/// count's. The length decides the mapping more than the count does, so it weighs double.
double shape_distance(Shape a, Shape b);

class SeedBook {
public:
  /// Configurations known from elsewhere at `p` (another GPU's tuning), fastest first.
  void elsewhere(const PointId& p, std::vector<Config> fastest_first);
  /// Configurations to measure first at `p`, ahead of everything known from elsewhere (first-use
  /// tuning's tests lead the search into a faulting kernel this way).
  void first(const PointId& p, const std::vector<Config>& configs);
  /// The built-in default of a point (none: no default seed).
  void defaults(std::function<Config(const PointId&)> f) { default_ = std::move(f); }
  /// What the search at `p` measured: configurations with their times (a failed one infinite).
  void found(const PointId& p, const std::vector<std::pair<Config, double>>& measured);
  /// The seeds for `p`, most promising first: the best found at the nearest point searched, the
  /// best known from elsewhere at `p` (or its nearest shape), the default, then the runners-up of
  /// those, and the best of the next nearest points; and (Hints::nearby) the best known from
  /// elsewhere at the nearest points, `p` included, nearest first.
  Hints hints(const PointId& p) const;

private:
  /// A point's configurations and its shape's logarithms (shape_distance's terms, worked out once).
  struct Known {
    std::vector<Config> configs;
    double log_count = 0, log_length = 0;
  };
  /// p's entry of `m`, made with its logarithms where it has none.
  static Known& at(std::map<PointId, Known>& m, const PointId& p);
  /// The lists of at most `most` points of p's problem, nearest first (other dtypes and ops of the
  /// problem after p's own).
  std::vector<const std::vector<Config>*> nearest(const std::map<PointId, Known>& m,
                                                  const PointId& p, std::size_t most) const;
  std::map<PointId, Known> elsewhere_, found_;
  std::function<Config(const PointId&)> default_;
};

} // namespace reduce_tune
