// reduce-tune: deliberately failing kernels (one faults, one hangs) that prove the sweep survives
// both. The CLI registers them with the catalogue (register_variants) when
// REDUCE_TUNE_TEST_VARIANTS=1; the library never carries them.
#pragma once

#include <string_view>

namespace reduce_tune {

/// The text of templates/<name> for a test variant ("test/test_fault.cu"), embedded at build
/// time; throws if unknown.
std::string_view test_template_source(std::string_view name);

/// Registers test_fault and test_hang when REDUCE_TUNE_TEST_VARIANTS=1 (once in a process).
/// Returns whether they are registered.
bool register_test_variants_from_env();

} // namespace reduce_tune
