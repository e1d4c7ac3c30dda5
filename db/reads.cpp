// reduce-tune store: queries, and the nearest-shape rule of the lookup.
#include "db/store_impl.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace reduce_tune::db {

using namespace sql;

const std::string kDeviceCols = "uuid, name, cc_major, cc_minor, sm_count, l2_bytes, total_mem_bytes, "
                                "mem_clock_khz, bus_width_bits, peak_gbps, driver_version, host";
const std::string kRunCols =
    "id, device_uuid, tool_version, nvrtc_version, options, timing_method, started, ended, status";
const std::string kMeasurementCols =
    "m.key, m.variant, m.block, m.unroll, m.vec, m.grid, m.tail, m.finish, m.dtype, m.op, m.problem, m.count, m.n, "
    "m.median_us, m.min_us, m.max_us, m.host_us, m.reps, m.gbps, m.pct_peak, m.valid, m.error, "
    "m.expected, m.observed, m.seed, m.cold, m.run_id";
const std::string kSelectBest = "SELECT m.device_uuid, m.run_id, " + kMeasurementCols +
                                " FROM best b JOIN measurements m ON m.id = b.measurement_id ";

DeviceRecord read_device(const Stmt& s) {
  DeviceRecord d;
  d.uuid = s.text(0);
  d.name = s.text(1);
  d.cc_major = s.i32(2);
  d.cc_minor = s.i32(3);
  d.sm_count = s.i32(4);
  d.l2_bytes = s.i64(5);
  d.total_mem_bytes = s.i64(6);
  d.mem_clock_khz = s.i32(7);
  d.bus_width_bits = s.i32(8);
  d.peak_gbps = s.real(9);
  d.driver_version = s.i32(10);
  d.host = s.text(11);
  return d;
}

RunRecord read_run(const Stmt& s) {
  return {s.i64(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7), s.text(8)};
}

std::optional<Measurement> read_measurement(const Stmt& s, int c, bool users) {
  Measurement m;
  m.key = s.text(c++);
  m.variant = s.text(c++);
  m.block = s.i32(c++);
  m.unroll = s.i32(c++);
  m.vec = s.i32(c++);
  m.grid = s.i32(c++);
  m.tail = s.text(c++);
  m.finish = s.text(c++);
  const auto dtype = parse_dtype(s.text(c++));
  const auto op = parse_op_key(s.text(c++));
  const auto problem = parse_problem(s.text(c++));
  if (!dtype || !op || !problem || (op->is_user() && !users)) return std::nullopt;
  m.dtype = *dtype, m.op = op->builtin().value_or(Op::sum), m.user = op->hash(), m.problem = *problem;
  m.count = static_cast<std::uint64_t>(s.i64(c++));
  m.n = static_cast<std::uint64_t>(s.i64(c++));
  m.median_us = s.real(c++);
  m.min_us = s.real(c++);
  m.max_us = s.real(c++);
  m.host_us = s.real(c++);
  m.reps = s.i32(c++);
  m.gbps = s.real(c++);
  m.pct_peak = s.real(c++);
  m.valid = s.flag(c++);
  m.error = s.text(c++);
  m.expected = s.text(c++);
  m.observed = s.text(c++);
  m.seed = static_cast<std::uint64_t>(s.i64(c++)); // stored as the int64 with the same bits
  m.cold = s.flag(c++);
  m.run_id = s.i64(c++);
  return m;
}

std::optional<Best> read_best(const Stmt& s, bool users) {
  auto m = read_measurement(s, 2, users);
  if (!m) return std::nullopt;
  Best b;
  b.device_uuid = s.text(0);
  b.run_id = s.i64(1);
  b.dtype = m->dtype, b.op = m->op, b.user = m->user, b.problem = m->problem, b.shape = m->shape();
  b.m = std::move(*m);
  return b;
}

namespace {

using u128 = unsigned __int128;

/// |log2(a / t)| compared with |log2(b / t)| exactly: -1, 0 or 1.
int compare_ratio(std::uint64_t a, std::uint64_t b, std::uint64_t t) {
  const auto [a_lo, a_hi] = std::minmax(a, t);
  const auto [b_lo, b_hi] = std::minmax(b, t);
  const u128 ra = u128(a_hi) * b_lo, rb = u128(b_hi) * a_lo;
  return ra < rb ? -1 : ra > rb ? 1 : 0;
}

double log_distance(std::uint64_t a, std::uint64_t t) {
  return std::abs(std::log2(double(a)) - std::log2(double(t)));
}

/// The shape of `shapes` nearest to target (order_by_nearness()); nullopt when there is none.
std::optional<Shape> nearest_shape(std::vector<Shape> shapes, Shape target, Problem problem) {
  order_by_nearness(shapes, target, problem);
  if (shapes.empty()) return std::nullopt;
  return shapes.front();
}

} // namespace

bool nearer(Shape a, Shape b, Shape t) {
  const bool by_length = t.length != 0;
  int c = 0;
  if (!by_length || a.length == b.length) {
    c = compare_ratio(a.count, b.count, t.count);
  } else if (a.count == b.count) {
    c = compare_ratio(a.length, b.length, t.length);
  } else {
    // Two dimensions differ: the sum of the log distances, in double (exact ties are rare here and
    // go to the larger shape below).
    const double da = log_distance(a.count, t.count) + log_distance(a.length, t.length);
    const double db = log_distance(b.count, t.count) + log_distance(b.length, t.length);
    c = da < db ? -1 : da > db ? 1 : 0;
  }
  if (c != 0) return c < 0;
  const u128 ea = u128(a.count) * a.length, eb = u128(b.count) * b.length;
  if (ea != eb) return ea > eb;
  return a.length > b.length; // same elements: the longer segments (a total order, for determinism)
}

bool nearer_total(Shape a, Shape b, Shape t) {
  const auto total = [](Shape s) { return s.count * s.length; };
  if (const int c = compare_ratio(total(a), total(b), total(t)); c != 0) return c < 0;
  if (const int c = compare_ratio(a.count, b.count, t.count); c != 0) return c < 0;
  return nearer(a, b, t); // the same distances: the nearer()'s tie rule
}

void order_by_nearness(std::vector<Shape>& shapes, Shape target, Problem problem) {
  if (problem == Problem::segments && target.length != 0) {
    std::sort(shapes.begin(), shapes.end(), [target](Shape a, Shape b) { return nearer_total(a, b, target); });
    return;
  }
  const auto by_nearer = [target](Shape a, Shape b) { return nearer(a, b, target); };
  // A count-only lookup takes the large totals where there are any: the small ones last.
  const auto large = [](Shape s) { return u128(s.count) * s.length >= kCountOnlyMinTotal; };
  auto end = shapes.end();
  if (target.length == 0 && std::any_of(shapes.begin(), shapes.end(), large))
    end = std::stable_partition(shapes.begin(), shapes.end(), large);
  std::sort(shapes.begin(), end, by_nearer);
  std::sort(end, shapes.end(), by_nearer);
  if (target.length != 0 || end - shapes.begin() < 2) return;
  // The shapes as near in count as the first (the same count, or the same ratio on the other
  // side), and the middle of their totals.
  const auto as_near = [&](Shape s) { return compare_ratio(s.count, shapes.front().count, target.count) == 0; };
  const auto log_total = [](Shape s) { return std::log2(double(s.count)) + std::log2(double(s.length)); };
  double lo = log_total(shapes.front()), hi = lo;
  std::size_t group = 0;
  for (; shapes.begin() + std::ptrdiff_t(group) < end && as_near(shapes[group]); ++group) {
    lo = std::min(lo, log_total(shapes[group]));
    hi = std::max(hi, log_total(shapes[group]));
  }
  const double mid = (lo + hi) / 2;
  std::size_t pick = 0; // the group is in nearer() order: ties keep the earlier (more elements)
  for (std::size_t i = 1; i < group; ++i)
    if (std::abs(log_total(shapes[i]) - mid) < std::abs(log_total(shapes[pick]) - mid) - 1e-9) pick = i;
  std::rotate(shapes.begin(), shapes.begin() + std::ptrdiff_t(pick), shapes.begin() + std::ptrdiff_t(pick) + 1);
}

std::vector<Measurement> Store::measurements(const std::string& device_uuid, const MeasurementFilter& f) const {
  std::vector<Measurement> out;
  const std::string any;
  const auto q = impl_->query(
      "SELECT " + kMeasurementCols + " FROM measurements m WHERE m.device_uuid = ?1 "
      "AND (?2 = '' OR m.dtype = ?2) AND (?3 = '' OR m.op = ?3) AND (?4 = '' OR m.problem = ?4) "
      "AND (?5 = 0 OR (m.count = ?5 AND m.n = ?6)) ORDER BY m.id",
      device_uuid, f.dtype ? name(*f.dtype) : any, f.op ? f.op->name() : any, f.problem ? name(*f.problem) : any,
      f.shape ? sql_size(f.shape->count) : std::int64_t(0), f.shape ? sql_size(f.shape->length) : std::int64_t(0));
  // The query names the op where the filter does: a user reduction's rows are then its own.
  while (q->step())
    if (auto m = read_measurement(*q, 0, f.op.has_value())) out.push_back(std::move(*m));
  return out;
}

std::vector<std::string> Store::measured_keys(const std::string& device_uuid, DType dtype, OpKey op, Problem problem,
                                              Shape shape, std::int64_t run_id) const {
  std::vector<std::string> out;
  const auto q = impl_->query("SELECT DISTINCT key FROM measurements WHERE device_uuid = ?1 AND dtype = ?2 "
                              "AND op = ?3 AND problem = ?4 AND count = ?5 AND n = ?6 AND (?7 = 0 OR run_id = ?7) "
                              "ORDER BY key",
                              device_uuid, name(dtype), op.name(), name(problem), sql_size(shape.count),
                              sql_size(shape.length), run_id);
  while (q->step()) out.push_back(q->text(0));
  return out;
}

std::optional<Best> Store::best(const std::string& device_uuid, DType dtype, OpKey op, Problem problem,
                                Shape shape) const {
  return impl_->best_where("WHERE b.device_uuid = ?1 AND b.dtype = ?2 AND b.op = ?3 AND b.problem = ?4 "
                           "AND b.count = ?5 AND b.n = ?6",
                           device_uuid, name(dtype), op.name(), name(problem), sql_size(shape.count),
                           sql_size(shape.length));
}

std::optional<Best> Store::nearest(const std::string& device_uuid, DType dtype, OpKey op, Problem problem,
                                   Shape shape) const {
  sql_size(shape.count);
  std::vector<Shape> shapes;
  {
    const auto q = impl_->query("SELECT count, n FROM best WHERE device_uuid = ?1 AND dtype = ?2 AND op = ?3 "
                                "AND problem = ?4",
                                device_uuid, name(dtype), op.name(), name(problem));
    while (q->step()) shapes.push_back({std::uint64_t(q->i64(0)), std::uint64_t(q->i64(1))});
  }
  const auto at = nearest_shape(shapes, shape, problem);
  return at ? best(device_uuid, dtype, op, problem, *at) : std::nullopt;
}

std::optional<Best> Store::nearest_same_arch(int cc_major, int cc_minor, DType dtype, OpKey op, Problem problem,
                                             Shape shape) const {
  sql_size(shape.count);
  const std::string arch = "JOIN devices d ON d.uuid = b.device_uuid WHERE d.cc_major = ?1 AND d.cc_minor = ?2 "
                           "AND b.dtype = ?3 AND b.op = ?4 AND b.problem = ?5 ";
  std::vector<Shape> shapes;
  {
    const auto q = impl_->query("SELECT DISTINCT b.count, b.n FROM best b " + arch, cc_major, cc_minor, name(dtype),
                                op.name(), name(problem));
    while (q->step()) shapes.push_back({std::uint64_t(q->i64(0)), std::uint64_t(q->i64(1))});
  }
  const auto at = nearest_shape(shapes, shape, problem);
  if (!at) return std::nullopt;
  return impl_->best_where(arch + "AND b.count = ?6 AND b.n = ?7 ORDER BY m.median_us, m.id LIMIT 1", cc_major,
                           cc_minor, name(dtype), op.name(), name(problem), static_cast<std::int64_t>(at->count),
                           static_cast<std::int64_t>(at->length));
}

std::vector<Best> Store::bests(const std::string& device_uuid) const {
  std::vector<Best> out;
  const auto q = impl_->query(kSelectBest + "WHERE b.device_uuid = ?1 ORDER BY b.dtype, b.op, b.problem, b.count, b.n",
                              device_uuid);
  while (q->step())
    if (auto b = read_best(*q)) out.push_back(std::move(*b));
  return out;
}

std::vector<Best> Store::user_bests(const std::string& device_uuid) const {
  std::vector<Best> out;
  const auto q = impl_->query(kSelectBest + "WHERE b.device_uuid = ?1 AND substr(b.op, 1, length(?2)) = ?2 "
                                            "ORDER BY b.op, b.dtype, b.problem, b.count, b.n",
                              device_uuid, std::string(kUserPrefix));
  while (q->step())
    if (auto b = read_best(*q, /*users=*/true)) out.push_back(std::move(*b));
  return out;
}

std::vector<ReductionRecord> Store::reductions() const {
  std::vector<ReductionRecord> out;
  if (!impl_->has_table("reductions")) return out; // a read-only store of an older schema
  const auto q = impl_->query("SELECT name, canonical, text, first_seen FROM reductions ORDER BY name");
  while (q->step())
    if (auto k = parse_op_key(q->text(0)); k && k->is_user())
      out.push_back({*k->hash(), q->text(1), q->text(2), q->text(3)});
  return out;
}

std::optional<ReductionRecord> Store::reduction(std::uint64_t hash) const {
  if (!impl_->has_table("reductions")) return std::nullopt;
  const auto q = impl_->query("SELECT canonical, text, first_seen FROM reductions WHERE name = ?1",
                              OpKey::user(hash).name());
  if (!q->step()) return std::nullopt;
  return ReductionRecord{hash, q->text(0), q->text(1), q->text(2)};
}

std::vector<PublishedRecord> Store::published(const std::string& doc_prefix) const {
  std::vector<PublishedRecord> out;
  const auto q = impl_->query("SELECT doc, gpu, arch, kernel, coalesce(ord, 0), dtype, n, coalesce(block, 0), "
                              "time_ms, gbps, step_speedup, cumulative_speedup, note FROM published "
                              "WHERE substr(doc, 1, length(?1)) = ?1 ORDER BY rowid",
                              doc_prefix);
  while (q->step()) {
    PublishedRecord r;
    r.doc = q->text(0);
    r.gpu = q->text(1);
    r.arch = q->text(2);
    r.kernel = q->text(3);
    r.order = q->i32(4);
    r.dtype = q->text(5);
    r.n = static_cast<std::uint64_t>(q->i64(6));
    r.block = q->i32(7);
    r.time_ms = q->real(8);
    r.gbps = q->real(9);
    r.step_speedup = q->real(10);
    r.cumulative_speedup = q->real(11);
    r.note = q->text(12);
    out.push_back(std::move(r));
  }
  return out;
}

std::string default_store_path() {
  if (const char* e = std::getenv("REDUCE_TUNE_DB"); e && *e) return e;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return (std::filesystem::path(x) / "reduce-tune" / "tuning.db").string();
  const char* home = std::getenv("HOME");
  return (std::filesystem::path(home && *home ? home : ".") / ".local" / "share" / "reduce-tune" /
          "tuning.db").string();
}

} // namespace reduce_tune::db
