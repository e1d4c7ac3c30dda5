// reduce-tune: size expressions as users write them: 16777216, 2^24, 16M, 3*2^22+5.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reduce_tune {

/// The largest n accepted: 2^40 elements (4 TiB of float32, far past any GPU).
inline constexpr std::uint64_t kMaxSize = std::uint64_t(1) << 40;

/// Parses one size: sums of products of factors, a factor being a decimal number with an optional
/// binary suffix (K = 2^10, M = 2^20, G = 2^30) or a power a^b. Returns nullopt with the reason in
/// *why for anything else, zero, or more than kMaxSize.
std::optional<std::uint64_t> parse_size(std::string_view text, std::string* why = nullptr);
/// Parses a comma-separated list of sizes.
std::optional<std::vector<std::uint64_t>> parse_sizes(std::string_view text, std::string* why = nullptr);
/// "2^24" for powers of two, else the decimal.
std::string format_size(std::uint64_t n);

} // namespace reduce_tune
