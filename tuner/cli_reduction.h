// reduce-tune: the shell of `reduce-tune reduction FILE`: a user reduction's file read, named and
// compiled with NVRTC for each dtype asked (no GPU needed).
#pragma once

#include "reduce_tune/config.h"

#include <memory>
#include <string>
#include <vector>

namespace reduce_tune {

struct UserOp; // kernels/user_op.h

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

} // namespace reduce_tune::cli
