// reduce-tune replay: a search strategy judged against a store's recorded exhaustive measurements
// instead of a GPU. Every (GPU, dtype, op, problem, shape) the store holds is searched as the sweep
// would search it, each "measurement" read from the store; the configuration the search ends with
// is compared with the exhaustive best.
#pragma once

#include "db/store.h"
#include "tuner/search.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace reduce_tune {

struct ReplayOptions {
  Strategy strategy = Strategy::guided;
  Budget budget;                 ///< per point (default: 5% of its configurations, at least 3)
  std::uint64_t seed = 1;        ///< random strategy
  bool hints_from_other_gpus = true; ///< seed with other GPUs' best at the point (as a GPU being
                                     ///< tuned has the shipped or carried tuning)
  /// Another store (the shipped tuning): its rows of GPU models other than the one replayed seed
  /// the search at their points, fastest first. Never the replayed model's own rows: they would
  /// be the answer.
  const db::Store* hints = nullptr;
  bool defaults = true;          ///< seed with the built-in default
  /// Offer the search every evict-first twin, as its candidates on the GPU hold them: the
  /// exhaustive sweep measures only the twins of each point's fastest plain configurations
  /// (TwinFilter), so a twin the store lacks costs a measurement and gives no time.
  bool every_twin = false;
  ReplayOptions() { budget.percent = 5; }
};

struct ReplayPoint {
  std::string device;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Problem problem = Problem::array;
  Shape shape{1, 1};
  std::size_t candidates = 0, measured = 0;
  /// The share's basis at the point: for guided and random the measurements the exhaustive
  /// default sweep takes there, its configurations but of a segmented point's evict-first twins
  /// at most TwinFilter::kKeep (a store recorded with `tune --every-twin` holds them all); for
  /// exhaustive every configuration the store holds.
  std::size_t basis = 0;
  double best_us = 0, found_us = 0;  ///< exhaustive best; the search's choice
  std::string best_key, found_key;
  /// What the search measured there, in order: each configuration's key and time (infinite: it
  /// failed its check).
  std::vector<std::pair<std::string, double>> trace;
  double ratio() const { return found_us > 0 ? best_us / found_us : 0; }
};

struct ReplaySummary {
  std::vector<ReplayPoint> points;
  double median = 0, worst = 0;      ///< of best / found over the points
  double share = 0;                  ///< measurements used / the points' basis
  /// With every_twin: the measurements that asked for a twin the store lacks, and at how many points.
  std::size_t unrecorded = 0, unrecorded_points = 0;
};

/// Replays `o.strategy` over every point `store` holds with at least two valid configurations.
ReplaySummary replay(const db::Store& store, const ReplayOptions& o);

/// Opens a store file for replay: a plain SQLite store read-only, or a gzip-compressed one
/// (.gz) decompressed into memory. `image` keeps the decompressed bytes alive.
db::Store open_replay_store(const std::string& path, std::vector<unsigned char>& image);

} // namespace reduce_tune
