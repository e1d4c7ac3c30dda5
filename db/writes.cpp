// reduce-tune store: what the tuner and the import write: devices, runs, measurements with their
// best rows, and the course material's published rows.
#include "db/store_impl.h"

#include <map>
#include <optional>
#include <tuple>

namespace reduce_tune::db {

using namespace sql;

void Store::upsert_device(const DeviceRecord& d) {
  impl_->write([&] {
    impl_->query("INSERT INTO devices (" + kDeviceCols + ", first_seen, last_seen) VALUES "
                 "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                 "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')) "
                 "ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, cc_major = excluded.cc_major, "
                 "cc_minor = excluded.cc_minor, sm_count = excluded.sm_count, l2_bytes = excluded.l2_bytes, "
                 "total_mem_bytes = excluded.total_mem_bytes, mem_clock_khz = excluded.mem_clock_khz, "
                 "bus_width_bits = excluded.bus_width_bits, peak_gbps = excluded.peak_gbps, "
                 "driver_version = excluded.driver_version, host = excluded.host, last_seen = excluded.last_seen",
                 d.uuid, d.name, d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes, d.total_mem_bytes,
                 d.mem_clock_khz, d.bus_width_bits, d.peak_gbps, d.driver_version, d.host)
        ->step();
  });
}

std::vector<DeviceRecord> Store::devices() const {
  std::vector<DeviceRecord> out;
  const auto q = impl_->query("SELECT " + kDeviceCols + " FROM devices ORDER BY rowid");
  while (q->step()) out.push_back(read_device(*q));
  return out;
}

std::optional<DeviceRecord> Store::device(const std::string& uuid) const {
  const auto q = impl_->query("SELECT " + kDeviceCols + " FROM devices WHERE uuid = ?1", uuid);
  if (!q->step()) return std::nullopt;
  return read_device(*q);
}

std::int64_t Store::begin_run(const RunRecord& r) {
  std::int64_t id = 0;
  impl_->write([&] {
    const auto q = impl_->query("INSERT INTO runs (device_uuid, tool_version, nvrtc_version, options, "
                                "timing_method, started, status) VALUES (?1, ?2, ?3, ?4, ?5, "
                                "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), 'running') RETURNING id",
                                r.device_uuid, r.tool_version, r.nvrtc_version, r.options, r.timing_method);
    q->step();
    id = q->i64(0);
  });
  return id;
}

void Store::end_run(std::int64_t run_id, const std::string& status) {
  impl_->write([&] {
    impl_->query("UPDATE runs SET ended = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), status = ?2 WHERE id = ?1",
                 run_id, status)
        ->step();
    if (sqlite3_changes(impl_->db.get()) != 1)
      throw StoreError("reduce-tune store: end_run: no run " + std::to_string(run_id));
  });
}

std::vector<RunRecord> Store::runs() const {
  std::vector<RunRecord> out;
  const auto q = impl_->query("SELECT " + kRunCols + " FROM runs ORDER BY id");
  while (q->step()) out.push_back(read_run(*q));
  return out;
}

void Store::Impl::refresh_best(const std::string& uuid, const std::string& dtype, const std::string& op,
                               const std::string& problem, std::int64_t count, std::int64_t n) {
  query("INSERT INTO best (device_uuid, dtype, op, problem, count, n, measurement_id) "
        "SELECT device_uuid, dtype, op, problem, count, n, id FROM measurements WHERE device_uuid = ?1 AND "
        "dtype = ?2 AND op = ?3 AND problem = ?4 AND count = ?5 AND n = ?6 AND valid = 1 AND "
        "median_us IS NOT NULL ORDER BY median_us, id LIMIT 1 "
        "ON CONFLICT (device_uuid, dtype, op, problem, count, n) DO UPDATE SET "
        "measurement_id = excluded.measurement_id",
        uuid, dtype, op, problem, count, n)
      ->step();
}

void Store::add_measurements(std::int64_t run_id, const std::vector<Measurement>& ms) {
  impl_->write([&] {
    std::string uuid;
    {
      const auto q = impl_->query("SELECT device_uuid FROM runs WHERE id = ?1", run_id);
      if (!q->step()) throw StoreError("reduce-tune store: add_measurements: no run " + std::to_string(run_id));
      uuid = q->text(0);
    }
    // The fastest valid new row per (dtype, op, problem, count, n): (median, id); the earliest of
    // equal ones.
    using Key = std::tuple<DType, OpKey, Problem, std::int64_t, std::int64_t>;
    std::map<Key, std::pair<double, std::int64_t>> fastest;
    for (const Measurement& m : ms) {
      const std::int64_t count = sql_size(m.count), n = sql_size(m.n);
      impl_->query("INSERT INTO measurements (run_id, device_uuid, key, variant, block, unroll, vec, grid, "
                   "tail, finish, dtype, op, problem, count, n, median_us, min_us, max_us, host_us, reps, gbps, "
                   "pct_peak, valid, error, expected, observed, seed, cold, created) VALUES (?1, ?2, ?3, ?4, "
                   "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, "
                   "?24, ?25, ?26, ?27, ?28, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                   run_id, uuid, m.key, m.variant, m.block, m.unroll, m.vec, m.grid, m.tail, m.finish,
                   name(m.dtype), m.op_key().name(), name(m.problem), count, n, m.median_us, m.min_us, m.max_us,
                   m.host_us, m.reps, m.gbps, m.pct_peak, m.valid, m.error, m.expected, m.observed,
                   static_cast<std::int64_t>(m.seed), m.cold)
          ->step();
      if (!m.valid || std::isnan(m.median_us)) continue; // NaN is stored as NULL: never the best
      const std::int64_t id = sqlite3_last_insert_rowid(impl_->db.get());
      const auto [it, first] = fastest.try_emplace({m.dtype, m.op_key(), m.problem, count, n}, m.median_us, id);
      if (!first && m.median_us < it->second.first) it->second = {m.median_us, id};
    }
    // Older rows are unchanged, so the best is the stored best or the fastest new row, whichever
    // is faster (ties to the stored one, the earlier row): the rule of refresh_best without
    // reading every row of the shape again (which made a sweep's one-row commits quadratic).
    for (const auto& [k, v] : fastest) {
      const auto& [dtype, op, problem, count, n] = k;
      impl_->query("INSERT INTO best (device_uuid, dtype, op, problem, count, n, measurement_id) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                   "ON CONFLICT (device_uuid, dtype, op, problem, count, n) DO UPDATE SET measurement_id = "
                   "excluded.measurement_id WHERE ?8 < (SELECT median_us FROM measurements WHERE id = "
                   "best.measurement_id)",
                   uuid, name(dtype), op.name(), name(problem), count, n, v.second, v.first)
          ->step();
    }
  });
}

void Store::add_reduction(const ReductionRecord& r) {
  const std::string key = r.op_key().name();
  impl_->write([&] {
    const auto q = impl_->query("SELECT canonical FROM reductions WHERE name = ?1", key);
    if (q->step()) {
      if (q->text(0) != r.canonical)
        throw StoreError("reduce-tune store: " + key + " is stored with another description (two "
                         "descriptions share the hash): change either one");
      return;
    }
    impl_->query("INSERT INTO reductions (name, canonical, text, first_seen) "
                 "VALUES (?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                 key, r.canonical, r.text)
        ->step();
  });
}

std::size_t Store::import_published(const std::vector<PublishedRecord>& rows) {
  std::size_t changed = 0;
  impl_->write([&] {
    changed = 0;
    for (const PublishedRecord& r : rows) {
      // NULL for what the document does not give; an unchanged row is not rewritten.
      auto opt = [](double v) { return std::isnan(v) ? std::optional<double>() : std::optional<double>(v); };
      const auto gbps = opt(r.gbps), step = opt(r.step_speedup), cum = opt(r.cumulative_speedup);
      const auto q = impl_->query(
          "INSERT INTO published (doc, gpu, arch, kernel, ord, dtype, n, block, time_ms, gbps, step_speedup, "
          "cumulative_speedup, note) VALUES (?1, ?2, ?3, ?4, nullif(?5, 0), ?6, ?7, nullif(?8, 0), ?9, "
          "iif(?11, ?10, NULL), iif(?13, ?12, NULL), iif(?15, ?14, NULL), ?16) "
          "ON CONFLICT (doc, gpu, kernel, dtype, n) DO UPDATE SET arch = excluded.arch, ord = excluded.ord, "
          "block = excluded.block, time_ms = excluded.time_ms, gbps = excluded.gbps, "
          "step_speedup = excluded.step_speedup, cumulative_speedup = excluded.cumulative_speedup, "
          "note = excluded.note WHERE (arch, ord, block, time_ms, gbps, step_speedup, cumulative_speedup, note) "
          "IS NOT (excluded.arch, excluded.ord, excluded.block, excluded.time_ms, excluded.gbps, "
          "excluded.step_speedup, excluded.cumulative_speedup, excluded.note)",
          r.doc, r.gpu, r.arch, r.kernel, r.order, r.dtype, sql_size(r.n), r.block, r.time_ms,
          gbps.value_or(0), int(gbps.has_value()), step.value_or(0), int(step.has_value()), cum.value_or(0),
          int(cum.has_value()), r.note);
      q->step();
      changed += std::size_t(sqlite3_changes(impl_->db.get()));
    }
  });
  return changed;
}

} // namespace reduce_tune::db
