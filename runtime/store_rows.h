// reduce-tune: the rows of a store that the lookup reads, held in memory. A store's measurement
// query filters with optional terms that no index serves, so each one reads the whole table (the
// shipped tuning: some 10,000 rows); a lookup makes several, and a guided sweep looks up every
// point it seeds. One that looks up many points over stores that do not change meanwhile reads
// each store once here and answers from memory.
#pragma once

#include "db/store.h"

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace reduce_tune {

class StoreRows {
public:
  /// Reads `store`'s devices and every device's measurements of built-in ops.
  explicit StoreRows(const db::Store& store);

  /// As db::Store::devices.
  const std::vector<db::DeviceRecord>& devices() const { return devices_; }
  /// f(m) for each of the rows db::Store::measurements gives for a filter of a built-in op or none,
  /// held here (not copied), in the same order; std::invalid_argument for a user reduction's op,
  /// whose rows are not held.
  template <typename F> void each(const std::string& device_uuid, const db::MeasurementFilter& f, F&& fn) const {
    if (f.op && !f.op->builtin()) throw std::invalid_argument("StoreRows: a user reduction's rows are not held");
    const auto rows = rows_.find(device_uuid);
    if (rows == rows_.end()) return;
    const auto keep = [&](const db::Measurement& m) {
      return (!f.dtype || m.dtype == *f.dtype) && (!f.op || m.op == *f.op->builtin()) &&
             (!f.shape || (m.count == f.shape->count && m.n == f.shape->length));
    };
    if (f.problem) {
      if (const auto at = by_problem_.find({device_uuid, *f.problem}); at != by_problem_.end())
        for (std::size_t i : at->second)
          if (keep(rows->second[i])) fn(rows->second[i]);
      return;
    }
    for (const db::Measurement& m : rows->second)
      if (keep(m)) fn(m);
  }

private:
  std::vector<db::DeviceRecord> devices_;
  std::map<std::string, std::vector<db::Measurement>> rows_; // a device's, in the store's order
  // The indices in rows_ of a device's rows of a problem, ascending.
  std::map<std::pair<std::string, Problem>, std::vector<std::size_t>> by_problem_;
};

} // namespace reduce_tune
