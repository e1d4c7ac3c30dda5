// reduce-tune bench: the segmented benchmark's report (segmented_report.h).
#include "bench/segmented_report.h"

#include "bench/common.h"
#include "tuner/reference.h"
#include "tuner/sizes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace rt_bench::seg {

std::uint64_t Case::count() const {
  switch (problem) {
  case Problem::rows: return rows;
  case Problem::columns: return cols;
  case Problem::segments: return segments;
  case Problem::array: return 1;
  }
  return 0;
}

double Case::length() const {
  const std::uint64_t k = count();
  return k ? double(n) / double(k) : 0;
}

reduce_tune::Shape Case::shape() const {
  switch (problem) {
  case Problem::rows: return {rows, cols};
  case Problem::columns: return {cols, rows};
  case Problem::segments: return {segments, segments ? n / segments : 0};
  case Problem::array: return {1, n};
  }
  return {};
}

std::uint64_t Case::bytes_read(std::size_t es) const {
  return n * es + (problem == Problem::segments ? (segments + 1) * sizeof(std::int64_t) : 0);
}

const char* const kWhoName[kWho] = {"reduce-tune", "cub", "cub-iter", "ceiling", "one-d"};

const char* const kCsvHeader =
    "problem,dtype,op,rows,cols,segments,n,count,length,bytes_read,bytes_written,mode,contestant,"
    "median_us,min_us,all_median_us,calls,gbps,pct_peak,ok,config";

std::string length_mix(const std::vector<std::int64_t>& offsets) {
  if (offsets.size() < 2) return "-";
  const std::uint64_t longest = reduce_tune::longest_segment(offsets);
  std::size_t empty = 0;
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) empty += offsets[i + 1] == offsets[i];
  const double total = double(offsets.back() - offsets.front()), segments = double(offsets.size() - 1);
  std::string mix = fmt("%.0f %%", total > 0 ? 100 * double(longest) / total : 0.0);
  return mix.append(" / ").append(fmt("%.0f %%", 100 * double(empty) / segments));
}

namespace {

std::string problem_name(Problem p) { return std::string(reduce_tune::name(p)); }

/// Bytes contestant w reads: the case's (the 1-D reduction reads the elements only).
std::uint64_t bytes_read_by(const Case& c, std::size_t es, int w) {
  return w == ONE_D ? c.n * es : c.bytes_read(es);
}

/// GB/s of contestant w.
double gbps_of(const Case& c, DType dt, double us, int w = RT) {
  const std::uint64_t bytes = bytes_read_by(c, reduce_tune::size_of(dt), w);
  return us > 0 ? double(bytes) / (us * 1e-6) / 1e9 : 0;
}

/// "2^20" for powers of two, else the number.
std::string len_str(double v) {
  if (v >= 1 && v == double(std::uint64_t(v))) return reduce_tune::format_size(std::uint64_t(v));
  return fmt("%.1f", v);
}

std::string shape_str(const Case& c) {
  if (c.problem == Problem::segments)
    return reduce_tune::format_size(c.segments) + " | " + len_str(c.length());
  return reduce_tune::format_size(c.rows) + " | " + reduce_tune::format_size(c.cols);
}

/// The shape without table separators: "2^10 x 2^14", "2^16 segments of mean 256".
std::string at_str(const Case& c) {
  if (c.problem == Problem::segments)
    return reduce_tune::format_size(c.segments) + " segments of mean " + len_str(c.length());
  return reduce_tune::format_size(c.rows) + " x " + reduce_tune::format_size(c.cols);
}

/// The faster CUB variant that ran and passed (cub or cub-iter), or -1.
int best_cub(const Row& r, int mode) {
  int best = -1;
  for (int w : {CUB, CUB_ITER}) {
    const Cell& x = r.cell[mode][w];
    if (!x.ran || r.failed(mode, w)) continue;
    if (best < 0 || x.st.median_us < r.cell[mode][best].st.median_us) best = w;
  }
  return best;
}

double time_of(const Row& r, int mode, int w) {
  const Cell& x = r.cell[mode][w];
  return x.ran && !r.failed(mode, w) ? x.st.median_us : 0;
}

} // namespace

void write_csv(std::ostream& out, const Device& dev, Problem p, DType dt, Op op, int mode,
               const Row& r) {
  const Case& c = r.c;
  const std::size_t es = reduce_tune::size_of(dt);
  for (int w = 0; w < kWho; ++w) {
    const Cell& x = r.cell[mode][w];
    if (!x.ran) continue;
    const double g = x.error.empty() ? gbps_of(c, dt, x.st.median_us, w) : 0;
    // The ceiling and the 1-D reduction write one value; the others one per result.
    const std::uint64_t written = w == CEIL ? 4 : w == ONE_D ? es : c.count() * es;
    out << problem_name(p) << ',' << dtype_name(dt) << ',' << op_name(op) << ',' << c.rows << ','
        << c.cols << ',' << c.segments << ',' << c.n << ',' << c.count() << ',' << fmt("%.10g", c.length()) << ','
        << bytes_read_by(c, es, w) << ',' << written << ',' << (mode == 0 ? "cold" : "hot") << ','
        << kWhoName[w] << ',' << x.st.median_us << ',' << x.st.min_us << ',' << x.st.all_median_us
        << ',' << x.st.calls << ',' << g << ',' << 100 * g / dev.peak_gbps << ','
        << (r.failed(mode, w) ? 0 : 1) << ',' << (w == RT ? r.key : "") << '\n';
  }
}

void print_table(const Device& dev, Problem p, DType dt, Op op, int mode, const std::vector<Row>& rows) {
  const bool segs = p == Problem::segments, has_iter = p == Problem::rows;
  std::printf("\n### %s: %s %s, %s L2\n\n", problem_name(p).c_str(), dtype_name(dt).c_str(),
              op_name(op).c_str(), mode == 0 ? "cold" : "hot");
  std::printf("| n | %s | reduce-tune us | GB/s | CUB us | GB/s |%s ceiling us | GB/s | 1-D us "
              "| GB/s | %% peak (ceiling) | rt/CUB | CUB/1-D | rt %% of ceiling | check | "
              "reduce-tune config |\n",
              segs ? "segments | mean length | longest / empty" : "rows | cols",
              has_iter ? " CUB-iter us | GB/s |" : "");
  std::printf("|---:|---:|---:|%s---:|---:|---:|---:|%s---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
              segs ? "---:|" : "", has_iter ? "---:|---:|" : "");
  for (const Row& r : rows) {
    std::string line = "| " + reduce_tune::format_size(r.c.n) + " | " + shape_str(r.c) + " |";
    if (segs) line.append(" ").append(r.mix).append(" |");
    if (!r.skip.empty()) {
      std::printf("%s skipped: %s |\n", line.c_str(), r.skip.c_str());
      continue;
    }
    const Cell* c = r.cell[mode];
    for (int w = 0; w < kWho; ++w) {
      if (w == CUB_ITER && !has_iter) continue;
      if (!c[w].ran) line += " - | - |";
      else if (!c[w].error.empty() && c[w].st.calls == 0) line += " error | - |";
      else
        line.append(" ").append(us_str(c[w].st.median_us)).append(" | ")
            .append(fmt("%.0f", gbps_of(r.c, dt, c[w].st.median_us, w))).append(" |");
    }
    const double t_rt = time_of(r, mode, RT), t_ceil = time_of(r, mode, CEIL);
    const double t_1d = time_of(r, mode, ONE_D);
    const int bc = best_cub(r, mode);
    // Cells appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "literal" + string.
    auto cell = [&line](const std::string& text) { line.append(" ").append(text).append(" |"); };
    cell(t_ceil > 0 ? fmt("%.1f", 100 * gbps_of(r.c, dt, t_ceil) / dev.peak_gbps) : "-");
    cell(t_rt > 0 && bc >= 0 ? fmt("%.2f", time_of(r, mode, bc) / t_rt) : "-");
    cell(t_1d > 0 && bc >= 0 ? fmt("%.2f", time_of(r, mode, bc) / t_1d) : "-");
    cell(t_rt > 0 && t_ceil > 0 ? fmt("%.0f", 100 * t_ceil / t_rt) : "-");
    std::string check;
    for (int w = 0; w < kWho; ++w)
      if (r.failed(mode, w))
        check.append(check.empty() ? "FAILED: " : "; ").append(kWhoName[w]).append(": ").append(c[w].error);
    cell(check.empty() ? std::string("ok") : check);
    cell(r.key.empty() ? std::string() : std::string("`").append(r.key).append("` (").append(r.match).append(")"));
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

void print_targets(const Tables& tables) {
  std::printf("\n### Targets (cold L2, sum)\n\n");
  std::printf("rt/CUB = CUB time / reduce-tune time against the faster CUB variant that ran "
              "(rows: offsets array or counting iterator), over every shape; %% of ceiling = "
              "ceiling time / reduce-tune time at >= 2^24 elements. Targets: rows and columns "
              ">= 1.1x CUB, segments >= 5x CUB; rows >= 85 %%, columns and segments >= 80 %% of "
              "the ceiling. Of the shapes below the CUB target, those where it would take a call "
              "faster than the library's tuned 1-D reduction of the same elements (one-d: CUB time "
              "/ target < 1-D time). (torch: bench/frameworks_segmented.py.)\n\n");
  std::printf("| problem | dtype | shapes | worst rt/CUB | at (n, shape) | below target | of "
              "which faster than 1-D | worst %% of ceiling, n >= 2^24 | at (n, shape) | below "
              "target |\n");
  std::printf("|---|---|---:|---:|---|---:|---:|---:|---|---:|\n");
  for (const auto& [k, rows] : tables) {
    const auto& [p, dt, op] = k;
    if (op != Op::sum) continue;
    const double cub_target = p == Problem::segments ? 5.0 : 1.1;
    const double ceil_target = p == Problem::rows ? 85.0 : 80.0;
    double worst_cub = std::numeric_limits<double>::infinity(), worst_ceil = worst_cub;
    std::string at_cub = "-", at_ceil = "-";
    int shapes = 0, below_cub = 0, under_1d = 0, below_ceil = 0;
    for (const Row& r : rows) {
      if (!r.skip.empty()) continue;
      ++shapes;
      const double t_rt = time_of(r, 0, RT);
      if (t_rt <= 0) continue;
      const std::string at = reduce_tune::format_size(r.c.n) + ", " + at_str(r.c);
      if (const int bc = best_cub(r, 0); bc >= 0) {
        const double q = time_of(r, 0, bc) / t_rt;
        below_cub += q < cub_target;
        const double t_1d = time_of(r, 0, ONE_D);
        under_1d += q < cub_target && t_1d > 0 && time_of(r, 0, bc) / cub_target < t_1d;
        if (q < worst_cub) worst_cub = q, at_cub = at;
      }
      if (const double t_ceil = time_of(r, 0, CEIL); t_ceil > 0 && r.c.n >= (1ull << 24)) {
        const double q = 100 * t_ceil / t_rt;
        below_ceil += q < ceil_target;
        if (q < worst_ceil) worst_ceil = q, at_ceil = at;
      }
    }
    auto show = [](double v, const char* f) { return std::isinf(v) ? std::string("-") : fmt(f, v); };
    std::printf("| %s | %s | %d | %s | %s | %d | %d | %s | %s | %d |\n", problem_name(p).c_str(),
                dtype_name(dt).c_str(), shapes, show(worst_cub, "%.2f").c_str(), at_cub.c_str(),
                below_cub, under_1d, show(worst_ceil, "%.0f %%").c_str(), at_ceil.c_str(), below_ceil);
  }
  std::fflush(stdout);
}

} // namespace rt_bench::seg
