// reduce-tune fleet: tuning a cluster's GPUs through Slurm. One SQLite file written from many nodes
// over a shared file system is not safe (its locks are unreliable there), so every GPU task writes
// its own shard store and a last job merges them. The fleet's directory (DIR):
//   fleet.conf       what was submitted (the plan below), for `fleet status`
//   scripts/         the batch scripts: compile.sh, tune-<partition>.sh, merge.sh
//   cache/           the compile cache the compile array fills and the GPU tasks read
//   shards/          <task>.db, one store per GPU task, and <task>.progress (points done of planned)
//   state/           <step>: each step's state (running, done, failed with its exit code and error)
//   logs/            Slurm's output of each job, and each step's standard error
//   fleet.db         the merged store; tuning.db its shipped form (db/ship.h)
// Nothing there is writable by others; group write only when asked (kernels/trust.h says why).
#pragma once

#include "tuner/sweep.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace reduce_tune::fleet {

/// The architecture ("sm_90") of a GPU type as a Slurm GRES names it ("h100", "a100_80gb",
/// "nvidia_h100_80gb_hbm3", "l40s"), or nullopt when the type is not known.
std::optional<std::string> arch_of_gpu_type(const std::string& type);

/// A partition as `sinfo -h -p P -o %P|%G|%D` describes it.
struct Partition {
  std::string name;
  std::string gres;      ///< "gpu:h100:8(S:0-1)", "(null)"
  std::string gpu_type;  ///< "h100"; empty when the GRES names none
  int gpus_per_node = 0; ///< 0: no GPU GRES, or its count is not given
  int nodes = 0;
};
/// Parses sinfo's lines for `name` (several lines when its nodes differ); nullopt when there are
/// none (Slurm does not know the partition).
std::optional<Partition> parse_sinfo(const std::string& name, const std::string& output);

/// Everything `fleet submit` decides; saved in DIR/fleet.conf.
struct Plan {
  std::string dir;                        ///< absolute
  std::string binary;                     ///< the reduce-tune the jobs run (on a shared file system)
  std::vector<std::string> partitions;    ///< GPU partitions ("local" for --local)
  std::vector<int> tasks;                 ///< GPU array tasks per partition
  std::vector<int> gpus;                  ///< GPUs per node of each partition (0: not requested)
  std::string cpu_partition;              ///< for the compile array and the merge
  std::vector<std::string> archs;         ///< the compile array's targets, "sm_90"
  std::string constraint;                 ///< sbatch --constraint of the GPU tasks
  std::vector<std::string> sbatch_args;   ///< added to every sbatch
  std::vector<std::string> tune_args;     ///< the user's tune options
  std::vector<std::string> compile_args;  ///< what `reduce-tune compile` needs of them
  bool group_write = false;
  bool local = false;
  std::string submitted;                  ///< ISO-8601 UTC
  std::string compile_job, merge_job;     ///< Slurm job ids (empty: not submitted)
  std::vector<std::string> tune_jobs;     ///< one per partition
};

/// The name of GPU task `index` of partition `p`: "<p>-<index>" (its shard is shards/<name>.db).
std::string task_name(const std::string& partition, int index);

/// The options of `reduce-tune compile` that select what a sweep of `o` compiles.
std::vector<std::string> compile_args(const SweepOptions& o);

void save(const Plan& plan);
/// Reads DIR/fleet.conf; throws std::runtime_error naming the file when it is missing or bad.
Plan load(const std::string& dir);

/// A word quoted for bash ('...', with ' as '\'').
std::string shell_quote(const std::string& word);

/// The batch scripts. Each records its step's state under state/ and its standard error under
/// logs/; the array index is $SLURM_ARRAY_TASK_ID (0 when unset).
std::string compile_script(const Plan& plan);
std::string tune_script(const Plan& plan, std::size_t partition);
std::string merge_script(const Plan& plan);

/// Why `dir`, a directory of the fleet, cannot be trusted: writable by others (sticky or not), or
/// by its group unless `group_write`; nullopt when it can (or does not exist).
std::optional<std::string> untrusted_dir(const std::string& dir, bool group_write);

/// Creates DIR and its sub-directories (mode 0755, or 0775 with group write), and checks DIR, its
/// cache and shards with untrusted_dir (throws std::runtime_error naming the first refused one).
void make_layout(const Plan& plan);

/// A step's state file (state/<step>): "running", "done" or "failed", with what the script knew.
struct StepState {
  std::string state;   ///< empty: no file (the step has not started)
  std::string time, job, host, error;
  int exit = 0;
};
StepState read_state(const std::string& dir, const std::string& step);

/// One GPU's progress in a tuning task, as tune --progress-file writes it.
struct GpuProgress {
  int ordinal = 0;
  std::size_t done = 0, total = 0;
  std::string phase;  ///< compile, measure; or the run's end: done, interrupted, failed
  std::string name, uuid;
};
/// Writes a progress file (atomically: a reader sees the last whole version).
void write_progress(const std::string& path, const std::vector<GpuProgress>& gpus);
std::vector<GpuProgress> read_progress(const std::string& path);

/// Runs argv (PATH searched), standard error passed through; its exit code (127 when it cannot
/// start) and standard output.
struct CommandResult {
  int rc = 0;
  std::string out;
};
CommandResult run_command(const std::vector<std::string>& argv, bool quiet_stderr = false);
/// Whether `program` is on PATH (or is an executable path).
bool on_path(const std::string& program);

} // namespace reduce_tune::fleet
