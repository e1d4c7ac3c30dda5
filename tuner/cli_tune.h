// reduce-tune: the shells of tune (a sweep of the configuration space on one GPU or several) and of
// worker (one GPU's share of it, measured for tune's supervisor). Each takes the arguments after
// the command name and returns the exit code; usage errors are thrown (exit code 2 in main).
#pragma once

#include "tuner/sweep.h"

#include <string>
#include <vector>

namespace reduce_tune {

/// The sweep that tune's options describe (fleet's parser, tuner/cli_fleet.h); cli::Usage on bad ones.
SweepOptions tune_sweep(const std::vector<std::string>& args);

/// reduce-tune [tune]: measures the sweep, each GPU in a worker process (in this one with
/// --in-process), and prints its tables and a summary a GPU; 1 where a measurement failed its check
/// or a GPU's run failed, 130 when interrupted. `cmdline` is stored with the run.
int cmd_tune(const std::vector<std::string>& args, const std::string& cmdline);
/// reduce-tune worker: measures on one GPU, reporting each point on stdout for the supervisor.
int cmd_worker(const std::vector<std::string>& args, const std::string& cmdline);

} // namespace reduce_tune
