// reduce-tune: a store's rows in memory, for repeated lookups (runtime/store_rows.h).
#include "runtime/store_rows.h"

namespace reduce_tune {

StoreRows::StoreRows(const db::Store& store) : devices_(store.devices()) {
  for (const db::DeviceRecord& d : devices_) {
    std::vector<db::Measurement>& rows = rows_[d.uuid];
    rows = store.measurements(d.uuid, {}); // built-in ops' rows, in the store's order
    for (std::size_t i = 0; i < rows.size(); ++i) by_problem_[{d.uuid, rows[i].problem}].push_back(i);
  }
}

} // namespace reduce_tune
