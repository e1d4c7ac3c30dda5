// reduce-tune: a store's rows in memory, for repeated lookups (runtime/store_rows.h).
#include "runtime/store_rows.h"

#include <stdexcept>

namespace reduce_tune {

StoreRows::StoreRows(const db::Store& store) : devices_(store.devices()) {
  for (const db::DeviceRecord& d : devices_) {
    std::vector<db::Measurement>& rows = rows_[d.uuid];
    rows = store.measurements(d.uuid, {}); // built-in ops' rows, in the store's order
    for (std::size_t i = 0; i < rows.size(); ++i) by_problem_[{d.uuid, rows[i].problem}].push_back(i);
  }
}

std::vector<db::Measurement> StoreRows::measurements(const std::string& device_uuid,
                                                     const db::MeasurementFilter& f) const {
  if (f.op && !f.op->builtin()) throw std::invalid_argument("StoreRows: a user reduction's rows are not held");
  std::vector<db::Measurement> out;
  const auto rows = rows_.find(device_uuid);
  if (rows == rows_.end()) return out;
  const auto keep = [&](const db::Measurement& m) {
    return (!f.dtype || m.dtype == *f.dtype) && (!f.op || m.op == *f.op->builtin()) &&
           (!f.shape || (m.count == f.shape->count && m.n == f.shape->length));
  };
  if (f.problem) {
    if (const auto at = by_problem_.find({device_uuid, *f.problem}); at != by_problem_.end())
      for (std::size_t i : at->second)
        if (keep(rows->second[i])) out.push_back(rows->second[i]);
    return out;
  }
  for (const db::Measurement& m : rows->second)
    if (keep(m)) out.push_back(m);
  return out;
}

} // namespace reduce_tune
