// reduce-tune: the sweep of a segmented problem (rows, columns, offsets segments). sweep() hands
// it the compiled jobs; it measures every (configuration, shape) the way the array sweep does:
// checked result by result against the CPU first, then timed with events on a cold L2.
#pragma once

#include "kernels/runner.h"
#include "tuner/sweep.h"
#include "tuner/segmented_shapes.h"
#include "tuner/twin_filter.h"

#include <functional>
#include <vector>

namespace reduce_tune {

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
