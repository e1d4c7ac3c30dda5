// reduce-tune: the shell of coverage (what the library would run on a GPU, and from where).
#pragma once

#include <string>
#include <vector>

namespace reduce_tune {

/// reduce-tune coverage: per problem, dtype and op, the lookup grades over the default sweep's
/// points on one GPU, the shipped tuning's state, and the command that tunes the rest.
int cmd_coverage(const std::vector<std::string>& args);

} // namespace reduce_tune
