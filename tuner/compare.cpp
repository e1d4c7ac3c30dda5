// reduce-tune: comparison tables (measured GPUs, published tables, architectures) and plots.
#include "tuner/compare.h"

#include "kernels/catalogue.h"
#include "kernels/runner.h"
#include "tuner/cubin.h"
#include "tuner/material.h"
#include "tuner/sizes.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>


namespace reduce_tune {
namespace {

namespace fs = std::filesystem;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Significant digits for times: 0.2471, 12.37, 3433.
std::string ms_text(double ms) { return std::isnan(ms) ? "" : fmt(ms < 1 ? "%.4f" : ms < 100 ? "%.3g" : "%.0f", ms); }

std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (c == '\n') r += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      r += buf;
    }
    else r += c;
  }
  return r + "\"";
}

std::string json_number(double v, const char* f = "%.6g") { return std::isnan(v) ? "null" : fmt(f, v); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string r = "\"";
  for (const char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

std::string csv_number(double v, const char* f = "%.6g") { return std::isnan(v) ? "" : fmt(f, v); }

/// Splits one CSV record starting at `pos` (RFC 4180); advances pos past its line end.
std::vector<std::string> csv_record(std::string_view text, std::size_t& pos) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (quoted) {
      if (c == '"' && pos + 1 < text.size() && text[pos + 1] == '"') out.back() += '"', ++pos;
      else if (c == '"') quoted = false;
      else out.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
      ++pos;
      return out;
    } else {
      out.back() += c;
    }
  }
  if (quoted) throw std::runtime_error("unterminated quoted field");
  return out;
}

double number(const std::string& s, bool optional, const char* what) {
  if (s.empty()) {
    if (optional) return kNone;
    throw std::runtime_error(std::string("empty ") + what);
  }
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || !std::isfinite(v)) throw std::runtime_error(std::string(what) + " '" + s + "' is not a number");
  return v;
}

/// A whole number in 0..1e6 (table order, block size): a double past int's range is no int.
int small_int(const std::string& s, const char* what) {
  const double v = number(s, false, what);
  if (v < 0 || v > 1e6 || v != std::floor(v))
    throw std::runtime_error(std::string(what) + " '" + s + "' is not a whole number in 0..1000000");
  return int(v);
}

const MaterialKernel* material_kernel(const std::string& doc, const std::string& name) {
  for (const MaterialKernel& k : material_kernels())
    if (k.doc == doc && k.name == name) return &k;
  return nullptr;
}

/// Fills step and cumulative speedups down one column, over the rows of the kernel sequence.
void speedups(std::vector<std::vector<CompareCell>>& cells, const std::vector<CompareRow>& rows, std::size_t col) {
  double first = kNone, prev = kNone;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    CompareCell& c = cells[r][col];
    if (!c.present || rows[r].order == 0 || !(c.ms > 0)) continue;
    if (!std::isnan(prev)) c.step = prev / c.ms;
    if (!std::isnan(first)) c.cumulative = first / c.ms;
    if (std::isnan(first)) first = c.ms;
    prev = c.ms;
  }
}

std::string doc_short(const std::string& doc) { return doc.substr(0, doc.find('_')); }

} // namespace

// ---- published figures -------------------------------------------------------------------

std::vector<db::PublishedRecord> parse_published_csv(std::string_view text) {
  std::size_t pos = 0, line = 1;
  if (text.substr(0, 3) == "\xef\xbb\xbf") pos = 3; // UTF-8 byte order mark
  const auto header = csv_record(text, pos);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"doc", "gpu", "arch", "kernel", "order", "dtype", "n", "block", "time_ms", "gbps",
                           "step_speedup", "cumulative_speedup", "note"})
    if (!col.count(need)) throw std::runtime_error("published CSV: the header has no column '" + std::string(need) + "'");
  std::vector<db::PublishedRecord> out;
  while (pos < text.size()) {
    const std::size_t start_line = ++line, start = pos;
    try {
      const auto f = csv_record(text, pos);
      // A quoted field may span lines.
      line += std::size_t(std::count(text.begin() + std::ptrdiff_t(start), text.begin() + std::ptrdiff_t(pos), '\n'));
      if (line > start_line) --line;
      if (f.size() == 1 && f[0].empty()) continue; // blank line
      if (f.size() != header.size())
        throw std::runtime_error(std::to_string(f.size()) + " fields, the header has " + std::to_string(header.size()));
      auto at = [&](const char* c) -> const std::string& { return f[col.at(c)]; };
      db::PublishedRecord r;
      r.doc = at("doc");
      r.gpu = at("gpu");
      r.arch = at("arch");
      r.kernel = at("kernel");
      r.order = at("order").empty() ? 0 : small_int(at("order"), "order");
      r.dtype = at("dtype");
      if (!parse_dtype(r.dtype)) throw std::runtime_error("unknown dtype '" + r.dtype + "'");
      std::string why;
      const auto n = parse_size(at("n"), &why);
      if (!n) throw std::runtime_error(why);
      r.n = *n;
      r.block = at("block").empty() ? 0 : small_int(at("block"), "block");
      r.time_ms = number(at("time_ms"), false, "time_ms");
      r.gbps = number(at("gbps"), true, "gbps");
      r.step_speedup = number(at("step_speedup"), true, "step_speedup");
      r.cumulative_speedup = number(at("cumulative_speedup"), true, "cumulative_speedup");
      r.note = at("note");
      if (r.doc.empty() || r.kernel.empty()) throw std::runtime_error("empty doc or kernel");
      out.push_back(std::move(r));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("published CSV, record " + std::to_string(out.size() + 1) + " (line " +
                               std::to_string(start_line) + "): " + e.what());
    }
  }
  return out;
}

std::string published_label(const db::PublishedRecord& r) {
  return "published: " + (r.gpu.empty() ? std::string("GPU not named") : r.gpu) + " (" + r.doc + ")";
}

// ---- measured comparison -----------------------------------------------------------------

std::string default_doc(const std::string& dtype, std::uint64_t n, const std::vector<db::PublishedRecord>& published) {
  for (const auto& r : published)
    if (r.dtype == dtype && r.n == n) return r.doc;
  for (const auto& r : published)
    if (r.dtype == dtype) return r.doc;
  return std::string(material_kernels().back().doc);
}

CompareTable compare_table(const std::vector<GpuData>& gpus, const std::vector<db::PublishedRecord>& published,
                           const CompareOptions& o) {
  CompareTable t;
  t.dtype = o.dtype, t.op = o.op, t.n = o.n, t.config = o.config;
  const std::string prefix = o.doc.empty() ? default_doc(std::string(name(o.dtype)), o.n, published) : o.doc;
  for (const MaterialKernel& k : material_kernels())
    if (k.doc.starts_with(prefix)) {
      if (t.doc.empty()) t.doc = k.doc;
      if (k.doc == t.doc) t.rows.push_back({std::string(k.name), std::string(k.key), k.order});
    }
  if (t.rows.empty()) throw std::invalid_argument("no document of the material starts with '" + prefix + "'");
  std::sort(t.rows.begin(), t.rows.end(), [](const CompareRow& a, const CompareRow& b) { return a.order < b.order; });
  // Published rows outside the kernel sequence (CPU baselines) come last.
  for (const auto& p : published)
    if (p.doc == t.doc && !material_kernel(p.doc, p.kernel) &&
        std::none_of(t.rows.begin(), t.rows.end(), [&](const CompareRow& r) { return r.kernel == p.kernel; }))
      t.rows.push_back({p.kernel, "", 0});

  // Measured columns: GPUs with a valid measurement of the problem; the same name twice gets the uuid.
  std::vector<const GpuData*> measured;
  for (const GpuData& g : gpus)
    if (std::any_of(g.measurements.begin(), g.measurements.end(), [&](const db::Measurement& m) {
          return m.valid && m.problem == Problem::array && m.dtype == o.dtype && m.op == o.op && m.n == o.n;
        }))
      measured.push_back(&g);
  for (const GpuData* g : measured) {
    CompareColumn c;
    c.gpu = c.label = g->device.name;
    if (std::count_if(measured.begin(), measured.end(), [&](const GpuData* h) { return h->device.name == g->device.name; }) > 1)
      c.label += " (" + g->device.uuid.substr(0, std::min<std::size_t>(g->device.uuid.size(), 12)) + ")";
    c.uuid = g->device.uuid;
    c.dtype = std::string(name(o.dtype)), c.n = o.n;
    c.peak_gbps = g->device.peak_gbps;
    t.columns.push_back(c);
  }
  // Published columns: one per GPU of the document, in file order.
  std::vector<std::string> pub_gpus;
  for (const auto& p : published)
    if (p.doc == t.doc && std::find(pub_gpus.begin(), pub_gpus.end(), p.gpu) == pub_gpus.end()) {
      pub_gpus.push_back(p.gpu);
      CompareColumn c;
      c.label = published_label(p);
      c.published = true;
      c.gpu = p.gpu, c.doc = p.doc, c.dtype = p.dtype, c.n = p.n, c.block = p.block;
      t.columns.push_back(c);
    }

  t.cells.assign(t.rows.size(), std::vector<CompareCell>(t.columns.size()));
  t.best.assign(t.columns.size(), CompareCell{});
  for (std::size_t col = 0; col < measured.size(); ++col) {
    const GpuData& g = *measured[col];
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      if (t.rows[r].key.empty()) continue;
      const auto cfg = parse_key(t.rows[r].key);
      CompareCell& c = t.cells[r][col];
      const db::Measurement* best = nullptr;
      for (const db::Measurement& m : g.measurements) {
        if (!m.valid || m.problem != Problem::array || m.dtype != o.dtype || m.op != o.op || m.n != o.n) continue;
        const bool match = o.config == RowConfig::material ? m.key == t.rows[r].key : cfg && m.variant == cfg->variant;
        if (!match) continue;
        ++c.measurements;
        if (!best || m.median_us < best->median_us) best = &m;
      }
      if (best) c.present = true, c.key = best->key, c.ms = best->median_us / 1e3, c.gbps = best->gbps, c.pct_peak = best->pct_peak;
    }
    CompareCell& b = t.best[col];
    for (const db::Measurement& m : g.measurements)
      if (m.valid && m.problem == Problem::array && m.dtype == o.dtype && m.op == o.op && m.n == o.n) {
        ++b.measurements;
        if (!b.present || m.median_us / 1e3 < b.ms)
          b.present = true, b.key = m.key, b.ms = m.median_us / 1e3, b.gbps = m.gbps, b.pct_peak = m.pct_peak;
      }
    speedups(t.cells, t.rows, col);
    const auto first = std::find_if(t.cells.begin(), t.cells.end(), [&](const auto& row) { return row[col].present; });
    if (b.present && first != t.cells.end()) b.cumulative = (*first)[col].ms / b.ms;
  }
  for (std::size_t col = measured.size(); col < t.columns.size(); ++col) {
    for (const auto& p : published) {
      if (p.doc != t.doc || p.gpu != t.columns[col].gpu) continue;
      for (std::size_t r = 0; r < t.rows.size(); ++r)
        if (t.rows[r].kernel == p.kernel) {
          CompareCell& c = t.cells[r][col];
          c.present = true;
          c.ms = p.time_ms, c.gbps = p.gbps;
          c.printed_step = p.step_speedup, c.printed_cumulative = p.cumulative_speedup;
        }
    }
    speedups(t.cells, t.rows, col);
  }
  return t;
}

std::string format_compare(const CompareTable& t, Format f) {
  std::ostringstream o;
  const std::string cfg = t.config == RowConfig::material ? "material" : "tuned";
  if (f == Format::md) {
    o << "### " << name(t.dtype) << " " << name(t.op) << ", n = " << format_size(t.n) << ": the kernels of " << t.doc << "\n\n"
      << "Each cell: time, bandwidth (% of that GPU's peak), step speedup / cumulative speedup. "
      << (t.config == RowConfig::material ? "Measured cells are the document's own configuration"
                                          : "Measured cells are the fastest configuration of the row's variant")
      << " (best of the valid measurements stored); published cells are the document's figures, "
         "never measurements of this store.\n\n| # | kernel | configuration |";
    for (const auto& c : t.columns) {
      o << " " << c.label;
      if (c.published && (c.dtype != name(t.dtype) || c.n != t.n)) o << ", " << c.dtype << " n = " << format_size(c.n);
      o << " |";
    }
    o << "\n|---:|---|---|";
    for (std::size_t i = 0; i < t.columns.size(); ++i) o << "---:|";
    o << "\n";
    auto cell = [&](const CompareCell& c, bool published) {
      if (!c.present) return std::string(" |");
      std::string s = " " + ms_text(c.ms) + " ms";
      if (!std::isnan(c.gbps)) s += ", " + fmt("%.1f", c.gbps) + " GB/s";
      if (!std::isnan(c.pct_peak)) s += " (" + fmt("%.1f", c.pct_peak) + "%)";
      if (!std::isnan(c.step) || !std::isnan(c.cumulative))
        s += ", " + (std::isnan(c.step) ? std::string("-") : fmt("%.2fx", c.step)) + " / " +
             (std::isnan(c.cumulative) ? std::string("-") : fmt("%.2fx", c.cumulative));
      (void)published;
      return s + " |";
    };
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      o << "| " << (t.rows[r].order ? std::to_string(t.rows[r].order) : "") << " | " << t.rows[r].kernel << " | "
        << (t.rows[r].key.empty() ? "" : "`" + t.rows[r].key + "`") << " |";
      for (std::size_t c = 0; c < t.columns.size(); ++c) o << cell(t.cells[r][c], t.columns[c].published);
      o << "\n";
    }
    o << "| | **best configuration measured** | |";
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const CompareCell& b = t.best[c];
      if (!b.present) {
        o << " |";
        continue;
      }
      o << " `" << b.key << "` " << ms_text(b.ms) << " ms, " << fmt("%.1f", b.gbps) << " GB/s ("
        << fmt("%.1f", b.pct_peak) << "%)" << (std::isnan(b.cumulative) ? "" : ", " + fmt("%.2fx", b.cumulative)) << " |";
    }
    o << "\n";
    if (t.config == RowConfig::tuned)
      for (std::size_t c = 0; c < t.columns.size(); ++c)
        if (!t.columns[c].published) {
          o << "\n" << t.columns[c].label << ":";
          for (std::size_t r = 0; r < t.rows.size(); ++r)
            if (t.cells[r][c].present) o << " " << t.rows[r].order << " `" << t.cells[r][c].key << "`;";
          o << "\n";
        }
  } else if (f == Format::csv) {
    o << "doc,dtype,op,n,row,kernel,key,column,source,gpu,uuid,column_dtype,column_n,config,time_ms,gbps,pct_peak,"
         "step_speedup,cumulative_speedup,printed_step_speedup,printed_cumulative_speedup,measurements\n";
    auto line = [&](const std::string& row, const std::string& kernel, const std::string& key, std::size_t c,
                    const CompareCell& x) {
      const CompareColumn& col = t.columns[c];
      o << csv_field(t.doc) << ',' << name(t.dtype) << ',' << name(t.op) << ',' << t.n << ',' << row << ',' << csv_field(kernel)
        << ',' << key << ',' << csv_field(col.label) << ',' << (col.published ? "published" : "measured") << ','
        << csv_field(col.gpu) << ',' << col.uuid << ',' << col.dtype << ',' << col.n << ','
        << (col.published ? "" : cfg) << ',' << csv_number(x.ms) << ',' << csv_number(x.gbps) << ','
        << csv_number(x.pct_peak) << ',' << csv_number(x.step, "%.4f") << ',' << csv_number(x.cumulative, "%.4f")
        << ',' << csv_number(x.printed_step) << ',' << csv_number(x.printed_cumulative) << ','
        << (col.published ? "" : std::to_string(x.measurements)) << '\n';
    };
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      for (std::size_t c = 0; c < t.columns.size(); ++c)
        if (t.cells[r][c].present)
          line(t.rows[r].order ? std::to_string(t.rows[r].order) : "", t.rows[r].kernel,
               t.columns[c].published ? t.rows[r].key : t.cells[r][c].key, c, t.cells[r][c]);
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      if (t.best[c].present) line("best", "best configuration measured", t.best[c].key, c, t.best[c]);
  } else {
    auto cell = [&](const CompareCell& x, bool published) {
      if (!x.present) return std::string("null");
      std::string s = "{";
      if (!published) s += "\"key\": " + json_string(x.key) + ", ";
      s += "\"time_ms\": " + json_number(x.ms) + ", \"gbps\": " + json_number(x.gbps);
      if (!published) s += ", \"pct_peak\": " + json_number(x.pct_peak);
      s += ", \"step_speedup\": " + json_number(x.step, "%.4f") +
           ", \"cumulative_speedup\": " + json_number(x.cumulative, "%.4f");
      if (published)
        s += ", \"printed_step_speedup\": " + json_number(x.printed_step) +
             ", \"printed_cumulative_speedup\": " + json_number(x.printed_cumulative);
      else
        s += ", \"measurements\": " + std::to_string(x.measurements);
      return s + "}";
    };
    o << "{\"doc\": " << json_string(t.doc) << ", \"dtype\": " << json_string(name(t.dtype))
      << ", \"op\": " << json_string(name(t.op)) << ", \"n\": " << t.n << ", \"config\": " << json_string(cfg)
      << ",\n \"columns\": [";
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const CompareColumn& col = t.columns[c];
      o << (c ? ",\n  " : "\n  ") << "{\"label\": " << json_string(col.label) << ", \"source\": "
        << (col.published ? "\"published\"" : "\"measured\"") << ", \"gpu\": " << json_string(col.gpu)
        << ", \"uuid\": " << json_string(col.uuid) << ", \"doc\": " << json_string(col.doc)
        << ", \"dtype\": " << json_string(col.dtype) << ", \"n\": " << col.n << ", \"block\": " << col.block
        << ", \"peak_gbps\": " << json_number(col.peak_gbps) << "}";
    }
    o << "],\n \"rows\": [";
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      o << (r ? ",\n  " : "\n  ") << "{\"order\": " << t.rows[r].order << ", \"kernel\": " << json_string(t.rows[r].kernel)
        << ", \"key\": " << json_string(t.rows[r].key) << ", \"cells\": [";
      for (std::size_t c = 0; c < t.columns.size(); ++c) o << (c ? ", " : "") << cell(t.cells[r][c], t.columns[c].published);
      o << "]}";
    }
    o << "],\n \"best\": [";
    for (std::size_t c = 0; c < t.columns.size(); ++c) o << (c ? ", " : "") << cell(t.best[c], t.columns[c].published);
    o << "]}\n";
  }
  return o.str();
}

// ---- static comparison -------------------------------------------------------------------

std::vector<StaticTarget> static_targets(const std::vector<std::string>& archs, const std::vector<const Nvrtc*>& libraries) {
  std::vector<StaticTarget> out;
  for (const std::string& a : archs) {
    const Nvrtc* pick = nullptr;
    int sm = -1;
    for (const Nvrtc* lib : libraries) {
      try {
        const ArchTarget t = lib->parse_target(a);
        if (!t.cubin) throw std::invalid_argument("'" + a + "': the static comparison needs cubin targets (sm_XX)");
        sm = std::stoi(t.arch.substr(3));
        if (!pick || std::make_pair(lib->major(), lib->minor()) > std::make_pair(pick->major(), pick->minor())) pick = lib;
      } catch (const std::invalid_argument& e) {
        if (std::string(e.what()).find("cubin targets") != std::string::npos) throw;
      }
    }
    if (!pick) {
      std::string versions;
      for (const Nvrtc* lib : libraries) versions += (versions.empty() ? "" : ", ") + lib->version();
      throw std::invalid_argument("no NVRTC given targets " + a + " (given: " + versions +
                                  "); pass one that does with --nvrtc PATH (CUDA 11.8 for sm_35 and sm_37)");
    }
    out.push_back({"sm_" + std::to_string(sm), pick});
  }
  return out;
}

StaticTable static_table(const std::vector<StaticTarget>& targets, const std::string& doc_prefix, DType dtype, Op op,
                         unsigned threads) {
  StaticTable t;
  t.dtype = std::string(name(dtype)), t.op = std::string(name(op));
  std::map<std::string, std::size_t> row_of;
  for (const MaterialKernel& k : material_kernels()) {
    if (!k.doc.starts_with(doc_prefix)) continue;
    const std::string key(k.key), label = doc_short(std::string(k.doc)) + " " + std::string(k.name);
    const auto [it, fresh] = row_of.emplace(key, t.rows.size());
    if (fresh) t.rows.push_back({label, key, k.order});
    else t.rows[it->second].kernel += "; " + label;
  }
  if (t.rows.empty()) throw std::invalid_argument("no document of the material starts with '" + doc_prefix + "'");
  t.cells.assign(t.rows.size(), std::vector<StaticCell>(targets.size()));
  for (std::size_t a = 0; a < targets.size(); ++a) {
    const StaticTarget& target = targets[a];
    t.archs.push_back(target.arch);
    t.nvrtc.push_back(target.nvrtc->version());
    const int cc = std::stoi(target.arch.substr(3));
    const Target limits{dtype, op, cc, 1024, 132, true};
    std::vector<CompileJob> jobs;
    std::vector<std::size_t> job_row;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const auto c = parse_key(t.rows[r].key);
      if (!c) {
        t.cells[r][a].error = "not a key";
        continue;
      }
      if (auto why = invalid_reason(*c, limits)) {
        t.cells[r][a].error = "invalid: " + *why;
        continue;
      }
      jobs.push_back({*c, dtype, op});
      job_row.push_back(r);
    }
    CompileCache no_cache{fs::path()};
    KernelLoader loader(*target.nvrtc, no_cache, target.nvrtc->parse_target(target.arch));
    const auto outcomes = compile_all(loader, jobs, threads);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      StaticCell& c = t.cells[job_row[j]][a];
      if (!outcomes[j].error.empty()) {
        c.error = "compile failed: " + outcomes[j].error.substr(0, outcomes[j].error.find('\n'));
        continue;
      }
      const Resources& r = outcomes[j].compiled.resources;
      c.registers = r.registers, c.spill_stores = r.spill_stores, c.spill_loads = r.spill_loads;
      c.smem_bytes = r.smem_bytes, c.stack_bytes = r.stack_bytes;
      try {
        const CubinKernel k = inspect_cubin(outcomes[j].compiled.image, "rt_reduce");
        c.code_bytes = std::int64_t(k.code_bytes), c.instructions = std::int64_t(k.instructions);
        if (c.registers < 0) c.registers = k.registers; // NVRTC without ptxas -v: the cubin's count
        if (c.stack_bytes < 0) c.stack_bytes = k.frame_bytes;
      } catch (const CubinError& e) {
        c.error = e.what();
      }
    }
  }
  return t;
}

std::string format_static(const StaticTable& t, Format f) {
  std::ostringstream o;
  auto num = [](std::int64_t v) { return v < 0 ? std::string("-") : std::to_string(v); };
  if (f == Format::md) {
    o << "### What the compiler makes of each kernel: " << t.dtype << " " << t.op << "\n\n"
      << "Each cell: registers / spill stores+loads (bytes) / static shared memory (bytes) / SASS instructions "
         "(code bytes). Instructions are derived from the size of .text.rt_reduce in the cubin: bytes/16 on "
         "sm_70+, bytes/32*3 on sm_5x-6x, bytes/64*7 on sm_3x (padding included, as cuobjdump lists them).\n\n"
      << "| kernel (document: name) | configuration |";
    for (std::size_t a = 0; a < t.archs.size(); ++a) o << " " << t.archs[a] << " (NVRTC " << t.nvrtc[a] << ") |";
    o << "\n|---|---|";
    for (std::size_t a = 0; a < t.archs.size(); ++a) o << "---:|";
    o << "\n";
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      o << "| " << t.rows[r].kernel << " | `" << t.rows[r].key << "` |";
      for (const StaticCell& c : t.cells[r]) {
        if (!c.error.empty()) {
          o << " " << c.error.substr(0, c.error.find(" (")) << " |";
          continue;
        }
        const std::string spills = c.spill_stores < 0 ? "-" : std::to_string(c.spill_stores + c.spill_loads);
        o << " " << num(c.registers) << " / " << spills << " / " << num(c.smem_bytes) << " / " << num(c.instructions)
          << " (" << num(c.code_bytes) << " B) |";
      }
      o << "\n";
    }
  } else if (f == Format::csv) {
    o << "kernel,key,arch,nvrtc,registers,spill_stores,spill_loads,smem_bytes,stack_bytes,code_bytes,instructions,error\n";
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      for (std::size_t a = 0; a < t.archs.size(); ++a) {
        const StaticCell& c = t.cells[r][a];
        o << csv_field(t.rows[r].kernel) << ',' << t.rows[r].key << ',' << t.archs[a] << ',' << t.nvrtc[a] << ','
          << c.registers << ',' << c.spill_stores << ',' << c.spill_loads << ',' << c.smem_bytes << ','
          << c.stack_bytes << ',' << c.code_bytes << ',' << c.instructions << ',' << csv_field(c.error) << '\n';
      }
  } else {
    o << "{\"dtype\": " << json_string(t.dtype) << ", \"op\": " << json_string(t.op) << ", \"archs\": [";
    for (std::size_t a = 0; a < t.archs.size(); ++a)
      o << (a ? ", " : "") << "{\"arch\": " << json_string(t.archs[a]) << ", \"nvrtc\": " << json_string(t.nvrtc[a]) << "}";
    o << "],\n \"rows\": [";
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      o << (r ? ",\n  " : "\n  ") << "{\"kernel\": " << json_string(t.rows[r].kernel) << ", \"key\": "
        << json_string(t.rows[r].key) << ", \"cells\": [";
      for (std::size_t a = 0; a < t.archs.size(); ++a) {
        const StaticCell& c = t.cells[r][a];
        o << (a ? ", " : "");
        if (!c.error.empty()) {
          o << "{\"error\": " << json_string(c.error) << "}";
          continue;
        }
        o << "{\"registers\": " << c.registers << ", \"spill_stores\": " << c.spill_stores << ", \"spill_loads\": "
          << c.spill_loads << ", \"smem_bytes\": " << c.smem_bytes << ", \"stack_bytes\": " << c.stack_bytes
          << ", \"code_bytes\": " << c.code_bytes << ", \"instructions\": " << c.instructions << "}";
      }
      o << "]}";
    }
    o << "]}\n";
  }
  return o.str();
}

} // namespace reduce_tune
