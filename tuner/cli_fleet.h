// reduce-tune: the shells of fleet (tuning a cluster's GPUs through Slurm: tuner/fleet.h) and ship
// (a store's shipped-tuning form: db/ship.h). Usage errors are thrown (exit code 2 in main).
#pragma once

#include "tuner/sweep.h"

#include <functional>
#include <string>
#include <vector>

namespace reduce_tune {

/// The sweep a list of `reduce-tune tune` options describes (tuner/cli_tune.h's tune_sweep; throws on bad ones).
using TuneParser = std::function<SweepOptions(const std::vector<std::string>&)>;

/// reduce-tune fleet submit | status | merge.
int cmd_fleet(const std::vector<std::string>& args, const TuneParser& parse_tune);
/// reduce-tune ship: writes the shipped-tuning form of a store.
int cmd_ship(const std::vector<std::string>& args);

} // namespace reduce_tune
