// reduce-tune: comparing results across GPUs, architectures and the course material's published
// tables. Pure functions from measurements and published rows to tables (testable without a GPU),
// their md/csv/json forms, the static (compile-only) comparison across architectures, and plots
// made with gnuplot.
#pragma once

#include "db/store.h"
#include "kernels/nvrtc.h"
#include "reduce_tune/config.h"
#include "tuner/report.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace reduce_tune {

// ---- published figures -------------------------------------------------------------------

/// data/published.csv as shipped, embedded at build time.
std::string_view embedded_published_csv();
/// Parses published.csv text: a header naming the columns (doc, gpu, arch, kernel, order, dtype, n,
/// block, time_ms, gbps, step_speedup, cumulative_speedup, note; any order), then one row per line,
/// RFC 4180 quoting. Empty cells: 0 for order and block, NaN for gbps and the speedups. Throws
/// std::runtime_error naming the line for a malformed row.
std::vector<db::PublishedRecord> parse_published_csv(std::string_view text);

/// The column label of a published table: "published: <GPU> (<doc>)".
std::string published_label(const db::PublishedRecord& r);

// ---- measured comparison -----------------------------------------------------------------

/// One GPU of a store and its measurements (any dtype, op and n; filtered by compare_table; the
/// array problem only is compared).
struct GpuData {
  db::DeviceRecord device;
  std::vector<db::Measurement> measurements;
};

/// Which configuration a row's cell shows for a GPU.
enum class RowConfig {
  material, ///< exactly the document's configuration (the key that reproduces its kernel)
  tuned,    ///< the fastest configuration of the row's variant measured on that GPU
};

struct CompareOptions {
  DType dtype = DType::f32;
  Op op = Op::sum;
  std::uint64_t n = std::uint64_t(1) << 28;
  std::string doc;               ///< document prefix ("004"); empty: default_doc()
  RowConfig config = RowConfig::material;
};

inline constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

/// One cell: a GPU's (or a published table's) figure for one kernel. NaN where there is none.
struct CompareCell {
  bool present = false;
  std::string key;               ///< configuration measured (measured columns only)
  double ms = kNone, gbps = kNone, pct_peak = kNone;
  double step = kNone;           ///< time of the previous row with a figure / this time
  double cumulative = kNone;     ///< time of the first row with a figure / this time
  double printed_step = kNone, printed_cumulative = kNone; ///< as the document prints them
  std::size_t measurements = 0;  ///< valid measurements the figure is the best of
};

/// A column: a GPU of the store, or one published table (a GPU of a document).
struct CompareColumn {
  std::string label;             ///< GPU name, or "published: <GPU> (<doc>)"
  bool published = false;
  std::string gpu, uuid, doc;    ///< uuid for measured columns, doc for published ones
  std::string dtype;             ///< the column's problem: the compared one, or the document's own
  std::uint64_t n = 0;
  int block = 0;
  double peak_gbps = kNone;
};

/// A row: one kernel of the document, in its order; rows the document's tables list outside
/// the kernel sequence (CPU baselines) come last, with order 0 and no key.
struct CompareRow {
  std::string kernel;            ///< the document's name for it
  std::string key;               ///< the configuration key that reproduces it
  int order = 0;
};

struct CompareTable {
  std::string doc;
  DType dtype = DType::f32;
  Op op = Op::sum;
  std::uint64_t n = 0;
  RowConfig config = RowConfig::material;
  std::vector<CompareRow> rows;
  std::vector<CompareColumn> columns;          ///< measured GPUs first, then published tables
  std::vector<std::vector<CompareCell>> cells; ///< [row][column]
  std::vector<CompareCell> best;               ///< per column: the GPU's best configuration of all
};

/// The document whose kernels make the rows by default: the first whose published rows have this
/// dtype and n, else the first with this dtype, else "004".
std::string default_doc(const std::string& dtype, std::uint64_t n,
                        const std::vector<db::PublishedRecord>& published);

/// The comparison table: rows = the document's kernels in its order with its names, columns =
/// the GPUs (those with a valid measurement of the problem), then the document's published
/// tables. Published rows never count as measurements, and measurements never fill a published
/// column. Throws std::invalid_argument when no document matches o.doc.
CompareTable compare_table(const std::vector<GpuData>& gpus, const std::vector<db::PublishedRecord>& published,
                           const CompareOptions& o);
std::string format_compare(const CompareTable& t, Format f);

// ---- static comparison across architectures ----------------------------------------------

/// What the compiler made of one kernel for one architecture.
struct StaticCell {
  std::string error;             ///< why there is no figure (invalid configuration, failed compile)
  int registers = -1, spill_stores = -1, spill_loads = -1, smem_bytes = -1, stack_bytes = -1;
  std::int64_t code_bytes = -1, instructions = -1;
};

struct StaticTable {
  std::string dtype, op;
  std::vector<std::string> archs;            ///< "sm_35", ...
  std::vector<std::string> nvrtc;            ///< per arch: the NVRTC version that compiled it
  std::vector<CompareRow> rows;              ///< one per distinct key; kernel = the names it has
  std::vector<std::vector<StaticCell>> cells; ///< [row][arch]
};

/// One architecture to compile for, and the NVRTC that targets it.
struct StaticTarget {
  std::string arch;                          ///< "sm_35"
  const Nvrtc* nvrtc = nullptr;
};

/// Picks for each "sm_XX" the newest of `libraries` that targets it as cubin; throws
/// std::invalid_argument naming an architecture none targets.
std::vector<StaticTarget> static_targets(const std::vector<std::string>& archs,
                                         const std::vector<const Nvrtc*>& libraries);

/// Compiles the material's kernels (all documents, or those whose name starts with doc_prefix; one
/// row per distinct key) for every target, without a GPU, and reads registers, spills and shared
/// memory (ptxas) and code size and instruction count (cubin). The volatile tail is admitted on
/// sm_70+ here: the table is for study.
StaticTable static_table(const std::vector<StaticTarget>& targets, const std::string& doc_prefix, DType dtype,
                         Op op, unsigned threads);
std::string format_static(const StaticTable& t, Format f);

// ---- plots -------------------------------------------------------------------------------

/// One GPU's best bandwidth at each size it was tuned at.
struct BandwidthCurve {
  std::string label;
  std::vector<std::pair<std::uint64_t, double>> points; ///< (n, GB/s), n ascending
};
/// Per GPU with valid measurements of (dtype, op): the best configuration's GB/s per size.
std::vector<BandwidthCurve> bandwidth_curves(const std::vector<GpuData>& gpus, DType dtype, Op op);

/// Draws, with gnuplot, GB/s against size (one curve per GPU, best configuration) and the
/// material's staircase (kernel vs time, one line per GPU; published tables dashed) into `path`,
/// PNG or SVG by its extension. Throws std::runtime_error when gnuplot is missing or fails.
void plot_compare(const CompareTable& t, const std::vector<BandwidthCurve>& curves, const std::string& path,
                  const std::string& gnuplot = "gnuplot");

} // namespace reduce_tune
