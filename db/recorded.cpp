// reduce-tune store: the call points a program made without an exact tuning (Options::record).
#include "db/store_impl.h"

namespace reduce_tune::db {

using namespace sql;

void Store::record_point(const RecordedPoint& p) {
  if (p.shape.count == 0) throw StoreError("reduce-tune store: a recorded point needs at least one result");
  impl_->write([&] {
    impl_->query("INSERT INTO recorded (device_uuid, device_name, dtype, op, problem, count, n, grade, "
                 "first_seen, last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                 "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')) "
                 "ON CONFLICT (device_uuid, dtype, op, problem, count, n) DO UPDATE SET "
                 "grade = excluded.grade, device_name = excluded.device_name, last_seen = excluded.last_seen",
                 p.device_uuid, p.device_name, name(p.dtype), p.op_key().name(), name(p.problem),
                 sql_size(p.shape.count),
                 p.shape.length ? sql_size(p.shape.length) : std::int64_t(0), p.grade)
        ->step();
  });
}

std::vector<RecordedPoint> Store::recorded(const std::string& device_uuid) const {
  std::vector<RecordedPoint> out;
  // A store older than the table (read-only, not migrated) has recorded nothing.
  const auto has = impl_->query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'recorded'");
  if (!has->step() || has->i64(0) == 0) return out;
  const auto q = impl_->query("SELECT device_uuid, device_name, dtype, op, problem, count, n, grade, first_seen, "
                              "last_seen FROM recorded WHERE ?1 = '' OR device_uuid = ?1 "
                              "ORDER BY device_uuid, dtype, op, problem, count, n",
                              device_uuid);
  while (q->step()) {
    const auto dtype = parse_dtype(q->text(2));
    const auto op = parse_op_key(q->text(3)); // a user reduction's: "user:<hash>"
    const auto problem = parse_problem(q->text(4));
    if (!dtype || !op || !problem || q->i64(5) <= 0 || q->i64(6) < 0) continue;
    RecordedPoint p;
    p.device_uuid = q->text(0), p.device_name = q->text(1);
    p.dtype = *dtype, p.op = op->builtin().value_or(Op::sum), p.user = op->hash(), p.problem = *problem;
    p.shape = {std::uint64_t(q->i64(5)), std::uint64_t(q->i64(6))};
    p.grade = q->text(7), p.first_seen = q->text(8), p.last_seen = q->text(9);
    out.push_back(std::move(p));
  }
  return out;
}

void Store::forget_recorded(const std::string& device_uuid) {
  impl_->write([&] { impl_->query("DELETE FROM recorded WHERE device_uuid = ?1", device_uuid)->step(); });
}

} // namespace reduce_tune::db
