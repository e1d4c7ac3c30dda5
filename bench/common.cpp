// reduce-tune bench: host-side helpers (bench/common.h).
#include "bench/common.h"

#include "tuner/sizes.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>

namespace rt_bench {

void for_each_flag(int argc, char** argv,
                   const std::function<void(const std::string&, const std::function<std::string()>&)>& f) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    bool has_value = false;
    if (auto eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    f(flag, [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    });
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::uint64_t> sizes_arg(const std::string& flag, const std::string& text) {
  if (text == "none") return {};
  std::string why;
  auto v = reduce_tune::parse_sizes(text, &why);
  if (!v) throw UsageError(flag + ": " + why);
  return *v;
}

int int_arg(const std::string& flag, const std::string& text, int lo) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || v < lo || v > 1000000)
    throw UsageError(flag + ": expected an integer >= " + std::to_string(lo) + ", got '" + text + "'");
  return int(v);
}

std::vector<reduce_tune::DType> dtypes_arg(const std::string& flag, const std::string& text) {
  std::vector<reduce_tune::DType> out;
  for (const auto& t : split(text)) {
    auto d = reduce_tune::parse_dtype(t);
    if (!d)
      throw UsageError(flag + ": '" + t + "': expected int32, uint32, int64, float32, float64, bfloat16 or float16");
    out.push_back(*d);
  }
  if (out.empty()) throw UsageError(flag + " needs a value");
  return out;
}

std::vector<reduce_tune::Op> ops_arg(const std::string& flag, const std::string& text) {
  std::vector<reduce_tune::Op> out;
  for (const auto& t : split(text)) {
    auto op = reduce_tune::parse_op(t);
    if (!op) throw UsageError(flag + ": '" + t + "': expected sum, min or max");
    if (*op == reduce_tune::Op::dot) // its second input is the tuner's and the tests' so far
      throw UsageError(flag + ": dot reads two inputs; the benches time ops of one (reduce-tune "
                       "tune --ops dot measures it)");
    out.push_back(*op);
  }
  if (out.empty()) throw UsageError(flag + " needs a value");
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gib(double bytes) { return fmt("%.2f GiB", bytes / (1024.0 * 1024 * 1024)); }

std::string us_str(double us) {
  return us < 100 ? fmt("%.2f", us) : us < 1000 ? fmt("%.1f", us) : fmt("%.0f", us);
}

std::string today() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string dtype_name(reduce_tune::DType d) { return std::string(reduce_tune::name(d)); }
std::string op_name(reduce_tune::Op o) { return std::string(reduce_tune::name(o)); }

} // namespace rt_bench
