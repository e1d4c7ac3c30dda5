// reduce-tune: the additive test of a user reduction (kernels/additive.h).
#include "kernels/additive.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace reduce_tune {
namespace {

bool space(char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; }
bool ident(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

std::string trimmed(const std::string& s) {
  const auto b = std::find_if_not(s.begin(), s.end(), space);
  const auto e = std::find_if_not(s.rbegin(), s.rend(), space).base();
  return b < e ? std::string(b, e) : std::string();
}

// `s` without its white space (`squeeze`: all of it, else only around it) and without the
// parentheses that enclose all of it, however deep: "( (a + b) )" -> "a+b".
std::string bare(const std::string& s, bool squeeze) {
  std::string r = s;
  if (squeeze) std::erase_if(r, space);
  for (r = trimmed(r); r.size() >= 2 && r.front() == '(' && r.back() == ')'; r = trimmed(r.substr(1, r.size() - 2))) {
    int depth = 0;
    std::size_t close = 0; // where the first parenthesis closes
    for (std::size_t k = 0; k < r.size(); ++k) {
      depth += r[k] == '(' ? 1 : r[k] == ')' ? -1 : 0;
      if (depth == 0) {
        close = k;
        break;
      }
    }
    if (close != r.size() - 1) break; // "(a) + (b)": not enclosed
  }
  return r;
}

// The first macro `preamble` defines (#define NAME, # define NAME(...)) whose name is in `names`.
std::optional<std::string> macro_named(const std::string& preamble, const std::vector<std::string>& names) {
  std::size_t at = 0;
  while (at < preamble.size()) {
    const std::size_t end = std::min(preamble.find('\n', at), preamble.size());
    std::string line = trimmed(preamble.substr(at, end - at));
    at = end + 1;
    if (line.empty() || line.front() != '#') continue;
    line = trimmed(line.substr(1));
    if (!line.starts_with("define") || line.size() == 6 || !space(line[6])) continue;
    line = trimmed(line.substr(6));
    const std::string name(line.begin(), std::find_if_not(line.begin(), line.end(), ident));
    if (std::find(names.begin(), names.end(), name) != names.end()) return name;
  }
  return std::nullopt;
}

// The names whose macros would change what the combine, the identity or the post-map of an
// accumulator spelled `acc` mean.
std::vector<std::string> guarded_names(const std::string& acc) {
  std::vector<std::string> names = {"a", "b"};
  for (std::size_t k = 0; k < acc.size();) {
    const std::size_t e = std::min(acc.find(' ', k), acc.size());
    if (e > k) names.push_back(acc.substr(k, e - k));
    k = e + 1;
  }
  return names;
}

bool integer_suffix(const std::string& s) {
  static constexpr const char* kSuffixes[] = {"",    "u",   "U",   "l",   "L",   "ll",  "LL",  "ul",
                                              "uL",  "Ul",  "UL",  "lu",  "lU",  "Lu",  "LU",  "ull",
                                              "uLL", "Ull", "ULL", "llu", "llU", "LLu", "LLU"};
  return std::find(std::begin(kSuffixes), std::end(kSuffixes), s) != std::end(kSuffixes);
}

} // namespace

bool is_zero_literal(const std::string& text) {
  const std::string s = bare(text, false);
  std::size_t k = 0;
  while (k < s.size() && s[k] == '0') ++k;
  const std::size_t whole = k;
  if (k < s.size() && s[k] == '.') { // 0.0, 0., .0, with f or F
    const std::size_t from = ++k;
    while (k < s.size() && s[k] == '0') ++k;
    const std::string suffix = s.substr(k);
    return whole + (k - from) > 0 && (suffix.empty() || suffix == "f" || suffix == "F");
  }
  return whole > 0 && integer_suffix(s.substr(k)); // 0, 00, 0u, 0ll, 0ull, ...
}

std::optional<DType> scalar_accumulator(const std::string& spelling, DType element) {
  const std::string s = trimmed(spelling);
  if (s.empty()) return accumulator_of(element);
  if (s == "float") return DType::f32;
  if (s == "double") return DType::f64;
  if (s == "int") return DType::i32;
  if (s == "unsigned" || s == "unsigned int") return DType::u32;
  if (s == "long long" || s == "unsigned long long") return DType::i64;
  return std::nullopt;
}

std::optional<std::string> not_additive(const Reduction& r) {
  const std::string acc = trimmed(r.accumulator);
  if (!r.commutative) return std::string("its combine is declared not commutative");
  if (!scalar_accumulator(acc, DType::f32))
    return "its accumulator '" + acc + "' is not a scalar spelling";
  const std::string combine = bare(r.combine, true);
  if (combine != "a+b" && combine != "b+a")
    return "its combine '" + trimmed(r.combine) + "' is not a + b";
  if (!is_zero_literal(r.identity)) return "its identity '" + trimmed(r.identity) + "' is not a zero literal";
  if (auto m = macro_named(r.preamble, guarded_names(acc)))
    return "its preamble defines a macro '" + *m + "'";
  return std::nullopt;
}

bool plain_post(const Reduction& r) {
  return bare(r.post, true) == "a" && !macro_named(r.preamble, {"a"});
}

} // namespace reduce_tune
