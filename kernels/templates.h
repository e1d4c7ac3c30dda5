// reduce-tune: the CUDA C++ templates, embedded in the binary at build time.
#pragma once

#include <string_view>

namespace reduce_tune {

/// The text of templates/<name> (e.g. "common.cuh", "array/unrolling.cu"); throws if unknown.
std::string_view template_source(std::string_view name);

} // namespace reduce_tune
