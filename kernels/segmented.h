// reduce-tune: the segmented problems' part of the catalogue (kernels/segmented.cpp), for
// kernels/catalogue.cpp and the sweep. The public entry points are in kernels/catalogue.h.
#pragma once

#include "kernels/catalogue.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace reduce_tune {

/// The variants of a segmented problem (empty for Problem::array).
std::span<const Variant> segmented_variants(Problem problem);
/// The sweep's configurations of a segmented variant.
std::vector<Config> segmented_space(const Variant& v);
/// Why a configuration of a segmented variant is invalid beyond the rules every variant shares
/// (kernels/catalogue.cpp), or nullopt.
std::optional<std::string> segmented_invalid(const Config& c, const Target& t);
/// Why `c` cannot reduce `shape` though it is valid for `t`, or nullopt: argmax's and argmin's
/// keyed atomic finish indexes rows in 32 bits (kKeyedMaxLength, kernels/ops.h). `shape` may be a
/// lookup point (lengths rounded down to a power of two): the limit lies at one.
std::optional<std::string> shape_invalid(const Config& c, const Target& t, Shape shape);
/// Why measuring `c` at `shape` would tell nothing (another configuration of the sweep does the
/// same work with fewer idle lanes, or far sooner), or nullopt. Not a validity rule: the
/// configuration is right. `longest`: the longest segment of an offsets problem (0: unknown).
std::optional<std::string> pointless(const Config& c, Shape shape, std::uint64_t longest = 0);
/// Why the sweep leaves `c` out for `t`'s op though it is valid, or nullopt: columns_split's
/// ordered finish in taller row slices (one block of 512 or 1024 threads per SM, two of 1024, or
/// u8; kernels/segmented.cpp) serves the ops that cannot finish atomically (logsumexp, argmax and
/// argmin of 64-bit values, var of float64 fields, non-additive user reductions) and var, whose
/// float64 atomics are measured beside it; another op that can takes the atomic finish's space.
/// The atomic finish's u8 (kernels/segmented.cpp) serves argmax's keys and var's shifted sums alone.
std::optional<std::string> unswept(const Config& c, const Target& t);
/// Why `c` does not suit an offsets call whose mean segment length is not known (a lookup by the
/// segment count alone), or nullopt: segments_staged is measured at means of a few elements only
/// and takes 2x the flat mappings' time at a mean of 16 (kernels/segmented.cpp).
std::optional<std::string> needs_mean(const Config& c);
/// The plain configuration of which `c` is the evict-first twin (a segmented `_streaming` variant:
/// the same template and parameters, loads with RT_EVICT_FIRST), or nullopt.
std::optional<Config> evict_first_twin_of(const Config& c);
/// The evict-first twin of plain configuration `c` (its variant's `_streaming` twin), or nullopt
/// where its variant has none.
std::optional<Config> evict_first_twin(const Config& c);

} // namespace reduce_tune
