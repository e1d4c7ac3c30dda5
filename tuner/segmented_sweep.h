// reduce-tune: the sweep of a segmented problem (rows, columns, offsets segments). sweep() hands
// it the compiled jobs; it measures every (configuration, shape) the way the array sweep does:
// checked result by result against the CPU first, then timed with events on a cold L2.
#pragma once

#include "kernels/runner.h"
#include "tuner/sweep.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace reduce_tune {

/// The default shapes of a problem's sweep: segment lengths 1, 4, ..., 2^24 and 3, 1000, each
/// with the count that makes 2^16, 2^20 and 2^24 elements, and 2^28 elements at lengths 2^12 and
/// 2^20 (rows, columns); for offsets, 2^8..2^20 (2^24) segments of a skewed length mix over 2^20
/// and 2^24 elements, 2^23 segments over 2^24, 2^16 segments over 2^28, and 2^1, 2^3, ..., 2^15
/// segments over 2^16.
std::vector<Shape> default_shapes(Problem problem);

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

/// What sweep() has set up for measuring: the device, its compiled kernels, the store and the run.
struct SweepSetup {
  const cuda::DeviceInfo& info;
  KernelLoader& loader;
  const Nvrtc& nvrtc; ///< the loader's (the sweep's own check kernels compile with it)
  db::Store& store;
  std::function<void(const Progress&)> progress;
  std::function<bool()> stop;
  double started_s = 0; ///< steady-clock seconds at the sweep's start
};

/// Measures every job at every shape of `o` (o.shapes, or default_shapes) into `res`.
void measure_segmented(const SweepOptions& o, const std::vector<CompileJob>& jobs, SweepSetup& setup,
                       SweepResult& res);

} // namespace reduce_tune
