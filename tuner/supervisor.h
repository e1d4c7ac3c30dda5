// reduce-tune: runs sweeps in worker processes, one per GPU, in parallel. A kernel that faults
// leaves its CUDA context unusable and one that hangs never returns: the supervisor records the
// point the worker was on as failed, restarts the worker (which skips what its run holds), and
// goes on. One GPU failing does not stop the others.
#pragma once

#include "tuner/sweep.h"

#include <functional>
#include <string>
#include <vector>

namespace reduce_tune {

struct SupervisorOptions {
  std::string worker_exe;                ///< the reduce-tune binary (runs "worker")
  std::vector<std::string> worker_args;  ///< the sweep's options, as command-line arguments
  std::vector<int> devices;              ///< GPU ordinals, one worker each
  double timeout_s = 60;                 ///< per configuration
  int max_restarts = 100;                ///< per GPU
};

/// What happened on one GPU.
struct DeviceOutcome {
  int ordinal = 0;
  db::DeviceRecord device;
  std::int64_t run_id = 0;
  std::string status;                    ///< "done", "interrupted", "failed"
  int restarts = 0;
  std::vector<std::string> incidents;    ///< one line per worker death or time-out
  double wall_s = 0;
  std::size_t done = 0, total = 0;
};

/// Per-GPU progress, as workers report it.
using DeviceProgress = std::function<void(int ordinal, const Progress&)>;

/// Precompiles once per architecture, starts one worker per GPU, supervises them, ends the runs.
/// `stop` is polled; when it returns true the workers (which got the same SIGINT) finish their
/// current measurement and the runs end as "interrupted".
std::vector<DeviceOutcome> supervise(const SweepOptions& o, const SupervisorOptions& so,
                                     const DeviceProgress& progress, const std::function<bool()>& stop);

/// A worker's exit code after a CUDA fault it recorded: its context is lost, restart it.
inline constexpr int kWorkerCudaFault = 3;

/// The line a worker prints for each progress event, and its parser.
std::string progress_line(const Progress& p);
bool parse_progress_line(const std::string& line, Progress& p);

} // namespace reduce_tune
