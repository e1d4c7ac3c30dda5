// reduce-tune: parse_reduction (reduce_tune/reduction.h): a user reduction from `key = value` text,
// the file format of `reduce-tune reduction FILE`.
#include "reduce_tune/reduction.h"

#include <set>
#include <sstream>

namespace reduce_tune {
namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r";
  const std::size_t b = s.find_first_not_of(ws);
  return b == std::string::npos ? std::string() : s.substr(b, s.find_last_not_of(ws) - b + 1);
}

DType dtype_named(const std::string& text, int line) {
  const std::optional<DType> d = parse_dtype(trim(text));
  if (!d) throw ReductionError("reduce_tune: line " + std::to_string(line) + ": '" + trim(text) + "' is not a dtype");
  return *d;
}

} // namespace

Reduction parse_reduction(const std::string& text) {
  Reduction r;
  std::istringstream in(text);
  std::string raw;
  std::set<std::string> seen;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string l = trim(raw);
    if (l.empty() || l[0] == '#') continue;
    const int at = line;
    const auto bad = [&](const std::string& why) {
      return ReductionError("reduce_tune: line " + std::to_string(at) + ": " + why);
    };
    std::string key, value;
    if (const std::size_t heredoc = l.find("<<"); heredoc != std::string::npos &&
                                                  l.find('=') == std::string::npos) {
      key = trim(l.substr(0, heredoc));
      const std::string tag = trim(l.substr(heredoc + 2));
      if (tag.empty()) throw bad("'<<' needs a tag that ends the value");
      bool ended = false;
      while (std::getline(in, raw)) {
        ++line;
        if (trim(raw) == tag) {
          ended = true;
          break;
        }
        value += raw + "\n";
      }
      if (!ended) throw bad("the value of " + key + " has no line '" + tag + "' to end it");
    } else {
      const std::size_t eq = l.find('=');
      if (eq == std::string::npos) throw bad("expected 'key = value' or 'key <<TAG'");
      key = trim(l.substr(0, eq));
      value = trim(l.substr(eq + 1));
    }
    if (!seen.insert(key).second) throw bad(key + " is given twice");
    if (key == "map") r.map = value;
    else if (key == "combine") r.combine = value;
    else if (key == "identity") r.identity = value;
    else if (key == "post") r.post = value;
    else if (key == "accumulator") r.accumulator = value;
    else if (key == "preamble") r.preamble = value;
    else if (key == "accumulator_bytes") {
      try {
        std::size_t used = 0;
        const unsigned long v = std::stoul(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
        r.accumulator_bytes = v;
      } catch (const std::logic_error&) {
        throw bad("accumulator_bytes '" + value + "' is not a number");
      }
    } else if (key == "inputs") {
      std::istringstream list(value);
      for (std::string item; std::getline(list, item, ',');) r.inputs.push_back(dtype_named(item, at));
    } else if (key == "result") {
      r.result = dtype_named(value, at);
    } else if (key == "commutative") {
      if (value != "true" && value != "false") throw bad("commutative is true or false, not '" + value + "'");
      r.commutative = value == "true";
    } else {
      throw bad("unknown key '" + key + "' (map, combine, identity, post, accumulator, "
                "accumulator_bytes, preamble, inputs, result, commutative)");
    }
  }
  return r;
}

} // namespace reduce_tune
