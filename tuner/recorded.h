// reduce-tune tune --recorded: the call points a program recorded (Options::record), grouped into
// the sweeps that tune exactly them: one a (problem, dtype, op or user reduction), over the
// recorded shapes. A user reduction's sweep is `tune --reduction` of the description the store
// kept for it.
#pragma once

#include "db/store.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace reduce_tune {

struct RecordedSweep {
  Problem problem = Problem::array;
  DType dtype = DType::f32;
  Op op = Op::sum;
  /// A user reduction's hash (RecordedPoint::user): swept with --reduction, not --ops.
  std::optional<std::uint64_t> user;
  std::vector<Shape> shapes;
  /// The tune options that select them: --problem, --dtypes, --ops (not for a user reduction:
  /// tune_recorded adds its --reduction file), and --sizes (the array problem) or --shapes (rows
  /// x cols, segments x mean length, as --shapes reads them).
  std::vector<std::string> args() const;
};

/// The sweeps of the points recorded on GPU `uuid` or another GPU of model `model`, in order.
/// Offsets recorded without their lengths (a length of 0: looked up by the segment count alone)
/// cannot be swept at a shape; they go to `unsweepable`.
std::vector<RecordedSweep> recorded_sweeps(const std::vector<db::RecordedPoint>& points, const std::string& uuid,
                                           const std::string& model, std::vector<db::RecordedPoint>* unsweepable);

/// tune --recorded on GPUs `devices`: for each, the sweeps of its recorded points that the store at
/// `db_path` has no exact tuning for yet, each run as `tune` runs the arguments it is given:
/// `args` (the command's own, --recorded and --device taken out) with --device and the sweep's
/// selection added, and --search guided unless `search_given`; a user reduction's with
/// --reduction and a temporary file of the description the store kept (none kept: skipped, and
/// said). Prints what it does on stderr;
/// returns the worst exit status of the sweeps (0 when nothing was recorded).
int tune_recorded(const std::vector<std::string>& args, const std::vector<int>& devices, const std::string& db_path,
                  bool search_given, const std::function<int(const std::vector<std::string>&)>& tune);

} // namespace reduce_tune
