// reduce-tune: the shell of `reduce-tune reduction FILE`: a user reduction's file read, named and
// compiled with NVRTC for each dtype asked (no GPU needed).
#pragma once

#include "reduce_tune/config.h"

#include <memory>
#include <string>
#include <vector>

namespace reduce_tune {

struct UserOp;       // kernels/user_op.h
struct SweepOptions; // tuner/sweep.h

/// reduce-tune reduction FILE [--dtype D]... [--arch A] [--nvrtc PATH]: prints the reduction's
/// name (user:<hash>) and, per dtype, its result dtype and whether it compiles; 1 when one does
/// not (NVRTC's log printed).
int cmd_reduction(const std::vector<std::string>& args);

} // namespace reduce_tune

namespace reduce_tune::cli {

/// The user reduction of `file` (parse_reduction's format) checked for `dtypes`, for `tune
/// --reduction`: cli::Usage (exit 2) naming the file and the problem where it cannot be read,
/// does not parse, is out of place or does not take one of the dtypes. Nothing is compiled here.
std::shared_ptr<const UserOp> user_reduction(const std::string& file, const std::vector<DType>& dtypes);

/// Which of the options that pick a sweep's points were given.
struct PointsGiven {
  bool problem = false, dtypes = false, sizes = false, shapes = false;
};

/// --check-data DIR, before --sizes and --shapes are read: the check data of `o`'s reduction read
/// into o.check_data and its problem made the sweep's. Usage (exit 2) naming the problem where
/// it is given without --reduction, cannot be read (or its index does not parse), or holds
/// another problem than --problem.
void read_check_data(const std::string& dir, bool problem_given, SweepOptions& o);
/// Then, the sweep's points fitted to it: the dtypes, sizes or shapes given must each be among
/// its points (a part of them is tuned); those not given are taken from them. Usage naming the
/// first (dtype, size or shape) of the sweep the check data has no point for, or a dtype the
/// reduction does not take.
void fit_check_data(const PointsGiven& given, SweepOptions& o);

} // namespace reduce_tune::cli
