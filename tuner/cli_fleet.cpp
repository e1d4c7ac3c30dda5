// reduce-tune: the shells of fleet submit, status and merge, and of ship.
#include "tuner/cli_fleet.h"

#include "db/ship.h"
#include "db/store.h"
#include "kernels/driver.h"
#include "tuner/cli.h"
#include "tuner/fleet.h"

#include <boost/program_options.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace po = boost::program_options;

namespace reduce_tune {
namespace {

namespace fs = std::filesystem;
using cli::Usage;
using namespace fleet;

constexpr const char* kFleetUsage =
    "usage: reduce-tune fleet submit --shards DIR --partition P[,P...] [options] [tune options]\n"
    "       reduce-tune fleet submit --local --shards DIR [--archs sm_XX,...] [tune options]\n"
    "       reduce-tune fleet status DIR\n"
    "       reduce-tune fleet merge DIR\n\n"
    "submit: a CPU array job compiling the sweep's kernels for each architecture into DIR/cache,\n"
    "one requeue-safe GPU array job per partition running `reduce-tune tune --device all --resume`\n"
    "into its own store DIR/shards/<partition>-<task>.db, and a job after them that merges the\n"
    "shards into DIR/fleet.db and writes its shipped form DIR/tuning.db (point REDUCE_TUNE_SHIPPED_DB\n"
    "at it). --local runs the same steps here, one after another, without Slurm.\n"
    "status: each task's points done of planned, failures, and the merge's state.\n"
    "merge: the merge job's step (merges DIR/shards/*.db, writes DIR/tuning.db).\n";

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Options the fleet sets itself in every GPU task.
void refuse_fleet_owned(const std::vector<std::string>& tune_args) {
  for (const auto& a : tune_args)
    for (const char* own : {"--device", "--db", "--cache-dir", "--resume", "--progress-file", "--in-process"})
      if (a == own || a.starts_with(std::string(own) + "="))
        throw Usage("fleet submit: " + std::string(own) + " is the fleet's own (every GPU task runs tune "
                    "--device all --resume --cache-dir DIR/cache --db DIR/shards/<task>.db)");
  for (const auto& a : tune_args)
    if (a.find('\n') != std::string::npos) throw Usage("fleet submit: an option holds a line break");
}

std::string sbatch_id(const std::string& out) {
  std::string id = out.substr(0, out.find_first_of(";\n"));
  while (!id.empty() && std::isspace(static_cast<unsigned char>(id.back()))) id.pop_back();
  return id;
}

int run_local(const Plan& p) {
  auto run = [&](const std::string& script, int index) {
    const std::string cmd = "SLURM_ARRAY_TASK_ID=" + std::to_string(index) + " bash " +
                            shell_quote((fs::path(p.dir) / "scripts" / script).string());
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  };
  int worst = 0;
  for (std::size_t i = 0; i < p.archs.size(); ++i) {
    std::fprintf(stderr, "== compile %s\n", p.archs[i].c_str());
    if (run("compile.sh", int(i))) worst = 1; // the tuning compiles what is missing
  }
  std::fprintf(stderr, "== tune %s\n", task_name(p.partitions[0], 0).c_str());
  if (run("tune-" + p.partitions[0] + ".sh", 0)) worst = 1;
  std::fprintf(stderr, "== merge\n");
  if (run("merge.sh", 0)) worst = 1;
  std::printf("fleet %s: tuned and merged here; reduce-tune fleet status %s\n", p.dir.c_str(), p.dir.c_str());
  return worst;
}

int fleet_submit(const std::vector<std::string>& args, const TuneParser& parse_tune) {
  po::options_description desc("reduce-tune fleet submit options (any other option is a tune option)");
  std::string dir, partitions, constraint, sbatch, archs, binary, cpu_partition, per = "1";
  bool local = false, group_write = false;
  desc.add_options()
    ("help,h", "this help")
    ("shards", po::value(&dir), "the fleet's directory (created): scripts, cache, shards, logs, fleet.db")
    ("partition", po::value(&partitions), "GPU partitions, one array job each")
    ("per-partition", po::value(&per)->default_value(per), "GPU tasks (nodes) per partition, or all")
    ("constraint", po::value(&constraint), "sbatch --constraint of the GPU tasks")
    ("sbatch", po::value(&sbatch), "more sbatch options for every job, e.g. \"--account=A --time=8:00:00\"")
    ("cpu-partition", po::value(&cpu_partition), "the compile array's and the merge's (default: the first)")
    ("archs", po::value(&archs), "the compile array's targets, e.g. sm_80,sm_90 (default: the partitions' GPUs)")
    ("binary", po::value(&binary), "the reduce-tune the jobs run (default: this one; on a shared file system)")
    ("group-write", po::bool_switch(&group_write), "let the group write the fleet's directory")
    ("local", po::bool_switch(&local), "run the steps here, one after another, without Slurm");
  po::variables_map vm;
  const auto parsed = po::command_line_parser(args).options(desc).allow_unregistered().run();
  po::store(parsed, vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kFleetUsage << "\n" << desc << "\n";
    return 0;
  }
  const std::vector<std::string> tune_args = po::collect_unrecognized(parsed.options, po::include_positional);
  if (dir.empty()) throw Usage("fleet submit needs --shards DIR");
  refuse_fleet_owned(tune_args);
  SweepOptions sweep;
  try {
    sweep = parse_tune(tune_args);
  } catch (const po::error& e) {
    throw Usage(std::string("fleet submit: tune option: ") + e.what());
  }

  Plan p;
  p.dir = fs::absolute(dir).lexically_normal().string();
  while (p.dir.size() > 1 && p.dir.back() == '/') p.dir.pop_back();
  std::error_code ec;
  p.binary = binary.empty() ? fs::read_symlink("/proc/self/exe", ec).string() : fs::absolute(binary).string();
  if (!on_path(p.binary)) throw Usage("fleet submit: --binary " + p.binary + " is not an executable");
  p.constraint = constraint;
  p.sbatch_args = words(sbatch);
  p.tune_args = tune_args;
  p.compile_args = compile_args(sweep);
  p.group_write = group_write;
  p.local = local;
  p.archs = cli::split(archs);
  for (const auto& a : p.archs)
    if (!a.starts_with("sm_") || a.size() < 5 || !std::all_of(a.begin() + 3, a.end(), ::isdigit))
      throw Usage("fleet submit: --archs '" + a + "' is not an architecture like sm_90");

  if (local) {
    if (!partitions.empty()) throw Usage("fleet submit: --local runs without Slurm: no --partition");
    p.partitions = {"local"};
    p.tasks = {1};
    p.gpus = {0};
    if (p.archs.empty()) {
      std::string why;
      if (!cuda::available(&why))
        throw Usage("fleet submit --local: no GPU here to take the architectures from (" + why + "); give --archs");
      std::set<std::string> seen;
      for (int i = 0; i < cuda::device_count(); ++i)
        if (const std::string a = "sm_" + std::to_string(cuda::device_info(i).cc()); seen.insert(a).second)
          p.archs.push_back(a);
    }
  } else {
    p.partitions = cli::split(partitions);
    if (p.partitions.empty()) throw Usage("fleet submit needs --partition P[,P...] (or --local)");
    for (const char* tool : {"sbatch", "sinfo"})
      if (!on_path(tool))
        throw Usage(std::string("fleet submit: ") + tool + " not found on PATH (Slurm's commands are needed; "
                    "--local runs the steps here without Slurm)");
    std::set<std::string> archs_seen(p.archs.begin(), p.archs.end());
    for (const auto& name : p.partitions) {
      const CommandResult r = run_command({"sinfo", "-h", "-p", name, "-o", "%P|%G|%D"}, true);
      const std::optional<Partition> part = r.rc == 0 ? parse_sinfo(name, r.out) : std::nullopt;
      if (!part) throw Usage("fleet submit: Slurm knows no partition '" + name + "' (sinfo -p " + name + ")");
      int tasks = 1;
      if (per == "all") tasks = std::max(1, part->nodes);
      else if (per.empty() || !std::all_of(per.begin(), per.end(), ::isdigit) || (tasks = std::atoi(per.c_str())) < 1)
        throw Usage("fleet submit: --per-partition '" + per + "' is not a positive count or all");
      p.tasks.push_back(tasks);
      p.gpus.push_back(part->gpus_per_node);
      if (archs.empty()) {
        const auto a = arch_of_gpu_type(part->gpu_type);
        if (!a)
          throw Usage("fleet submit: partition '" + name + "': its GPUs' architecture is unknown (GRES '" +
                      part->gres + "'); give --archs, e.g. --archs sm_80,sm_90");
        if (archs_seen.insert(*a).second) p.archs.push_back(*a);
      }
    }
    p.cpu_partition = cpu_partition.empty() ? p.partitions.front() : cpu_partition;
    if (!cpu_partition.empty()) {
      const CommandResult r = run_command({"sinfo", "-h", "-p", cpu_partition, "-o", "%P|%G|%D"}, true);
      if (r.rc != 0 || !parse_sinfo(cpu_partition, r.out))
        throw Usage("fleet submit: Slurm knows no partition '" + cpu_partition + "' (sinfo -p " + cpu_partition + ")");
    }
  }
  if (p.archs.empty()) throw Usage("fleet submit: no architecture to compile for; give --archs");
  try {
    make_layout(p);
  } catch (const std::exception& e) {
    throw Usage(std::string("fleet submit: ") + e.what());
  }

  // The scripts, then the plan; the jobs last, so that a failure submits nothing.
  auto write_script = [&](const std::string& name, const std::string& text) {
    const fs::path f = fs::path(p.dir) / "scripts" / name;
    {
      std::ofstream out(f, std::ios::trunc);
      out << text;
      if (!out.flush()) throw std::runtime_error("cannot write " + f.string());
    }
    fs::permissions(f, fs::perms(0755));
    return f.string();
  };
  const std::string compile_sh = write_script("compile.sh", compile_script(p));
  std::vector<std::string> tune_sh;
  for (std::size_t i = 0; i < p.partitions.size(); ++i)
    tune_sh.push_back(write_script("tune-" + p.partitions[i] + ".sh", tune_script(p, i)));
  const std::string merge_sh = write_script("merge.sh", merge_script(p));
  p.submitted = now_iso();
  save(p);
  if (local) return run_local(p);

  std::vector<std::string> submitted;
  auto submit = [&](std::vector<std::string> argv, const std::string& script) {
    argv.insert(argv.begin(), {"sbatch", "--parsable"});
    argv.insert(argv.end(), p.sbatch_args.begin(), p.sbatch_args.end());
    argv.push_back(script);
    const CommandResult r = run_command(argv);
    const std::string id = sbatch_id(r.out);
    if (r.rc != 0 || id.empty()) {
      if (!submitted.empty()) {
        std::vector<std::string> cancel = {"scancel"};
        cancel.insert(cancel.end(), submitted.begin(), submitted.end());
        run_command(cancel);
      }
      throw std::runtime_error("fleet submit: sbatch " + script + " failed (exit " + std::to_string(r.rc) + ")" +
                               (submitted.empty() ? "" : "; the jobs submitted before it were cancelled"));
    }
    submitted.push_back(id);
    return id;
  };
  const std::string logs = p.dir + "/logs/";
  p.compile_job = submit({"--job-name=rt-compile", "--partition=" + p.cpu_partition,
                          "--array=0-" + std::to_string(p.archs.size() - 1), "--output=" + logs + "compile-%A_%a.out"},
                         compile_sh);
  for (std::size_t i = 0; i < p.partitions.size(); ++i) {
    std::vector<std::string> a = {"--job-name=rt-tune-" + p.partitions[i], "--partition=" + p.partitions[i],
                                  "--array=0-" + std::to_string(p.tasks[i] - 1), "--requeue", "--exclusive",
                                  "--dependency=afterany:" + p.compile_job,
                                  "--output=" + logs + "tune-" + p.partitions[i] + "-%A_%a.out"};
    if (p.gpus[i] > 0) a.push_back("--gres=gpu:" + std::to_string(p.gpus[i]));
    if (!p.constraint.empty()) a.push_back("--constraint=" + p.constraint);
    p.tune_jobs.push_back(submit(a, tune_sh[i]));
  }
  std::string after = "afterany";
  for (const auto& j : p.tune_jobs) after += ":" + j;
  p.merge_job = submit({"--job-name=rt-merge", "--partition=" + p.cpu_partition, "--requeue",
                        "--dependency=" + after, "--output=" + logs + "merge-%j.out"},
                       merge_sh);
  save(p);
  std::string archs_text;
  for (const auto& a : p.archs) archs_text += " " + a;
  std::printf("compile job %s: array over%s (partition %s)\n", p.compile_job.c_str(), archs_text.c_str(),
              p.cpu_partition.c_str());
  for (std::size_t i = 0; i < p.partitions.size(); ++i)
    std::printf("tune job %s: partition %s, %d task(s) into %s/shards/%s-N.db\n", p.tune_jobs[i].c_str(),
                p.partitions[i].c_str(), p.tasks[i], p.dir.c_str(), p.partitions[i].c_str());
  std::printf("merge job %s: after them, into %s/fleet.db and %s/tuning.db\n", p.merge_job.c_str(), p.dir.c_str(),
              p.dir.c_str());
  std::printf("progress: reduce-tune fleet status %s\n", p.dir.c_str());
  return 0;
}

// ---- status -------------------------------------------------------------------------------

/// Slurm's view of the fleet's jobs: job id (or id_index) -> state, from squeue, then sacct.
struct SlurmView {
  std::map<std::string, std::string> live, done;
  bool queried = false;

  void load(const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    std::string list;
    for (const auto& i : ids) list += (list.empty() ? "" : ",") + i;
    if (on_path("squeue")) {
      queried = true;
      const CommandResult r = run_command({"squeue", "-h", "-j", list, "-o", "%i|%T|%r"}, true);
      std::istringstream in(r.out);
      for (std::string line; std::getline(in, line);) {
        const auto a = line.find('|'), b = line.rfind('|');
        if (a == std::string::npos) continue;
        std::string reason = line.substr(b + 1);
        std::string state = line.substr(a + 1, b - a - 1);
        if (!reason.empty() && reason != "None" && state == "PENDING") state += " (" + reason + ")";
        live[line.substr(0, a)] = state;
      }
    }
    if (on_path("sacct")) {
      queried = true;
      const CommandResult r = run_command({"sacct", "-n", "-P", "-X", "-j", list, "-o", "JobID,State,ExitCode"}, true);
      std::istringstream in(r.out);
      for (std::string line; r.rc == 0 && std::getline(in, line);) {
        const auto a = line.find('|'), b = line.rfind('|');
        if (a == std::string::npos) continue;
        done[line.substr(0, a)] = line.substr(a + 1, b - a - 1) + " (exit " + line.substr(b + 1) + ")";
      }
    }
  }

  /// The state of job `id`'s array task `index` (-1: not an array), or "".
  std::string state(const std::string& id, int index) const {
    if (id.empty()) return "";
    const std::string key = index < 0 ? id : id + "_" + std::to_string(index);
    if (auto it = live.find(key); it != live.end()) return it->second;
    if (index >= 0)
      for (const auto& [k, v] : live) // a pending array: "12_[0-3]"
        if (k.starts_with(id + "_[")) return v;
    if (auto it = done.find(key); it != done.end()) return it->second;
    return "";
  }
};

/// A step: Slurm's state where it knows it, then what the step's own state file says.
std::string describe(const StepState& s, const std::string& slurm) {
  std::string text = slurm.empty() ? (s.state.empty() ? "not started" : s.state) : slurm;
  if (s.state == "failed")
    text += (slurm.empty() ? "" : "; the step failed") + std::string(" (exit ") + std::to_string(s.exit) + ")" +
            (s.error.empty() ? "" : ": " + s.error);
  else if (s.state == "done" && !slurm.empty())
    text += "; the step is done";
  if (!s.host.empty()) text += " [" + s.host + " " + s.time + "]";
  return text;
}

std::string store_summary(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "no store yet";
  try {
    db::Store store(path, db::Store::Mode::read_only);
    std::size_t n = 0, failed = 0;
    const auto devices = store.devices();
    for (const auto& d : devices)
      for (const auto& m : store.measurements(d.uuid)) {
        ++n;
        failed += !m.valid;
      }
    return std::to_string(n) + " measurements of " + std::to_string(devices.size()) + " GPU(s), " +
           std::to_string(failed) + " failed";
  } catch (const std::exception& e) {
    return std::string("unreadable: ") + e.what();
  }
}

int fleet_status(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].starts_with("-")) throw Usage("usage: reduce-tune fleet status DIR");
  Plan p;
  try {
    p = load(args[0]);
  } catch (const std::exception& e) {
    throw Usage(std::string("fleet status: ") + e.what());
  }
  SlurmView slurm;
  if (!p.local) {
    std::vector<std::string> ids = {p.compile_job, p.merge_job};
    ids.insert(ids.end(), p.tune_jobs.begin(), p.tune_jobs.end());
    ids.erase(std::remove(ids.begin(), ids.end(), std::string()), ids.end());
    slurm.load(ids);
  }
  std::printf("fleet %s: %s %s%s\n", p.dir.c_str(), p.local ? "run here" : "submitted", p.submitted.c_str(),
              p.local || slurm.queried ? "" : " (no squeue or sacct here: the steps' own state files only)");
  std::printf("compile%s\n", p.compile_job.empty() ? "" : (" job " + p.compile_job).c_str());
  for (std::size_t i = 0; i < p.archs.size(); ++i)
    std::printf("  %-14s %s\n", p.archs[i].c_str(),
                describe(read_state(p.dir, "compile-" + p.archs[i]), slurm.state(p.compile_job, int(i))).c_str());
  std::size_t failed = 0;
  for (std::size_t i = 0; i < p.partitions.size(); ++i) {
    const std::string job = i < p.tune_jobs.size() ? p.tune_jobs[i] : "";
    std::printf("tune %s%s\n", p.partitions[i].c_str(), job.empty() ? "" : (", job " + job).c_str());
    for (int t = 0; t < p.tasks[i]; ++t) {
      const std::string task = task_name(p.partitions[i], t);
      const StepState st = read_state(p.dir, "tune-" + task);
      failed += st.state == "failed";
      std::printf("  %-14s %s\n", task.c_str(), describe(st, slurm.state(job, t)).c_str());
      const std::string shard = p.dir + "/shards/" + task;
      for (const GpuProgress& g : read_progress(shard + ".progress"))
        std::printf("  %-14s GPU %d %s: %zu of %zu points %s\n", "", g.ordinal, g.name.c_str(), g.done, g.total,
                    g.phase.c_str());
      std::printf("  %-14s shard %s.db: %s\n", "", shard.c_str(), store_summary(shard + ".db").c_str());
    }
  }
  const StepState merge = read_state(p.dir, "merge");
  std::printf("merge%s\n  %-14s %s\n", p.merge_job.empty() ? "" : (" job " + p.merge_job).c_str(), "fleet.db",
              describe(merge, slurm.state(p.merge_job, -1)).c_str());
  std::printf("  %-14s %s\n", "", store_summary(p.dir + "/fleet.db").c_str());
  if (merge.state == "done") std::printf("  %-14s %s/tuning.db (REDUCE_TUNE_SHIPPED_DB)\n", "shipped", p.dir.c_str());
  if (failed) std::printf("%zu tuning task(s) failed\n", failed);
  return 0;
}

// ---- merge --------------------------------------------------------------------------------

int fleet_merge(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].starts_with("-")) throw Usage("usage: reduce-tune fleet merge DIR");
  Plan p;
  try {
    p = load(args[0]);
  } catch (const std::exception& e) {
    throw Usage(std::string("fleet merge: ") + e.what());
  }
  const fs::path dir = p.dir, shards = dir / "shards";
  for (const fs::path& d : {dir, shards})
    if (auto why = untrusted_dir(d.string(), p.group_write)) throw std::runtime_error("fleet merge: " + *why);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(shards))
    if (e.is_regular_file() && e.path().extension() == ".db") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("fleet merge: no shard store in " + shards.string());
  const std::string out = (dir / "fleet.db").string();
  db::Store store(out);
  std::size_t bad = 0;
  for (const fs::path& f : files) {
    try {
      const db::MergeStats s = store.merge_from(f.string());
      std::printf("merged %s: %zu new measurements (%zu already there), %zu new runs, %zu new GPUs\n",
                  f.filename().c_str(), s.measurements, s.duplicates, s.runs, s.devices);
    } catch (const std::exception& e) {
      ++bad;
      std::fprintf(stderr, "reduce-tune: fleet merge: %s\n", e.what());
    }
    std::fflush(stdout);
  }
  const db::ShipStats s = db::write_shipped(out, (dir / "tuning.db").string());
  std::printf("%s: %zu GPU models, %zu best rows, %zu measurements kept (from %s)\n", (dir / "tuning.db").c_str(),
              s.models, s.best, s.measurements, out.c_str());
  if (bad) throw std::runtime_error("fleet merge: " + std::to_string(bad) + " shard store(s) could not be merged");
  return 0;
}

} // namespace

int cmd_fleet(const std::vector<std::string>& args, const TuneParser& parse_tune) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kFleetUsage;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "submit") return fleet_submit(rest, parse_tune);
  if (args[0] == "status") return fleet_status(rest);
  if (args[0] == "merge") return fleet_merge(rest);
  throw Usage("unknown fleet command '" + args[0] + "' (submit, status or merge)");
}

int cmd_ship(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune ship options: the shipped-tuning form of a store");
  std::string db_path, out;
  int keep = 8;
  double supersede = -1;
  desc.add_options()
    ("help,h", "this help")
    ("db", po::value(&db_path), "the store (default $REDUCE_TUNE_DB or the XDG data dir)")
    ("out", po::value(&out), "the file to write (replaced)")
    ("keep", po::value(&keep)->default_value(keep), "the fastest configurations kept per GPU model and point")
    ("supersede", po::value(&supersede), "PERCENT: a point's best is chosen run by run in the order "
     "they started, a later run's fastest replacing the choice before it where that run measured "
     "the choice more than PERCENT slower than its own fastest (default: the fastest of any run)");
  auto vm = cli::parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  if (out.empty()) throw Usage("ship needs --out FILE");
  if (keep < 1) throw Usage("--keep must be at least 1");
  if (vm.count("supersede") && !(supersede >= 0 && supersede < 100))
    throw Usage("--supersede takes a percentage from 0 to below 100");
  const std::string from = db_path.empty() ? db::default_store_path() : db_path;
  const db::ShipStats s = db::write_shipped(from, out, keep, vm.count("supersede") ? supersede / 100 : -1);
  std::printf("%s: %zu GPU models, %zu runs, %zu measurements, %zu best rows (from %s)\n", out.c_str(), s.models,
              s.runs, s.measurements, s.best, from.c_str());
  return 0;
}

} // namespace reduce_tune
