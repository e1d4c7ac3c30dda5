// reduce-tune bench: host-side helpers the benchmarks share: command-line values, number and
// date formatting, dtype and op names.
#pragma once

#include "reduce_tune/config.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rt_bench {

/// Bad command line: message and usage, exit code 3.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The non-empty items of a comma-separated list.
std::vector<std::string> split(const std::string& s);
/// A list of sizes (tuner/sizes.h forms: 2^10, 3*2^20+17, 16M); "none" is the empty list.
std::vector<std::uint64_t> sizes_arg(const std::string& flag, const std::string& text);
/// An integer in [lo, 10^6].
int int_arg(const std::string& flag, const std::string& text, int lo);
/// A list of dtypes / ops by name (UsageError naming `flag` on an unknown one).
std::vector<reduce_tune::DType> dtypes_arg(const std::string& flag, const std::string& text);
std::vector<reduce_tune::Op> ops_arg(const std::string& flag, const std::string& text);

/// printf-formatted double.
std::string fmt(const char* f, double v);
/// "1.25 GiB".
std::string gib(double bytes);
/// "12.34" / "123.4" / "1234" style microseconds.
std::string us_str(double us);
/// "2026-01-31 12:00:00 UTC".
std::string today();

std::string dtype_name(reduce_tune::DType d);
std::string op_name(reduce_tune::Op o);

} // namespace rt_bench
