// reduce-tune: the shells of variants (the catalogue listed, with what is valid on an architecture)
// and compile (every valid configuration compiled for one, no GPU needed). Each takes the
// arguments after the command name and returns the exit code; usage errors are thrown (exit code
// 2 in main).
#pragma once

#include "reduce_tune/config.h"

#include <string>
#include <vector>

namespace reduce_tune {

/// reduce-tune variants: the catalogue's variants and how many of their configurations are valid
/// for (--arch, --dtype, --op, --problem), with the reasons for the others; --material: the
/// material's kernels and their keys.
int cmd_variants(const std::vector<std::string>& args);
/// reduce-tune compile: compiles every valid configuration for --arch with NVRTC and prints each
/// kernel's resources; 1 where one fails to compile.
int cmd_compile(const std::vector<std::string>& args);

} // namespace reduce_tune

namespace reduce_tune::cli {

/// Every variant `names` names exists and solves `problem`; else Usage naming the first that does
/// not, and the command that lists them.
void check_variants(const std::vector<std::string>& names, Problem problem);

} // namespace reduce_tune::cli
