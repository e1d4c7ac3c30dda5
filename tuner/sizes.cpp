// reduce-tune: size expressions.
#include "tuner/sizes.h"

#include <bit>
#include <cctype>

namespace reduce_tune {
namespace {

// A recursive-descent parser over the text; every step checks for overflow past kMaxSize.
class Parser {
public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::optional<std::uint64_t> parse(std::string* why) {
    auto v = sum();
    if (v && pos_ != s_.size()) error_ = std::string("unexpected '").append(1, s_[pos_]).append("'");
    if (v && error_.empty() && *v == 0) error_ = "it must be at least 1";
    if (!v || !error_.empty()) {
      // Appended, not concatenated: GCC 12 warns falsely (-Wrestrict) on "..." + std::string.
      if (why) *why = std::string("'").append(s_).append("' is not a size: ").append(error_);
      return std::nullopt;
    }
    return v;
  }

private:
  std::optional<std::uint64_t> sum() {
    auto v = product();
    while (v && eat('+')) {
      auto r = product();
      if (!r) return std::nullopt;
      v = checked(*v + *r, *v + *r >= *v);
    }
    return v;
  }
  std::optional<std::uint64_t> product() {
    auto v = factor();
    while (v && eat('*')) {
      auto r = factor();
      if (!r) return std::nullopt;
      v = checked(*v * *r, *r == 0 || *v <= kMaxSize / *r);
    }
    return v;
  }
  std::optional<std::uint64_t> factor() {
    auto base = number();
    if (!base) return std::nullopt;
    if (eat('^')) {
      auto e = number();
      if (!e) return std::nullopt;
      if (*base <= 1) return *e == 0 ? 1 : *base; // 0^e and 1^e: no loop of e steps
      std::uint64_t v = 1;
      for (std::uint64_t i = 0; i < *e; ++i) {
        if (*base > 1 && v > kMaxSize / *base) return checked(0, false);
        v *= *base;
      }
      return v;
    }
    if (pos_ < s_.size()) {
      const char c = char(std::toupper(static_cast<unsigned char>(s_[pos_])));
      const int shift = c == 'K' ? 10 : c == 'M' ? 20 : c == 'G' ? 30 : 0;
      if (shift) {
        ++pos_;
        return checked(*base << shift, *base <= (kMaxSize >> shift));
      }
    }
    return base;
  }
  std::optional<std::uint64_t> number() {
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + std::uint64_t(s_[pos_++] - '0');
      if (v > kMaxSize) return checked(0, false);
    }
    if (pos_ == start) {
      error_ = pos_ < s_.size() ? "unexpected '" + std::string(1, s_[pos_]) + "'"
                                : "a number is missing at the end";
      return std::nullopt;
    }
    return v;
  }
  std::optional<std::uint64_t> checked(std::uint64_t v, bool ok) {
    if (ok && v <= kMaxSize) return v;
    error_ = "larger than the limit of 2^40 elements";
    return std::nullopt;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::string error_;
};

} // namespace

std::optional<std::uint64_t> parse_size(std::string_view text, std::string* why) {
  return Parser(text).parse(why);
}

std::optional<std::vector<std::uint64_t>> parse_sizes(std::string_view text, std::string* why) {
  std::vector<std::uint64_t> out;
  while (true) {
    const auto comma = text.find(',');
    auto v = parse_size(text.substr(0, comma), why);
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

std::string format_size(std::uint64_t n) {
  if (std::has_single_bit(n)) return "2^" + std::to_string(std::bit_width(n) - 1);
  return std::to_string(n);
}

} // namespace reduce_tune
