// reduce-tune: the material's table.
#include "tuner/report.h"

#include "kernels/catalogue.h"
#include "tuner/material.h"
#include "tuner/sizes.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace reduce_tune {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

// Appends a row with speedups over the previous and the first row, and keeps the best.
void add_row(Table& t, TableRow r) {
  if (!t.rows.empty()) {
    r.step = t.rows.back().us / r.us;
    r.cumulative = t.rows.front().us / r.us;
  }
  t.rows.push_back(r);
  if (t.best.key.empty() || r.us < t.best.us) t.best = r;
}

void finish(Table& t) {
  if (!t.rows.empty()) t.best.cumulative = t.rows.front().us / t.best.us, t.best.step = 0;
}

/// "n = 2^20" for the array problem, "rows: 1K x 4K" (results x elements each) otherwise.
std::string shape_text(const Table& t) {
  if (t.problem == Problem::array) return "n = " + format_size(t.n);
  return std::string(name(t.problem)) + ": " + format_size(t.count) + " x " + format_size(t.n);
}

} // namespace

/// The op of a table as the store names it: "sum", or "user:<hash>".
static std::string op_text(const Table& t) { return t.user ? db::OpKey::user(*t.user).name() : std::string(name(t.op)); }

std::vector<Table> material_tables(const std::vector<db::Measurement>& ms, const std::string& device) {
  // (dtype, op, problem, count, n) -> variant -> best measurement
  using Key = std::tuple<DType, db::OpKey, Problem, std::uint64_t, std::uint64_t>;
  std::map<Key, std::map<std::string, const db::Measurement*>> best;
  std::map<Key, std::pair<std::size_t, std::size_t>> counts;
  for (const auto& m : ms) {
    const Key k{m.dtype, m.op_key(), m.problem, m.count, m.n};
    auto& c = counts[k];
    ++c.first;
    if (!m.valid) {
      ++c.second;
      continue;
    }
    const db::Measurement*& b = best[k][m.variant];
    if (!b || m.median_us < b->median_us) b = &m;
  }
  std::vector<Table> out;
  // Every point measured, also one where every measurement failed its check (no rows, no best).
  for (const auto& [k, c] : counts) {
    const auto& per_variant = best[k];
    Table t;
    t.device = device;
    db::OpKey op = Op::sum;
    std::tie(t.dtype, op, t.problem, t.count, t.n) = k;
    t.op = op.builtin().value_or(Op::sum);
    t.user = op.hash();
    std::tie(t.measured, t.failed) = c;
    for (const Variant& v : variants(t.problem)) {
      auto it = per_variant.find(std::string(v.name));
      if (it == per_variant.end()) continue;
      const db::Measurement& m = *it->second;
      add_row(t, {m.variant, m.key, m.median_us, m.gbps, m.pct_peak, 1, 1});
    }
    finish(t);
    out.push_back(std::move(t));
  }
  return out;
}

Table material_doc_table(const std::vector<db::Measurement>& ms, const std::string& doc_prefix,
                         DType dtype, Op op, std::uint64_t n,
                         const std::string& device) {
  Table t;
  t.device = device, t.dtype = dtype, t.op = op, t.n = n;
  for (const MaterialKernel& k : material_kernels()) {
    if (!k.doc.starts_with(doc_prefix)) continue;
    const db::Measurement* found = nullptr;
    for (const auto& m : ms)
      if (m.key == k.key && m.dtype == dtype && m.op == op && m.problem == Problem::array && m.n == n) {
        ++t.measured;
        t.failed += !m.valid;
        if (m.valid && (!found || m.median_us < found->median_us)) found = &m;
      }
    if (found)
      add_row(t, {std::string(k.name), found->key, found->median_us, found->gbps, found->pct_peak, 1, 1});
  }
  finish(t);
  return t;
}

std::string format_tables(const std::vector<Table>& tables, Format f) {
  std::ostringstream o;
  if (f == Format::json) o << "[";
  if (f == Format::csv)
    o << "device,dtype,op,problem,count,n,kernel,key,time_us,gbps,step_speedup,cumulative_speedup,pct_peak\n";
  bool first_table = true;
  for (const Table& t : tables) {
    if (f == Format::md) {
      o << "\n### " << t.device << ": " << name(t.dtype) << " " << op_text(t) << ", " << shape_text(t)
        << " (" << t.measured << " measured, " << t.failed << " failed the check)\n\n"
        << "| kernel | best configuration | time (us) | bandwidth (GB/s) | step speedup | "
           "cumulative speedup | % of peak |\n|---|---|---:|---:|---:|---:|---:|\n";
      for (const TableRow& r : t.rows)
        o << "| " << r.kernel << " | `" << r.key << "` | " << fixed(r.us, 2) << " | "
          << fixed(r.gbps, 1) << " | " << (&r == &t.rows.front() ? "" : fixed(r.step, 2) + "x")
          << " | " << fixed(r.cumulative, 2) << "x | " << fixed(r.pct_peak, 1) << " |\n";
      if (t.rows.empty())
        o << "| **best** | none: no configuration passed the check | | | | | |\n";
      else
        o << "| **best** | `" << t.best.key << "` | **" << fixed(t.best.us, 2) << "** | **"
          << fixed(t.best.gbps, 1) << "** | | " << fixed(t.best.cumulative, 2) << "x | **"
          << fixed(t.best.pct_peak, 1) << "** |\n";
    } else if (f == Format::csv) {
      auto row = [&](const TableRow& r, const std::string& kernel) {
        o << '"' << t.device << "\"," << name(t.dtype) << ',' << op_text(t) << ',' << name(t.problem) << ','
          << t.count << ',' << t.n << ',' << kernel << ','
          << r.key << ',' << fixed(r.us, 3) << ',' << fixed(r.gbps, 2) << ',' << fixed(r.step, 3)
          << ',' << fixed(r.cumulative, 3) << ',' << fixed(r.pct_peak, 2) << '\n';
      };
      for (const TableRow& r : t.rows) row(r, r.kernel);
      if (!t.rows.empty()) row(t.best, "best");
    } else {
      o << (first_table ? "" : ",") << "\n {\"device\": " << json_string(t.device)
        << ", \"dtype\": " << json_string(name(t.dtype)) << ", \"op\": " << json_string(op_text(t))
        << ", \"problem\": " << json_string(name(t.problem)) << ", \"count\": " << t.count << ", \"n\": " << t.n << ", \"measured\": " << t.measured << ", \"failed\": " << t.failed
        << ", \"best\": " << json_string(t.best.key) << ", \"rows\": [";
      for (const TableRow& r : t.rows)
        o << (&r == &t.rows.front() ? "" : ", ") << "{\"kernel\": " << json_string(r.kernel)
          << ", \"key\": " << json_string(r.key) << ", \"time_us\": " << fixed(r.us, 3)
          << ", \"gbps\": " << fixed(r.gbps, 2) << ", \"step_speedup\": " << fixed(r.step, 3)
          << ", \"cumulative_speedup\": " << fixed(r.cumulative, 3)
          << ", \"pct_peak\": " << fixed(r.pct_peak, 2) << "}";
      o << "]}";
    }
    first_table = false;
  }
  if (f == Format::json) o << "\n]\n";
  return o.str();
}

} // namespace reduce_tune
