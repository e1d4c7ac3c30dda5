// reduce-tune: the shell of `reduce-tune reduction FILE`: a user reduction's file read, named and
// compiled with NVRTC for each dtype asked (no GPU needed).
#pragma once

#include <string>
#include <vector>

namespace reduce_tune {

/// reduce-tune reduction FILE [--dtype D]... [--arch A] [--nvrtc PATH]: prints the reduction's
/// name (user:<hash>) and, per dtype, its result dtype and whether it compiles; 1 when one does
/// not (NVRTC's log printed).
int cmd_reduction(const std::vector<std::string>& args);

} // namespace reduce_tune
