// reduce-tune: the shell of replay (search strategies judged against recorded measurements).
#pragma once

#include <string>
#include <vector>

namespace reduce_tune {

/// reduce-tune replay --db STORE [--search S] [--budget B]: the strategy replayed over every point
/// of the store; the last line says how near the exhaustive best it ends and at what share of the
/// measurements.
int cmd_replay(const std::vector<std::string>& args);

} // namespace reduce_tune
