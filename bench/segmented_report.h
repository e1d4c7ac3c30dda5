// reduce-tune bench: the segmented benchmark's measurements and their report (Markdown tables
// per problem, a target summary, the CSV that bench/frameworks_segmented.py writes too).
#pragma once

#include "bench/timer.cuh"
#include "reduce_tune/config.h"

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace rt_bench::seg {

using reduce_tune::DType;
using reduce_tune::Op;
using reduce_tune::Problem;

/// One shape of one problem.
struct Case {
  Problem problem = Problem::rows;
  std::uint64_t rows = 0, cols = 0; ///< rows, columns: the dense matrix (row stride = cols)
  std::uint64_t segments = 0;       ///< segments: the segment count
  std::uint64_t n = 0;              ///< elements in the input

  /// Results: rows, cols or segments.
  std::uint64_t count() const;
  /// Elements per result: cols (rows), rows (columns), the mean n / segments (segments).
  double length() const;
  /// The x axis of the tables and the plot: the row length (cols) for rows and columns (both
  /// reduce the same matrix, as torch's dim=-1 and dim=0), the mean length for segments.
  double row_length() const { return problem == Problem::segments ? length() : double(cols); }
  /// reduce_tune::Shape (Shape's comment: {rows, cols}, {cols, rows}, {segments, mean}).
  reduce_tune::Shape shape() const;
  /// Bytes every method must read: the elements, and the segments' count + 1 int64 offsets.
  std::uint64_t bytes_read(std::size_t es) const;
};

/// The contestants. ONE_D is not a segmented reduction: the library's tuned 1-D reduction of the
/// same elements to one value (Reducer::reduce_async), a yardstick for what reading them costs at
/// the smallest sizes, where every call is near the launch cost.
enum Who { RT = 0, CUB = 1, CUB_ITER = 2, CEIL = 3, ONE_D = 4, kWho = 5 };
extern const char* const kWhoName[kWho]; ///< "reduce-tune", "cub", "cub-iter", "ceiling", "one-d"

struct Cell {
  bool ran = false;
  Stats st;
  bool ok = false;
  std::string error;  ///< the call threw, or what the check found
};

struct Row {
  Case c;
  std::string mix;        ///< segments: length_mix() of the offsets measured
  std::string skip;       ///< why not measured
  std::string key, match; ///< the library's configuration and how it was found
  Cell cell[2][kWho];     ///< [cold, hot][who]
  bool failed(int mode, int w) const {
    const Cell& x = cell[mode][w];
    return x.ran && (!x.error.empty() || !x.ok);
  }
};

/// What a row of skewed segments holds beyond its mean: the longest segment's share of the
/// elements and the share of segments that are empty, "79 % / 65 %". Pareto lengths (shape 1.2)
/// differ a lot from one seed to another at the same mean: one segment can hold most elements.
std::string length_mix(const std::vector<std::int64_t>& offsets);

/// All rows of one table: problem, dtype, op.
using Tables = std::map<std::tuple<Problem, DType, Op>, std::vector<Row>>;

/// The CSV's header line (after the "# device=..." comment line); frameworks_segmented.py writes
/// the same columns.
extern const char* const kCsvHeader;
/// One CSV line per contestant that ran.
void write_csv(std::ostream& out, const Device& dev, Problem p, DType dt, Op op, int mode,
               const Row& r);

/// The Markdown table of one problem, dtype, op and mode (0 cold, 1 hot).
void print_table(const Device& dev, Problem p, DType dt, Op op, int mode, const std::vector<Row>& rows);

/// The segmented targets (cold L2, sum): per problem and dtype the worst reduce-tune / CUB ratio
/// over the grid and the lowest share of the ceiling at >= 2^24 elements, and where.
void print_targets(const Tables& tables);

} // namespace rt_bench::seg
