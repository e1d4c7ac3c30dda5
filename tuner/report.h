// reduce-tune: the material's table (kernel, time, bandwidth, step and cumulative speedup, % of
// peak), one row per variant at its best configuration, then the overall best; md, csv or json.
#pragma once

#include "db/store.h"

#include <optional>
#include <string>
#include <vector>

namespace reduce_tune {

enum class Format { md, csv, json };

struct TableRow {
  std::string kernel;   ///< variant name
  std::string key;      ///< its best configuration
  double us = 0, gbps = 0, pct_peak = 0;
  double step = 0, cumulative = 0; ///< speedups over the previous row and over the first row
};

/// One (device, dtype, op, problem, shape).
struct Table {
  std::string device;
  DType dtype = DType::f32;
  Op op = Op::sum;
  std::optional<std::uint64_t> user; ///< a user reduction's hash (db::Measurement::user)
  Problem problem = Problem::array;
  std::uint64_t count = 1;       ///< results (1 for the array problem)
  std::uint64_t n = 0;           ///< elements per result
  std::vector<TableRow> rows;
  TableRow best;
  std::size_t measured = 0, failed = 0;
};

/// Tables for every (dtype, op, problem, shape) among `ms` (valid measurements only; variants in
/// catalogue order).
std::vector<Table> material_tables(const std::vector<db::Measurement>& ms, const std::string& device);
/// The table of one document of the course material at (dtype, op, n): one row per kernel the
/// document names, in its order, each measured at the configuration that reproduces it (rows
/// without a valid measurement are left out).
Table material_doc_table(const std::vector<db::Measurement>& ms, const std::string& doc_prefix,
                         DType dtype, Op op, std::uint64_t n,
                         const std::string& device);
std::string format_tables(const std::vector<Table>& tables, Format f);

} // namespace reduce_tune
