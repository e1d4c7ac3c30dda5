// reduce-tune: the command-line shells of compare, merge and import-reference (tuner/compare.h and
// db/store.h do the work). Each takes the arguments after the command name and returns the exit
// code; usage errors are thrown as boost::program_options errors (exit code 2 in main).
#pragma once

#include <string>
#include <vector>

namespace reduce_tune {

/// reduce-tune compare [--static]: measured GPUs and published tables side by side, or the
/// compiler's resources per architecture.
int cmd_compare(const std::vector<std::string>& args);
/// reduce-tune merge OTHER.db...: bring other tuning databases into this one.
int cmd_merge(const std::vector<std::string>& args);
/// reduce-tune import-reference [--file CSV]: load the material's published figures into the store.
int cmd_import_reference(const std::vector<std::string>& args);

} // namespace reduce_tune
