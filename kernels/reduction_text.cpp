// reduce-tune: parse_reduction and to_text (reduce_tune/reduction.h): a user reduction from and to
// `key = value` text, the file format of `reduce-tune reduction FILE`.
#include "reduce_tune/reduction.h"

#include <set>
#include <sstream>

namespace reduce_tune {
namespace {

/// Without surrounding blanks and line ends: a block's value read back ends with its last
/// line's newline, which to_text must not write as one more line each time round.
std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
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

std::string to_text(const Reduction& r) {
  const Reduction defaults;
  std::string out;
  const auto field = [&](const char* key, const std::string& value, const std::string& default_value) {
    const std::string v = trim(value);
    if (v == trim(default_value)) return;
    if (v.find('\n') == std::string::npos) {
      out += std::string(key) + " = " + v + "\n";
      return;
    }
    // A tag that no line of the value holds alone.
    std::string tag = "END";
    for (int i = 0;; ++i) {
      bool clash = false;
      std::istringstream lines(v);
      for (std::string l; std::getline(lines, l);) clash |= trim(l) == tag;
      if (!clash) break;
      tag = "END" + std::to_string(i);
    }
    out += std::string(key) + " <<" + tag + "\n" + v + "\n" + tag + "\n";
  };
  field("map", r.map, defaults.map);
  field("combine", r.combine, defaults.combine);
  field("identity", r.identity, defaults.identity);
  field("post", r.post, defaults.post);
  field("accumulator", r.accumulator, defaults.accumulator);
  if (r.accumulator_bytes) out += "accumulator_bytes = " + std::to_string(r.accumulator_bytes) + "\n";
  field("preamble", r.preamble, defaults.preamble);
  if (!r.inputs.empty()) {
    out += "inputs = ";
    for (std::size_t i = 0; i < r.inputs.size(); ++i) out += (i ? "," : "") + std::string(name(r.inputs[i]));
    out += "\n";
  }
  if (r.result) out += "result = " + std::string(name(*r.result)) + "\n";
  if (!r.commutative) out += "commutative = false\n";
  return out;
}

} // namespace reduce_tune
