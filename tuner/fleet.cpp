// reduce-tune fleet: the plan, its directory and batch scripts, the state and progress files.
#include "tuner/fleet.h"

#include "kernels/catalogue.h"
#include "kernels/trust.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace reduce_tune::fleet {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string quoted_words(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += " " + shell_quote(w);
  return s;
}

void write_atomically(const fs::path& path, const std::string& text, fs::perms mode) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::permissions(tmp, mode);
  fs::rename(tmp, path);
}

std::map<std::string, std::vector<std::string>> read_keys(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::map<std::string, std::vector<std::string>> kv;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)].push_back(line.substr(eq + 1));
  }
  return kv;
}

// The shell functions every script shares: the step's state file and its standard error.
constexpr const char* kStepFunctions = R"sh(job=${SLURM_JOB_ID:-local}
[ -n "${SLURM_ARRAY_JOB_ID:-}" ] && job=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}
# put_state STEP STATE [EXIT [ERROR]]: state/STEP, replaced whole.
put_state() {
  local f="$dir/state/$1"
  printf 'state=%s\ntime=%s\njob=%s\nhost=%s\nexit=%s\nerror=%s\n' "$2" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$job" "$(hostname)" "${3:-0}" "${4:-}" > "$f.tmp.$$" && mv -f "$f.tmp.$$" "$f"
}
# run_step STEP COMMAND...: runs it, its standard error kept in logs/STEP.err too, its state recorded.
run_step() {
  local step=$1 rc
  shift
  put_state "$step" running
  { "$@" 2>&1 1>&3 3>&- | tee "$dir/logs/$step.err" >&2; rc=${PIPESTATUS[0]}; } 3>&1
  if [ "$rc" -eq 0 ]; then
    put_state "$step" done
  else
    put_state "$step" failed "$rc" "$(grep -v '^[[:space:]]*$' "$dir/logs/$step.err" | tail -n 1 | tr -d '\r')"
  fi
  return "$rc"
}
)sh";

std::string header(const Plan& p, const std::string& what) {
  return "#!/usr/bin/env bash\n# reduce-tune fleet: " + what +
         "\n# Written by `reduce-tune fleet submit`; run by Slurm, or in turn by its --local.\nset -u\numask " +
         (p.group_write ? "0002" : "0022") + "\ndir=" + shell_quote(p.dir) + "\nbin=" + shell_quote(p.binary) +
         "\nindex=${SLURM_ARRAY_TASK_ID:-0}\n" + kStepFunctions;
}

} // namespace

std::optional<std::string> arch_of_gpu_type(const std::string& type) {
  static const std::map<std::string, std::string> kArch = {
      {"p100", "sm_60"},  {"p40", "sm_61"},     {"p4", "sm_61"},      {"v100", "sm_70"},    {"v100s", "sm_70"},
      {"t4", "sm_75"},    {"a100", "sm_80"},    {"a800", "sm_80"},    {"a30", "sm_80"},     {"a10", "sm_86"},
      {"a16", "sm_86"},   {"a2", "sm_86"},      {"a40", "sm_86"},     {"a4000", "sm_86"},   {"a5000", "sm_86"},
      {"a6000", "sm_86"}, {"l4", "sm_89"},      {"l40", "sm_89"},     {"l40s", "sm_89"},    {"l20", "sm_89"},
      {"h100", "sm_90"},  {"h200", "sm_90"},    {"h800", "sm_90"},    {"gh200", "sm_90"},   {"h20", "sm_90"},
      {"b200", "sm_100"}, {"gb200", "sm_100"},
  };
  // "nvidia_h100_80gb_hbm3", "a100-sxm4-80gb", "tesla_v100": the model is one of the words.
  std::string lower;
  for (char c : type) lower += char(std::tolower(static_cast<unsigned char>(c)));
  std::string word;
  for (std::size_t i = 0; i <= lower.size(); ++i) {
    if (i < lower.size() && std::isalnum(static_cast<unsigned char>(lower[i]))) {
      word += lower[i];
      continue;
    }
    if (const auto it = kArch.find(word); it != kArch.end()) return it->second;
    word.clear();
  }
  return std::nullopt;
}

std::optional<Partition> parse_sinfo(const std::string& name, const std::string& output) {
  Partition p;
  p.name = name;
  bool any = false;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    const auto f = split_on(line, '|');
    if (f.size() < 3) continue;
    std::string part = f[0];
    if (!part.empty() && part.back() == '*') part.pop_back(); // the default partition
    if (part != name) continue;
    any = true;
    p.nodes += all_digits(f[2]) ? std::atoi(f[2].c_str()) : 0;
    if (p.gres.empty() || p.gres == "(null)") p.gres = f[1];
    // "gpu:h100:8(S:0-1),shard:..." : the socket lists in parentheses may hold commas.
    std::string gres;
    int depth = 0;
    for (char c : f[1]) {
      depth += c == '(';
      if (depth == 0) gres += c;
      depth -= c == ')' && depth > 0;
    }
    for (const auto& entry : split_on(gres, ',')) {
      const auto parts = split_on(entry, ':');
      if (parts.empty() || parts[0] != "gpu") continue;
      std::string type;
      int count = 0;
      if (parts.size() >= 2 && all_digits(parts.back())) count = std::atoi(parts.back().c_str());
      if (parts.size() >= 3 || (parts.size() == 2 && !all_digits(parts[1]))) type = parts[1];
      if (p.gpu_type.empty()) p.gpu_type = type;
      if (p.gpus_per_node == 0 || (count && count < p.gpus_per_node)) p.gpus_per_node = count;
    }
  }
  if (!any) return std::nullopt;
  return p;
}

std::string task_name(const std::string& partition, int index) { return partition + "-" + std::to_string(index); }

std::vector<std::string> compile_args(const SweepOptions& o) {
  std::vector<std::string> dtypes, ops;
  for (DType d : o.dtypes) dtypes.emplace_back(name(d));
  for (Op op : o.ops) ops.emplace_back(name(op));
  std::vector<std::string> out = {"--problem", std::string(name(o.problem)), "--dtypes", join(dtypes, ","),
                                  "--ops", join(ops, ",")};
  // Exact keys select their variants; compile takes variants.
  std::vector<std::string> variants = o.variants;
  for (const auto& k : o.keys)
    if (auto c = parse_key(k); c && std::find(variants.begin(), variants.end(), c->variant) == variants.end())
      variants.push_back(c->variant);
  if (!variants.empty()) out.insert(out.end(), {"--variants", join(variants, ",")});
  if (o.allow_unsafe) out.push_back("--unsafe-tails");
  if (!o.nvrtc_path.empty()) out.insert(out.end(), {"--nvrtc", o.nvrtc_path});
  return out;
}

void save(const Plan& p) {
  std::ostringstream o;
  o << "# reduce-tune fleet: what was submitted (read by reduce-tune fleet status)\n";
  o << "dir=" << p.dir << "\nbinary=" << p.binary << "\ncpu_partition=" << p.cpu_partition
    << "\nconstraint=" << p.constraint << "\ngroup_write=" << p.group_write << "\nlocal=" << p.local
    << "\nsubmitted=" << p.submitted << "\ncompile_job=" << p.compile_job << "\nmerge_job=" << p.merge_job << "\n";
  for (std::size_t i = 0; i < p.partitions.size(); ++i)
    o << "partition=" << p.partitions[i] << " " << p.tasks[i] << " " << p.gpus[i] << " "
      << (i < p.tune_jobs.size() ? p.tune_jobs[i] : "") << "\n";
  for (const auto& a : p.archs) o << "arch=" << a << "\n";
  for (const auto& a : p.sbatch_args) o << "sbatch_arg=" << a << "\n";
  for (const auto& a : p.tune_args) o << "tune_arg=" << a << "\n";
  for (const auto& a : p.compile_args) o << "compile_arg=" << a << "\n";
  write_atomically(fs::path(p.dir) / "fleet.conf", o.str(),
                   p.group_write ? fs::perms(0664) : fs::perms(0644));
}

Plan load(const std::string& dir) {
  const fs::path file = fs::path(dir) / "fleet.conf";
  if (!fs::is_regular_file(file)) throw std::runtime_error(file.string() + ": no such file (not a fleet directory?)");
  auto kv = read_keys(file);
  auto one = [&](const char* k) { return kv[k].empty() ? std::string() : kv[k].front(); };
  Plan p;
  p.dir = one("dir");
  p.binary = one("binary");
  p.cpu_partition = one("cpu_partition");
  p.constraint = one("constraint");
  p.group_write = one("group_write") == "1";
  p.local = one("local") == "1";
  p.submitted = one("submitted");
  p.compile_job = one("compile_job");
  p.merge_job = one("merge_job");
  p.archs = kv["arch"];
  p.sbatch_args = kv["sbatch_arg"];
  p.tune_args = kv["tune_arg"];
  p.compile_args = kv["compile_arg"];
  for (const auto& line : kv["partition"]) {
    std::istringstream in(line);
    std::string name, job;
    int tasks = 0, gpus = 0;
    if (!(in >> name >> tasks >> gpus)) throw std::runtime_error(file.string() + ": bad line partition=" + line);
    in >> job;
    p.partitions.push_back(name);
    p.tasks.push_back(tasks);
    p.gpus.push_back(gpus);
    p.tune_jobs.push_back(job);
  }
  if (p.dir.empty() || p.partitions.empty()) throw std::runtime_error(file.string() + ": incomplete");
  return p;
}

std::string shell_quote(const std::string& w) {
  std::string s = "'";
  for (char c : w) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}

// The compile uses the CPUs the task has: nproc honours the affinity Slurm gives it.
std::string compile_script(const Plan& p) {
  std::string archs;
  for (const auto& a : p.archs) archs += " " + shell_quote(a);
  return header(p, "compiles the sweep's kernels for one architecture (array task $index) into the cache.") +
         "archs=(" + archs + " )\narch=${archs[$index]}\n"
         "run_step \"compile-$arch\" \"$bin\" compile --arch \"$arch\" --cache-dir \"$dir/cache\" --quiet "
         "--threads \"$(nproc)\"" +
         quoted_words(p.compile_args) + "\n";
}

std::string tune_script(const Plan& p, std::size_t i) {
  return header(p, "tunes every GPU of its node into its own shard store; requeue-safe (--resume measures "
                   "only what is left).") +
         "task=" + shell_quote(p.partitions[i]) + "-$index\n"
         "run_step \"tune-$task\" \"$bin\" tune --device all --resume --cache-dir \"$dir/cache\" "
         "--db \"$dir/shards/$task.db\" --progress-file \"$dir/shards/$task.progress\"" +
         quoted_words(p.tune_args) + "\n";
}

std::string merge_script(const Plan& p) {
  return header(p, "merges the shard stores into fleet.db and writes its shipped form, tuning.db.") +
         "run_step merge \"$bin\" fleet merge \"$dir\"\n";
}

std::optional<std::string> untrusted_dir(const std::string& dir, bool group_write) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return std::nullopt;
  if (auto why = untrusted_cache_dir(dir)) {
    // The library's wording speaks of a compile cache; the fleet's directories hold stores too.
    if (st.st_mode & S_IWOTH) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
      return dir + " is writable by other users (mode " + mode +
             "): its compile cache and shard stores decide what every user of the fleet's tuning runs; "
             "chmod o-w " + dir;
    }
    return *why;
  }
  if ((st.st_mode & S_IWGRP) && !group_write) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return dir + " is writable by its group (mode " + mode + "); give --group-write to share the fleet with "
           "the group, or chmod g-w " + dir;
  }
  return std::nullopt;
}

void make_layout(const Plan& p) {
  const fs::perms mode = p.group_write ? fs::perms(0775) : fs::perms(0755);
  auto make = [&](const fs::path& d) {
    std::vector<fs::path> missing;
    for (fs::path x = d; !x.empty() && !fs::exists(x); x = x.parent_path()) {
      missing.push_back(x);
      if (x == x.parent_path()) break;
    }
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw std::runtime_error("cannot create " + d.string() + ": " + ec.message());
    for (const fs::path& x : missing) fs::permissions(x, mode);
    if (access(d.c_str(), W_OK) != 0) throw std::runtime_error(d.string() + " is not writable");
  };
  const fs::path dir = p.dir;
  for (const char* sub : {"", "scripts", "cache", "shards", "state", "logs"}) {
    const fs::path d = *sub ? dir / sub : dir;
    make(d);
    if (auto why = untrusted_dir(d.string(), p.group_write)) throw std::runtime_error(*why);
  }
}

StepState read_state(const std::string& dir, const std::string& step) {
  StepState s;
  const fs::path f = fs::path(dir) / "state" / step;
  if (!fs::is_regular_file(f)) return s;
  auto kv = read_keys(f);
  auto one = [&](const char* k) { return kv[k].empty() ? std::string() : kv[k].front(); };
  s.state = one("state");
  s.time = one("time");
  s.job = one("job");
  s.host = one("host");
  s.error = one("error");
  s.exit = std::atoi(one("exit").c_str());
  return s;
}

void write_progress(const std::string& path, const std::vector<GpuProgress>& gpus) {
  std::ostringstream o;
  for (const auto& g : gpus)
    o << "gpu " << g.ordinal << ' ' << g.done << ' ' << g.total << ' ' << (g.phase.empty() ? "-" : g.phase) << ' '
      << (g.uuid.empty() ? "-" : g.uuid) << ' ' << g.name << '\n';
  write_atomically(path, o.str(), fs::perms(0644));
}

std::vector<GpuProgress> read_progress(const std::string& path) {
  std::vector<GpuProgress> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string tag;
    GpuProgress g;
    if (!(l >> tag >> g.ordinal >> g.done >> g.total >> g.phase >> g.uuid) || tag != "gpu") continue;
    std::getline(l >> std::ws, g.name);
    if (g.uuid == "-") g.uuid.clear();
    out.push_back(g);
  }
  return out;
}

CommandResult run_command(const std::vector<std::string>& argv, bool quiet_stderr) {
  CommandResult r;
  int fds[2];
  if (argv.empty() || pipe(fds) != 0) return {127, ""};
  const pid_t pid = fork();
  if (pid < 0) return {127, ""};
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (quiet_stderr) freopen("/dev/null", "w", stderr);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, std::size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

bool on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  for (const auto& d : split_on(path ? path : "/usr/bin:/bin", ':'))
    if (!d.empty() && access((fs::path(d) / program).c_str(), X_OK) == 0) return true;
  return false;
}

} // namespace reduce_tune::fleet
