// reduce-tune: the sweep of a segmented problem (rows, columns, offsets segments). sweep() hands
// it the compiled jobs; it measures every (configuration, shape) the way the array sweep does:
// checked result by result against the CPU first, then timed with events on a cold L2.
#pragma once

#include "kernels/runner.h"
#include "tuner/sweep.h"

#include <functional>
#include <vector>

namespace reduce_tune {

/// The default shapes of a problem's sweep: segment lengths 1, 4, ..., 2^24 and 3, 1000, each
/// with the count that makes 2^16, 2^20 and 2^24 elements, and 2^28 elements at lengths 2^12 and
/// 2^20 (rows, columns); for offsets, 2^8..2^20 (2^24) segments of a skewed length mix over 2^20
/// and 2^24 elements, and 2^16 segments over 2^28.
std::vector<Shape> default_shapes(Problem problem);

/// What sweep() has set up for measuring: the device, its compiled kernels, the store and the run.
struct SweepSetup {
  const cuda::DeviceInfo& info;
  KernelLoader& loader;
  db::Store& store;
  std::function<void(const Progress&)> progress;
  std::function<bool()> stop;
  double started_s = 0; ///< steady-clock seconds at the sweep's start
};

/// Measures every job at every shape of `o` (o.shapes, or default_shapes) into `res`.
void measure_segmented(const SweepOptions& o, const std::vector<CompileJob>& jobs, SweepSetup& setup,
                       SweepResult& res);

} // namespace reduce_tune
