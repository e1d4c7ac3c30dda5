// libFuzzer target: the reference-data CSV parser (tuner/compare.cpp parse_published_csv), which
// reads data/published.csv and files users give it. A malformed file must be refused with a
// std::runtime_error naming the line; any other exception, a crash or undefined behaviour is a
// finding. What it accepts must keep its promises: sizes in 1..kMaxSize, a finite time, NaN or a
// finite figure for the optional columns, a document and a kernel name. Built and run by
// scripts/ci/fuzz.sh, linked with the library's sources.
#include "tuner/compare.h"
#include "tuner/sizes.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

using namespace reduce_tune;

namespace {
[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz_compare: %s\n", what);
  std::abort();
}
bool nan_or_finite(double v) { return std::isnan(v) || std::isfinite(v); }
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<db::PublishedRecord> rows;
  try {
    rows = parse_published_csv(text);
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).empty()) broken("refused without a reason");
    return 0;
  }
  for (const auto& r : rows) {
    if (r.n < 1 || r.n > kMaxSize) broken("accepted n out of 1..kMaxSize");
    if (!std::isfinite(r.time_ms)) broken("accepted a time that is not finite");
    if (!nan_or_finite(r.gbps) || !nan_or_finite(r.step_speedup) || !nan_or_finite(r.cumulative_speedup))
      broken("accepted an infinite figure");
    if (r.doc.empty() || r.kernel.empty()) broken("accepted an empty doc or kernel");
    (void)published_label(r);
  }
  if (!rows.empty()) (void)default_doc(rows.front().dtype, rows.front().n, rows);
  return 0;
}
