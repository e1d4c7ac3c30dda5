// reduce-tune: the sweep. For every (dtype, op, n) and every valid configuration: check the result
// against the CPU reference, time it, store it.
#pragma once

#include "reduce_tune/config.h"
#include "db/store.h"
#include "runtime/lookup.h"
#include "tuner/search.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace reduce_tune {

struct UserOp;    // kernels/user_op.h
struct CheckData; // tuner/check_data.h

/// What to sweep and how. Empty lists mean "all" (for sizes: the defaults, 2^10 .. 2^28 by 4x).
struct SweepOptions {
  int device = 0;
  std::vector<DType> dtypes{DType::i32, DType::f32};
  std::vector<Op> ops{Op::sum};
  std::vector<std::uint64_t> sizes;
  Problem problem = Problem::array;
  std::vector<Shape> shapes;      ///< segmented problems (empty: default_shapes(problem))
  std::vector<std::string> variants;
  std::vector<int> blocks, unrolls;
  std::vector<Tail> tails;
  std::vector<Finish> finishes;
  std::vector<std::string> keys;  ///< exact configurations (overrides the lists above)
  int reps = 20;                  ///< timed repetitions (median); at least 3
  bool hot = false;               ///< skip the L2 flush before each repetition
  /// Hold each timed batch until it is queued whole (tuner/hold.h); off only for tests, to show
  /// what the hold prevents.
  bool hold = true;
  bool allow_unsafe = false;      ///< admit the volatile tail on sm_70+ (for study)
  bool resume = false;            ///< skip points already stored for this device (any run)
  /// The exhaustive segmented sweep: measure every evict-first twin, not only those of the
  /// point's fastest plain configurations (TwinFilter); for stores that replay a search as the
  /// GPU runs it, every twin it may ask for recorded.
  bool every_twin = false;
  std::int64_t run_id = 0;        ///< continue this run (a restarted worker): skip what it holds,
                                  ///< leave ending it to the caller; 0 = begin and end a new run
  std::string db_path;
  std::string nvrtc_path;
  std::string cache_dir;          ///< empty: CompileCache::default_dir()
  std::uint64_t seed = 20261121;
  std::string command_line;       ///< recorded with the run
  /// What to measure at each point: every valid configuration (exhaustive), or a search within
  /// `budget` (tuner/sweep_search.h), seeded from the lookup's answer there (this GPU's earlier
  /// tuning, the shipped or carried tuning), the points searched before and the built-in default.
  Strategy search = Strategy::exhaustive;
  Budget budget;                  ///< guided and random (none: every candidate)
  // First-use tuning (tuner/autotune_worker.h): one point, a time limit, what the call can run.
  /// Steady-clock seconds (Clock::now().time_since_epoch()) after which a search starts no new
  /// measurement at a point once it holds kDeadlineFloor of them, one valid; 0: none.
  double deadline_s = 0;
  /// Compile each configuration when it is measured rather than every candidate first (a search
  /// measures few of them); one that fails to compile is skipped.
  bool lazy_compile = false;
  /// Measure only the configurations a call with these requirements may run (the lookup's rule,
  /// config_unusable), so that what is stored answers that call exactly.
  std::optional<Requirements> requirements;
  /// Configurations a search measures first at every point where they are valid; they join the
  /// candidates (tests of first-use tuning lead it into a registered faulting kernel this way,
  /// which no problem's own variant list holds).
  std::vector<Config> first;
  bool profile = false;           ///< print where the time went, phase by phase, at the end
  /// A user reduction to sweep in place of `ops` (which must then be {Op::sum}, in whose place its
  /// kernels are rendered): its rows are stored under its hash (db::OpKey::user), its
  /// description in the store's reductions, and its results are checked against its CPU
  /// evaluation where it has one (tuner/user_check.h), else recorded as not checked.
  std::shared_ptr<const UserOp> user;
  /// With `user`: the inputs to measure on and the expected results to check against, supplied
  /// per point (tuner/check_data.h) in place of random inputs and the reduction's CPU evaluation.
  /// Every (dtype, size or shape) of the sweep must be one of its points.
  std::shared_ptr<const CheckData> check_data;
};

/// Measurements a search makes at a point before SweepOptions::deadline_s may stop it.
inline constexpr std::size_t kDeadlineFloor = 3;

/// A point of the space that was not measured, and why.
struct Skip {
  std::string key, dtype, op;
  std::uint64_t n = 0;
  std::string reason;
};

/// Progress of a sweep, for the caller to show.
struct Progress {
  std::size_t done = 0, total = 0;
  std::string phase;              ///< "compile", "measure" (before a point) or "stored" (after it)
  std::string key;                ///< the point being measured; empty while compiling
  DType dtype = DType::f32;       ///< the problem it is measured on (when key is set)
  Op op = Op::sum;
  Problem problem = Problem::array;
  std::uint64_t count = 1, n = 0; ///< shape: results x elements each
  double elapsed_s = 0;
  double eta_s = -1;               ///< seconds left (see tuner/eta.h); negative while unknown
};

/// "float32 sum n=1M", or "float32 sum rows 1K x 4K" (results x elements each): the point of a
/// progress event, for messages.
std::string point_text(const Progress& p);
std::string point_text(const db::Measurement& m);

/// Where the time went. data_s is input_s + reference_s, validate_s the checked launches
/// (check_s); the rest break a sweep down phase by phase for `tune --profile`.
struct SweepTimes {
  double total_s = 0, data_s = 0, compile_s = 0, validate_s = 0, timing_s = 0;
  double setup_s = 0;       ///< context, NVRTC, compile cache, store, run record
  double seeds_s = 0;       ///< guided and random: the lookups and hints that seed each point
  double input_s = 0;       ///< input generation (with what is made with it where it is not
                            ///< made ahead: prefix sums, the array sweep's references), its
                            ///< upload, the offsets layout, buffers
  double reference_s = 0;   ///< the CPU reference of every point (or the GPU check's data, where made
                            ///< straight from the prefix sums, and References made later on demand)
  double load_s = 0;        ///< kernels loaded into the context (module loads, cache reads)
  double store_s = 0;       ///< measurements written to the store
  double input_check_s = 0; ///< each input checked once it served its shapes or size
                            ///< (segmented: also at once after a wrong result)
  std::size_t inputs = 0;   ///< inputs generated and uploaded
  double upload_s = 0;              ///< of input_s, the copies of inputs and offsets to the device
  double input_wait_s = 0;          ///< of input_s, waiting for the inputs made ahead (or making them)
  double layout_s = 0;              ///< of input_s, the segmented sweep's layouts: each shape's offsets
                                    ///< drawn (or taken, drawn ahead) and uploaded
  std::size_t layouts = 0;          ///< shapes whose layout that was
  std::size_t layouts_ahead = 0;    ///< of them, drawn on a thread while the shape before was measured
  std::uint64_t upload_bytes = 0;   ///< the bytes those copies moved
  std::uint64_t upload_staged_bytes = 0; ///< of them, through pinned staging buffers (the rest: pageable)
  std::size_t input_checks = 0;  ///< inputs checked: hashed on the GPU, or read back and compared
  std::size_t inputs_hashed = 0; ///< of them, those whose GPU hash matched the host's
  std::size_t inputs_ahead = 0;  ///< inputs made on a thread while the one before was measured
  std::size_t prefix_points = 0; ///< points whose references came from their input's prefix sums
  std::size_t references_ahead = 0; ///< points whose references were made while the shape before was measured
  std::size_t prefix_straight = 0;  ///< of the prefix points, those whose GPU check data were made straight
                                    ///< from the prefix sums, their References left unmade
  std::size_t references_on_demand = 0; ///< of those, points whose References were made after all (a CPU check)
  std::size_t points = 0, measured = 0;
  // Segmented sweeps: how their checked launches were decided (tuner/fast_check.h).
  double check_setup_s = 0;       ///< the GPU check's expected results and scales, once a point
  std::size_t check_setups = 0;   ///< points prepared for it
  std::size_t check_staged = 0;   ///< of them, made (with their references or from the prefix sums) while
                                  ///< the shape before was measured
  std::size_t gpu_checked = 0;    ///< launches the GPU's fast pass passed (two words read back)
  std::size_t cpu_checked = 0;    ///< launches read back and checked on the CPU
  std::size_t cpu_after_gpu = 0;  ///< of those, after the fast pass found a result outside its bound
  // The timed batches' hold (tuner/hold.h).
  std::size_t held_batches = 0;     ///< holds queued (checked launches and batches of repetitions)
  std::size_t hold_reruns = 0;      ///< batches queued again because their hold timed out
  std::size_t hold_unprotected = 0; ///< of those, whose second hold timed out too (times kept)
};
/// The breakdown of `t`, one phase a line (`tune --profile`).
std::string profile_text(const SweepTimes& t);

struct SweepResult {
  db::DeviceRecord device;
  std::int64_t run_id = 0;
  std::vector<db::Measurement> measurements; ///< this run's, plus stored ones reused on resume
  std::vector<Skip> skipped;
  std::size_t compiled = 0, cache_hits = 0;
  SweepTimes times;
  bool interrupted = false;
};

/// Runs the sweep. `progress` (optional) is called from the calling thread; `stop` (optional) is
/// polled between measurements: when it returns true the sweep ends cleanly after the current one.
SweepResult sweep(const SweepOptions& options, const std::function<void(const Progress&)>& progress = {},
                  const std::function<bool()>& stop = {});

/// The configurations `o` selects, before validity: its keys, or the spaces of its variants (by
/// default every variant of its problem).
std::vector<Config> selected_configs(const SweepOptions& o);

/// The (configuration, dtype, op) a sweep compiles and measures on a GPU of compute capability
/// `cc`: those selected_configs gives that are valid there, and without explicit keys not unswept
/// (kernels/segmented.h); the others go to `skipped` (if given) with the reason. A bf16 or f16
/// configuration that cannot write the element type but can write the float32 accumulator (an
/// atomic finish of a sum) is measured that way: the store keeps it beside the others, and only
/// lookups for a float32 result take it (runtime/lookup.cpp re-validates).
struct CompileJob; // kernels/runner.h
std::vector<CompileJob> sweep_jobs(const SweepOptions& o, int cc, int max_block, int sm_count,
                                   std::vector<Skip>* skipped = nullptr);

/// Why an explicit key of `o` (--keys) cannot run on a GPU of compute capability `cc`: it is invalid
/// there for every dtype and op of the sweep (the first key that is, with the first dtype's reason),
/// or nullopt. Such a key would be skipped without a measurement.
std::optional<std::string> refused_key(const SweepOptions& o, int cc, int max_block, int sm_count);

/// The default sizes: 2^10, 2^12, ..., 2^28.
std::vector<std::uint64_t> default_sizes();

/// Why the sweep of `o` cannot fit in `total_mem` bytes of GPU memory (its largest size, with a
/// scratch copy where an in-place variant is selected), or nullopt when it can.
std::optional<std::string> too_large(const SweepOptions& o, std::int64_t total_mem);

/// The store's record of a GPU (needs the driver, not a context).
db::DeviceRecord device_record(int ordinal);
/// The provenance of a run of `o` on a GPU.
db::RunRecord run_record(const SweepOptions& o, const std::string& device_uuid,
                         const std::string& nvrtc_version);

/// Compiles into the compile cache everything a sweep of `o` needs on a GPU of compute capability
/// `cc` (no GPU needed), so that workers on several GPUs of one architecture compile nothing.
/// Returns the number of sources compiled (cache misses).
std::size_t precompile(const SweepOptions& o, int cc, int max_block, int sm_count,
                       const std::function<void(const Progress&)>& progress = {});

} // namespace reduce_tune
