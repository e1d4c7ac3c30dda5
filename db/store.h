// reduce-tune: the SQLite store of devices, tuning runs, measurements and best configurations.
// Plain values only: this header knows nothing of CUDA, NVRTC or SQLite. The implementation is
// split by concern: schema.cpp (opening, schema and migrations), writes.cpp (devices, runs,
// measurements, best rows, published rows), merge.cpp (merging another store), reads.cpp
// (queries and the nearest-shape rule).
#pragma once

#include "db/op_key.h"
#include "reduce_tune/config.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune::db {

/// A failure of the store; carries SQLite's extended result code (0 when not from SQLite).
class StoreError : public std::runtime_error {
public:
  StoreError(const std::string& what, int code = 0) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }
private:
  int code_;
};

/// A GPU as the store knows it. `uuid` identifies it; the rest is descriptive.
struct DeviceRecord {
  std::string uuid;             ///< "GPU-xxxxxxxx-...."
  std::string name;             ///< "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t total_mem_bytes = 0;
  int mem_clock_khz = 0;
  int bus_width_bits = 0;
  double peak_gbps = 0;         ///< theoretical: 2 * clock * bus width / 8
  int driver_version = 0;       ///< as cuDriverGetVersion reports, e.g. 13000
  std::string host;             ///< hostname the device was seen on
};

/// One tuning run: its provenance.
struct RunRecord {
  std::int64_t id = 0;
  std::string device_uuid;
  std::string tool_version;
  std::string nvrtc_version;    ///< "13.0"
  std::string options;          ///< the command line / sweep options, as text
  std::string timing_method;    ///< e.g. "cuda-events median of 20, L2 flushed"
  std::string started;          ///< ISO-8601 UTC
  std::string ended;            ///< empty while running
  std::string status;           ///< "running", "done", "interrupted", "failed"
};

/// One (configuration, problem, shape) measured on a device.
struct Measurement {
  std::string key;              ///< configuration key, e.g. "unrolling.b512.u8.host"
  std::string variant;
  int block = 0, unroll = 1, vec = 1, grid = 0;
  std::string tail, finish;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Problem problem = Problem::array;
  std::uint64_t count = 1;      ///< results (rows, columns, segments); 1 for the array problem
  std::uint64_t n = 0;          ///< elements per result (Shape::length)
  double median_us = 0, min_us = 0, max_us = 0;
  double host_us = 0;           ///< host-side final combine (finish=host), included in median_us
  int reps = 0;
  double gbps = 0, pct_peak = 0;
  bool valid = false;           ///< checked against the CPU reference
  std::string error;            ///< why invalid / failed; empty when valid
  std::string expected, observed; ///< as text, for failed checks
  std::uint64_t seed = 0;
  bool cold = true;             ///< L2 flushed before each repetition
  std::int64_t run_id = 0;      ///< the run it belongs to (set when read back)
  /// A user reduction's hash (Reduction::hash): the row is stored under its key (OpKey::user),
  /// and `op` is Op::sum, in whose place its kernels are rendered. nullopt: a built-in op's row.
  std::optional<std::uint64_t> user;

  Shape shape() const { return {count, n}; }
  OpKey op_key() const { return user ? OpKey::user(*user) : OpKey(op); }
};

/// The best valid measurement for (device, dtype, op, problem, shape).
struct Best {
  std::string device_uuid;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Problem problem = Problem::array;
  Shape shape;
  Measurement m;
  std::int64_t run_id = 0;
  std::optional<std::uint64_t> user; ///< as Measurement::user

  OpKey op_key() const { return user ? OpKey::user(*user) : OpKey(op); }
};

/// Which measurements Store::measurements returns; an empty field matches everything.
struct MeasurementFilter {
  std::optional<DType> dtype;
  /// A built-in op or a user reduction; without one, only built-in ops' rows are returned.
  std::optional<OpKey> op;
  std::optional<Problem> problem;
  std::optional<Shape> shape;
};

/// The nearest-shape rule of the lookup: true when `a` is nearer to `target` than `b`. Distance
/// is |log2(a.length / t.length)| + |log2(a.count / t.count)|; a target length of 0 grades by the
/// count alone (segments, whose lengths vary). Ratios of one dimension are compared exactly
/// (128-bit cross products) so that equal ratios tie; ties go to the shape with more elements.
bool nearer(Shape a, Shape b, Shape target);

/// True when `a` is nearer to `target` than `b` in total elements (log ratio), then in count,
/// then by nearer(): offsets lookups that know their element count. Their grid has few counts at
/// large totals (none below 2^8): one segment of 2^24 elements takes the configuration of 2^8
/// segments of 2^24, not that of 2 segments of 2^16 (nearer() would; on the H100 calls of 1-8
/// segments of 2^24 elements then ran at 0.32-0.78x).
bool nearer_total(Shape a, Shape b, Shape target);

/// `shapes` sorted nearest to `target` first: by nearer_total() for `problem` segments with a
/// known length, else by nearer(), except that for a target length of 0 (segments: the lengths,
/// so the total, unknown) the shapes of kCountOnlyMinTotal elements and more come first where
/// there are any (the smaller totals are tuned for calls that give their element count,
/// reduce_segments' `elements`; a count-only call is left with the configurations of the large
/// totals, where a poor pick costs the most time), and the first is, among those as near in count
/// as the nearest, the one whose element count is nearest the middle of theirs in log space
/// (ties: more elements): a total in the middle of the tuned ones, never more than half their
/// range off, instead of the largest.
void order_by_nearness(std::vector<Shape>& shapes, Shape target, Problem problem);
inline constexpr std::uint64_t kCountOnlyMinTotal = std::uint64_t(1) << 20;

/// One row of a published timing table of the course material (data/published.csv). Never a
/// measurement: it lives in its own table and is always shown labelled "published".
struct PublishedRecord {
  std::string doc;              ///< source document, e.g. "004_012f064147cfd0ff.txt"
  std::string gpu;              ///< as the document names it; empty where it names none
  std::string arch;             ///< "Kepler", ...; empty where unknown
  std::string kernel;           ///< as the document's table names it
  int order = 0;                ///< position in the document's table; 0 for rows outside it (CPU)
  std::string dtype;            ///< "int32", "float32"
  std::uint64_t n = 0;
  int block = 0;                ///< threads per block; 0 where not given
  double time_ms = 0;
  double gbps = 0, step_speedup = 0, cumulative_speedup = 0; ///< NaN where not given
  std::string note;
};

/// A call point the library served without an exact tuning (Options::record): where a program's
/// calls went that the store had not tuned for, for `reduce-tune tune --recorded`.
struct RecordedPoint {
  std::string device_uuid;
  std::string device_name;  ///< the GPU model
  DType dtype = DType::f32;
  Op op = Op::sum;
  Problem problem = Problem::array;
  Shape shape{1, 1};        ///< where the call was looked up (its size bucket's lower end)
  std::string grade;        ///< the lookup's Match (name(Match)): what the call ran with
  std::string first_seen, last_seen; ///< set by the store (UTC, ISO 8601)
  /// A user reduction's hash, as Measurement::user (its description in the store's reductions,
  /// for tune --recorded); nullopt: a built-in op's point.
  std::optional<std::uint64_t> user;

  OpKey op_key() const { return user ? OpKey::user(*user) : OpKey(op); }
};

/// A point of a device: what a first-use tuning claims (Store::claim).
struct PointKey {
  std::string device_uuid;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Problem problem = Problem::array;
  Shape shape{1, 1};
  std::optional<std::uint64_t> user; ///< as Measurement::user: a user reduction's point

  OpKey op_key() const { return user ? OpKey::user(*user) : OpKey(op); }
};

/// Who is measuring a point on first use (Options::autotune), until when.
struct Claim {
  std::string owner;    ///< "host:pid" of the measuring process (db/claims.h)
  double expires = 0;   ///< Unix time in seconds at which the claim lapses
};

/// A user reduction as the store keeps it, once per hash: what `reduce-tune query` and
/// `coverage` show, and what `tune --reduction` can run again.
struct ReductionRecord {
  std::uint64_t hash = 0;       ///< Reduction::hash (its rows are stored under OpKey::user(hash))
  std::string canonical;        ///< Reduction::canonical()
  std::string text;             ///< the description as parse_reduction reads it (to_text)
  std::string first_seen;       ///< set by the store (UTC, ISO 8601)

  OpKey op_key() const { return OpKey::user(hash); }
};

/// What Store::merge_from brought in.
struct MergeStats {
  std::size_t devices = 0;      ///< devices new to this store
  std::size_t runs = 0;         ///< runs new to this store
  std::size_t measurements = 0; ///< measurements new to this store
  std::size_t duplicates = 0;   ///< measurements of the other store already here
  std::size_t published = 0;    ///< published rows new to this store
  std::size_t recorded = 0;     ///< recorded call points new to this store (a point already
                                ///< here takes the other's sightings: first and last seen, and
                                ///< the grade and GPU name of the later)
  std::size_t reductions = 0;   ///< user reductions' descriptions new to this store
  std::size_t total() const { return devices + runs + measurements + published + recorded + reductions; }
};

/// The default store: $REDUCE_TUNE_DB if set, else $XDG_DATA_HOME/reduce-tune/tuning.db, else
/// $HOME/.local/share/reduce-tune/tuning.db.
std::string default_store_path();

/// The store. Open with a file path or ":memory:". Creates or migrates the schema
/// (PRAGMA user_version, ordered migrations); refuses, without modifying the file, a database
/// whose user_version is newer than this build knows, and a file that is not a reduce-tune
/// database. Files use WAL and a busy timeout so several tuner processes can share one.
class Store {
public:
  enum class Mode { read_write, read_only };
  /// read_only: never created, migrated or written (an installed store in a read-only place);
  /// refuses a file of another schema version.
  explicit Store(const std::string& path, Mode mode = Mode::read_write);
  /// A read-only store over a database image in memory (sqlite3_deserialize), such as the tuning
  /// compiled into the library; `label` names it in messages. The image must outlive the store
  /// and must not be in WAL mode.
  Store(std::span<const unsigned char> image, const std::string& label);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  static int schema_version();              ///< the version this build writes
  /// The oldest version a read-only store may have (its reads need nothing newer: the tables a
  /// later version added read as empty).
  static constexpr int kOldestReadable = 3;
  int user_version() const;                 ///< the version of the open database

  /// Inserts the device or updates its descriptive fields; keyed by uuid.
  void upsert_device(const DeviceRecord&);
  std::vector<DeviceRecord> devices() const;
  std::optional<DeviceRecord> device(const std::string& uuid) const;

  /// Starts a run (status "running", started = now); returns its id.
  std::int64_t begin_run(const RunRecord&);
  /// Sets ended = now and the status.
  void end_run(std::int64_t run_id, const std::string& status);
  std::vector<RunRecord> runs() const;

  /// Appends measurements of a run in one transaction, and updates the best table for
  /// every (device, dtype, op, problem, shape) touched: the valid measurement with the lowest
  /// median wins; an invalid one is never best.
  void add_measurements(std::int64_t run_id, const std::vector<Measurement>&);
  /// All measurements of a device (optionally filtered), oldest first. Rows of a dtype, op or
  /// problem this build does not know are skipped, and so are user reductions' rows unless the
  /// filter names one (filter.op).
  std::vector<Measurement> measurements(const std::string& device_uuid,
                                        const MeasurementFilter& filter = {}) const;
  /// Keys already measured for (dtype, op, problem, shape) on the device, valid or not (for
  /// resume): in run `run_id`, or in any run when it is 0.
  std::vector<std::string> measured_keys(const std::string& device_uuid, DType dtype, OpKey op,
                                         Problem problem, Shape shape,
                                         std::int64_t run_id = 0) const;

  /// Best for exactly this shape, if tuned.
  std::optional<Best> best(const std::string& device_uuid, DType dtype, OpKey op, Problem problem,
                           Shape shape) const;
  /// Best at the tuned shape nearest to `shape` by the rule of nearer().
  std::optional<Best> nearest(const std::string& device_uuid, DType dtype, OpKey op, Problem problem,
                              Shape shape) const;
  /// Like nearest(), over every device with this compute capability (for lookup on a GPU
  /// model that was not tuned itself); of several devices tuned at that shape, the fastest.
  std::optional<Best> nearest_same_arch(int cc_major, int cc_minor, DType dtype, OpKey op,
                                        Problem problem, Shape shape) const;
  /// Every best row of a device's built-in ops.
  std::vector<Best> bests(const std::string& device_uuid) const;
  /// Every best row of a device's user reductions, by hash, then dtype, problem and shape.
  std::vector<Best> user_bests(const std::string& device_uuid) const;

  /// Keeps a user reduction's description (once per hash: a second call with the same hash and
  /// canonical text changes nothing). Throws StoreError where the hash is stored with another
  /// canonical text (two descriptions of one hash), leaving the store unchanged.
  void add_reduction(const ReductionRecord& r);
  /// The user reductions kept, by hash; a store older than the table has none.
  std::vector<ReductionRecord> reductions() const;
  std::optional<ReductionRecord> reduction(std::uint64_t hash) const;

  /// Notes a call point (RecordedPoint): inserted, or, for a point already noted, its grade and
  /// last_seen updated. Throws StoreError for a shape of no results.
  void record_point(const RecordedPoint& p);
  /// The recorded points, of one device (uuid) or all (empty), ordered by device, dtype, op,
  /// problem and shape. Rows of a dtype, op or problem this build does not know are skipped; a
  /// store older than the table has none.
  std::vector<RecordedPoint> recorded(const std::string& device_uuid = {}) const;
  /// Forgets a device's recorded points.
  void forget_recorded(const std::string& device_uuid);

  /// Takes the claim on `point` for `owner` for `lease_s` seconds from now, in one write
  /// transaction: where the point has none, where it is `owner`'s already (renewed), or where
  /// the holder's has lapsed (expired, or `stale` says so of it: db/claims.h, owner_gone).
  /// Returns nullopt when `owner` holds it now, else the live claim of another.
  std::optional<Claim> claim(const PointKey& point, const std::string& owner, double lease_s,
                             const std::function<bool(const Claim&)>& stale = {});
  /// Drops every claim of `owner` (its points stored, or its process gone).
  void release_claims(const std::string& owner);
  /// The claims held now, lapsed ones included (for tests and reports).
  std::vector<std::pair<PointKey, Claim>> claims() const;

  /// Brings the devices, runs and measurements (and published rows) of another store file into
  /// this one, in one transaction, and recomputes the best rows it touched. Idempotent: a run is
  /// the same run when (device, started, tool version, options) match, a measurement the same
  /// measurement when its run and (key, dtype, op, problem, count, n, seed) match (a store of an
  /// older schema has array problems only); runs keep their provenance
  /// fields, devices keep the most recently seen description. Refuses, modifying neither file, an
  /// `other_path` that is missing, not SQLite, not a reduce-tune store, or of a newer schema.
  MergeStats merge_from(const std::string& other_path);

  /// Inserts published rows, or updates those already present (same doc, gpu, kernel, dtype, n,
  /// block); returns how many rows were inserted or changed. Idempotent.
  std::size_t import_published(const std::vector<PublishedRecord>& rows);
  /// The published rows, in file order (document, then GPU, then table order); optionally only
  /// those whose document starts with `doc_prefix`.
  std::vector<PublishedRecord> published(const std::string& doc_prefix = "") const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace reduce_tune::db
