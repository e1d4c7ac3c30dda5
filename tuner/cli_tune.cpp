// reduce-tune tune and worker: tune's options parsed into a SweepOptions, the sweep measured in
// worker processes (one per GPU, tuner/supervisor.h) or in this process, and its tables and summary
// printed; a worker measures one GPU for the supervisor.
#include "tuner/cli_tune.h"

#include "db/store.h"
#include "kernels/driver.h"
#include "tuner/cli.h"
#include "tuner/cli_catalogue.h"
#include "tuner/cli_reduction.h"
#include "tuner/eta.h"
#include "tuner/fleet.h"
#include "tuner/material.h"
#include "tuner/recorded.h"
#include "tuner/report.h"
#include "tuner/search.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sizes.h"
#include "tuner/supervisor.h"
#include "tuner/sweep.h"
#include "tuner/user_check.h"

#include <boost/program_options.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

namespace po = boost::program_options;

namespace reduce_tune {

namespace {

using cli::Usage;
using cli::check_variants;
using cli::parse;
using cli::parse_format;
using cli::parse_list;
using cli::parse_shapes;
using cli::problem_option;
using cli::split;

std::vector<int> parse_ints(const std::string& text, const char* what) {
  return parse_list<int>(text, [&](const std::string& t) -> std::optional<int> {
    try {
      std::size_t pos = 0;
      const int v = std::stoi(t, &pos);
      if (pos == t.size()) return v;
    } catch (const std::exception&) {
    }
    throw Usage(std::string(what) + " '" + t + "' is not an integer");
  }, what);
}

// The options of tune and worker, parsed into a SweepOptions.
struct TuneCommand {
  SweepOptions sweep;
  std::vector<int> devices;
  std::string material;
  Format format = Format::md;
  double timeout_s = 60;
  bool in_process = false;
  std::string progress_file;           // each GPU's points done of planned, for fleet status
  std::vector<std::string> sweep_args; // the arguments that define the sweep, for workers
  std::vector<std::string> asked_keys; // --keys as given (sweep.keys adds --material's own)
  bool recorded = false;               // tune the recorded call points (tuner/recorded.h)
  bool search_given = false;
  bool help = false;
};

TuneCommand parse_tune(const std::vector<std::string>& args, bool worker) {
  po::options_description desc(worker ? "reduce-tune worker options" : "reduce-tune [tune] options");
  std::string device = "0", dtypes = "int32,float32", ops = "sum", sizes, vars, blocks, unrolls,
              tails, finishes, keys, format = "md", problem = "array", shapes, search = "exhaustive", budget,
              reduction, check_data;
  double deadline_ms = 0;
  TuneCommand t;
  SweepOptions& o = t.sweep;
  desc.add_options()
    ("help,h", "this help")
    ("device", po::value(&device)->default_value(device), "GPU ordinals: 0, 0,1 or all")
    ("dtypes", po::value(&dtypes)->default_value(dtypes), "int32,uint32,int64,float32,float64,bfloat16,float16")
    ("ops", po::value(&ops)->default_value(ops),
     "sum,min,max,mean,sumsq,norm1,norm2,count_nonzero,any,all,argmax,argmin,logsumexp,var,std,"
     "var_population,std_population,dot (norm1, norm2, logsumexp: float dtypes; dot: a second "
     "random input)")
    ("sizes", po::value(&sizes), "sizes, e.g. 2^20,16M,3*2^22+5 (default 2^10,2^12,...,2^28)")
    ("problem", po::value(&problem)->default_value(problem),
     "array (one result), rows, columns (one per row/column of a matrix) or segments (offsets)")
    ("shapes", po::value(&shapes), "segmented shapes: ROWSxCOLS for rows and columns, "
                                   "SEGMENTSxMEAN for segments (default: the grid of docs/CLI.md)")
    ("variants", po::value(&vars), "catalogue names (default: all)")
    ("block-sizes", po::value(&blocks), "e.g. 128,256,512")
    ("unroll", po::value(&unrolls), "e.g. 2,4,8")
    ("tails", po::value(&tails), "none,volatile,syncwarp,shfl,redux")
    ("finishes", po::value(&finishes), "host,atomic,twopass,lastblock,firstblock (array); direct,atomic (segmented)")
    ("keys", po::value(&keys), "exact configuration keys (overrides the filters)")
    ("reduction", po::value(&reduction), "a user reduction's file (reduce-tune reduction FILE's format) to "
                                         "tune in place of --ops; stored under its name, user:<hash>")
    ("check-data", po::value(&check_data), "with --reduction: a directory of inputs and expected results per point "
                                           "(.npy files and index.txt, docs/CLI.md) to measure on and check "
                                           "against; its points are the sweep's")
    ("material", po::value(&t.material), "measure the kernels of one document of the material (e.g. 000, 004) "
                                         "at their own configurations and print its table in its order")
    ("search", po::value(&search)->default_value(search),
     "exhaustive (every valid configuration), guided or random (within --budget)")
    ("budget", po::value(&budget), "guided and random: measurements a point (e.g. 40), or the run's share of "
                                   "all its points' configurations (e.g. 5%; the default)")
    ("deadline-ms", po::value(&deadline_ms), "guided and random: milliseconds from the start of the measuring "
                                             "process after which a point's search starts no new measurement once "
                                             "it holds 3, one valid (first-use tuning's budget); each configuration "
                                             "is compiled when measured")
    ("recorded", po::bool_switch(&t.recorded), "tune the call points programs recorded on the GPU "
                                               "(REDUCE_TUNE_RECORD=1), guided unless --search says otherwise")
    ("reps", po::value(&o.reps)->default_value(o.reps), "timed repetitions (median)")
    ("hot", po::bool_switch(&o.hot), "do not flush L2 before each repetition")
    ("profile", po::bool_switch(&o.profile), "print where each GPU's time went, phase by phase "
                                             "(setup, compile, seeds, input, reference, load, check, timing, "
                                             "store, input check)")
    ("unsafe-tails", po::bool_switch(&o.allow_unsafe), "admit the volatile tail on sm_70+ (study)")
    ("every-twin", po::bool_switch(&o.every_twin), "exhaustive segmented sweeps: measure every "
     "evict-first twin (default: the twins of each point's six fastest plain configurations)")
    ("resume", po::bool_switch(&o.resume), "skip points already stored for this GPU (any earlier run)")
    ("seed", po::value(&o.seed)->default_value(o.seed), "random data seed")
    ("db", po::value(&o.db_path), "tuning database (default $REDUCE_TUNE_DB or the XDG data dir)")
    ("nvrtc", po::value(&o.nvrtc_path), "NVRTC library to compile with")
    ("cache-dir", po::value(&o.cache_dir), "compile cache directory")
    ("format", po::value(&format)->default_value(format), "md, csv or json")
    ("timeout", po::value(&t.timeout_s)->default_value(t.timeout_s), "seconds one configuration may take")
    ("in-process", po::bool_switch(&t.in_process), "measure in this process (no fault isolation; one GPU)")
    ("progress-file", po::value(&t.progress_file), "keep each GPU's points done of planned in this file "
                                                   "(reduce-tune fleet status reads it)");
  if (worker) desc.add_options()("run-id", po::value(&o.run_id)->required(), "the run to continue");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) {
    t.help = true;
    return t;
  }
  // Workers get every argument but the ones the supervisor sets per worker.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--device" || args[i] == "--format" || args[i] == "--timeout" || args[i] == "--progress-file") {
      ++i;
      continue;
    }
    if (args[i].starts_with("--device=") || args[i].starts_with("--format=") ||
        args[i].starts_with("--timeout=") || args[i].starts_with("--progress-file=") || args[i] == "--in-process")
      continue;
    t.sweep_args.push_back(args[i]);
  }
  t.format = parse_format(format);
  if (device == "all") {
    std::string why;
    if (!cuda::available(&why)) throw std::runtime_error(why);
    for (int i = 0; i < cuda::device_count(); ++i) t.devices.push_back(i);
  } else {
    for (const auto& d : split(device)) {
      try {
        std::size_t pos = 0;
        const int v = std::stoi(d, &pos);
        if (pos != d.size() || v < 0) throw Usage("");
        t.devices.push_back(v);
      } catch (const std::exception&) {
        throw Usage("--device '" + device + "' is not a GPU ordinal, a list of them, or all");
      }
    }
  }
  if (t.devices.empty()) throw Usage("--device names no GPU");
  o.device = t.devices.front();
  o.dtypes = parse_list<DType>(dtypes, parse_dtype, "dtype");
  o.ops = parse_list<Op>(ops, parse_op, "op");
  if (!reduction.empty()) {
    if (vm.count("ops") && !vm["ops"].defaulted()) throw Usage("--reduction tunes the reduction: it takes no --ops");
    // Without --dtypes: the default dtypes the reduction takes.
    const bool dtypes_given = vm.count("dtypes") && !vm["dtypes"].defaulted();
    o.user = cli::user_reduction(reduction, dtypes_given ? o.dtypes : std::vector<DType>{});
    if (!dtypes_given) std::erase_if(o.dtypes, [&](DType d) { return o.user->unsupported(d).has_value(); });
    if (o.dtypes.empty() && check_data.empty()) // --check-data names its dtypes
      throw Usage("--reduction " + reduction + " takes neither int32 nor float32: give --dtypes");
    o.ops = {Op::sum}; // the reduction's kernels are rendered in sum's place
  }
  if (!sizes.empty()) {
    std::string why;
    auto s = parse_sizes(sizes, &why);
    if (!s) throw Usage(why);
    o.sizes = *s;
  }
  o.problem = problem_option(problem);
  const auto given = [&](const char* option) { return vm.count(option) && !vm[option].defaulted(); };
  if (!check_data.empty()) cli::read_check_data(check_data, given("problem"), o); // its problem, before --shapes
  if (!shapes.empty()) {
    if (o.problem == Problem::array) throw Usage("--shapes is for --problem rows, columns or segments");
    o.shapes = parse_shapes(shapes, o.problem);
  }
  if (!sizes.empty() && o.problem != Problem::array)
    throw Usage("--sizes is for the array problem; --shapes gives segmented shapes");
  if (o.check_data) cli::fit_check_data({given("problem"), given("dtypes"), given("sizes"), given("shapes")}, o);
  o.variants = split(vars);
  check_variants(o.variants, o.problem);
  o.blocks = parse_ints(blocks, "block size");
  for (int b : o.blocks)
    if (b < 32 || b > 1024 || (b & (b - 1)))
      throw Usage("block size " + std::to_string(b) + " is not a power of two in 32..1024");
  o.unrolls = parse_ints(unrolls, "unroll");
  for (int u : o.unrolls)
    if (u != 1 && u != 2 && u != 4 && u != 8)
      throw Usage("unroll " + std::to_string(u) + " is not one of 1, 2, 4, 8");
  o.tails = parse_list<Tail>(tails, parse_tail, "tail");
  o.finishes = parse_list<Finish>(finishes, parse_finish, "finish");
  o.keys = split(keys);
  t.asked_keys = o.keys;
  for (const auto& k : o.keys) {
    std::string why;
    const auto c = parse_key(k, &why);
    if (!c) throw Usage(why);
    check_variants({c->variant}, o.problem);
  }
  if (!t.material.empty() && o.user) throw Usage("--material measures the material's kernels, not a --reduction");
  if (!t.material.empty() && o.problem != Problem::array)
    throw Usage("--material measures the material's array kernels (no --problem)");
  if (!t.material.empty()) {
    for (const auto& k : material_kernels())
      if (k.doc.starts_with(t.material) &&
          std::find(o.keys.begin(), o.keys.end(), std::string(k.key)) == o.keys.end())
        o.keys.emplace_back(k.key);
    if (o.keys.empty()) throw Usage("no document of the material starts with '" + t.material + "'");
    o.allow_unsafe = true; // the material's own volatile tails: measured, checked and reported
  }
  if (t.recorded) {
    if (worker) throw Usage("--recorded is for tune");
    for (const char* own : {"sizes", "shapes", "problem", "dtypes", "ops", "keys", "material", "variants", "reduction",
                            "check-data"})
      if (vm.count(own) && !vm[own].defaulted())
        throw Usage(std::string("--recorded tunes the recorded points: it takes no --") + own);
  }
  t.search_given = vm.count("search") && !vm["search"].defaulted();
  const auto strategy = parse_strategy(search);
  if (!strategy) throw Usage("--search: unknown strategy '" + search + "' (exhaustive, guided or random)");
  o.search = *strategy;
  // --recorded searches guided unless --search says otherwise (tuner/recorded.h), so its budget is
  // judged as the guided search's.
  if (t.recorded && !t.search_given) o.search = Strategy::guided;
  if (o.every_twin && (o.search != Strategy::exhaustive || o.problem == Problem::array))
    throw Usage("--every-twin is for --search exhaustive of a segmented problem (the 1-D sweep measures every twin)");
  if (!budget.empty()) {
    if (o.search == Strategy::exhaustive) throw Usage("--budget is for --search guided or random");
    std::string why;
    const auto b = parse_budget(budget, &why);
    if (!b) throw Usage("--budget '" + budget + "': " + why);
    o.budget = *b;
  } else if (o.search != Strategy::exhaustive) {
    o.budget.percent = 5;
  }
  if (vm.count("deadline-ms")) {
    if (o.search == Strategy::exhaustive) throw Usage("--deadline-ms is for --search guided or random");
    if (!(deadline_ms > 0)) throw Usage("--deadline-ms must be positive");
    // Counted from this parse, in the process that measures (a worker parses its arguments again):
    // the first-use tuning's time budget, which counts its own start too.
    o.deadline_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() +
                   deadline_ms / 1e3;
    o.lazy_compile = true; // a search measures few of the candidates: compile those only
  }
  if (o.reps < 1) throw Usage("--reps must be at least 1");
  if (t.timeout_s <= 0) throw Usage("--timeout must be positive");
  if (t.in_process && t.devices.size() > 1) throw Usage("--in-process measures one GPU");
  return t;
}

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL); // a second Ctrl-C ends the process at once
}

// The measurements of a run to report: this run's, and on --resume the earlier ones it reused.
std::vector<db::Measurement> run_measurements(const SweepOptions& o, const std::string& uuid,
                                              std::int64_t run_id) {
  db::Store store(o.db_path.empty() ? db::default_store_path() : o.db_path);
  db::MeasurementFilter filter;
  if (o.user) filter.op = db::OpKey::user(o.user->hash); // a user reduction's rows are read by name
  std::vector<db::Measurement> all = store.measurements(uuid, filter), out;
  std::map<std::tuple<std::string, DType, Op, std::uint64_t, std::uint64_t>, std::size_t> latest;
  const bool array = o.problem == Problem::array;
  const auto sizes = o.sizes.empty() ? default_sizes() : o.sizes;
  const auto shapes = o.shapes.empty() && !array ? default_shapes(o.problem) : o.shapes;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& m = all[i];
    if (m.run_id != run_id && !o.resume) continue;
    if (m.problem != o.problem) continue;
    if (array ? std::find(sizes.begin(), sizes.end(), m.n) == sizes.end()
              : std::find(shapes.begin(), shapes.end(), m.shape()) == shapes.end())
      continue;
    if (std::find(o.dtypes.begin(), o.dtypes.end(), m.dtype) == o.dtypes.end()) continue;
    latest[{m.key, m.dtype, m.op, m.count, m.n}] = i; // oldest first: the last one wins
  }
  for (const auto& [k, i] : latest) out.push_back(all[i]);
  return out;
}

} // namespace

SweepOptions tune_sweep(const std::vector<std::string>& args) { return parse_tune(args, false).sweep; }

int cmd_worker(const std::vector<std::string>& args, const std::string& cmdline) {
  TuneCommand t = parse_tune(args, true);
  if (t.help) return 0;
  t.sweep.command_line = cmdline;
  std::signal(SIGINT, on_sigint);
  try {
    const SweepResult r = sweep(t.sweep, [](const Progress& p) {
      if (p.phase == "compile") return;
      std::fputs(progress_line(p).c_str(), stdout);
      std::fflush(stdout);
    }, [] { return g_stop.load(); });
    if (t.sweep.profile)
      std::fprintf(stderr, "\nGPU %d %s", t.sweep.device, profile_text(r.times).c_str());
    return r.interrupted ? 130 : 0;
  } catch (const cuda::CudaError& e) {
    std::fprintf(stderr, "reduce-tune worker (GPU %d): %s\n", t.sweep.device, e.what());
    return kWorkerCudaFault;
  }
}

int cmd_tune(const std::vector<std::string>& args, const std::string& cmdline) {
  TuneCommand t = parse_tune(args, false);
  if (t.help) return 0;
  if (t.recorded)
    return tune_recorded(args, t.devices, t.sweep.db_path, t.search_given,
                         [&](const std::vector<std::string>& a) { return cmd_tune(a, cmdline); });
  t.sweep.command_line = cmdline;
  if (t.sweep.user && !t.sweep.user->description.check && !t.sweep.check_data)
    std::fprintf(stderr, "reduce-tune: %s has no CPU evaluation: its results are NOT checked (each measurement "
                         "records \"%s\")\n", t.sweep.user->name.c_str(), kNotChecked);
  // Refuse what cannot fit before compiling or allocating anything.
  for (int d : t.devices) {
    const auto info = cuda::device_info(d);
    if (auto why = too_large(t.sweep, info.total_mem))
      throw Usage("GPU " + std::to_string(d) + " (" + info.name + "): " + *why);
    // Only the keys asked for: the material's documents include kernels that some dtypes cannot
    // run (an in-place float16 sum), skipped as any sweep skips its invalid points.
    SweepOptions asked = t.sweep;
    asked.keys = t.asked_keys;
    if (auto why = refused_key(asked, info.cc(), info.max_threads_per_block, info.sm_count))
      throw Usage("GPU " + std::to_string(d) + " (" + info.name + ", sm_" + std::to_string(info.cc()) +
                  "): " + *why);
  }
  std::signal(SIGINT, on_sigint);
  const bool tty = isatty(STDERR_FILENO);

  struct Shown { db::DeviceRecord device; std::int64_t run_id; std::string status; double wall_s;
                 int restarts; std::vector<std::string> incidents; };
  // --progress-file: rewritten every few seconds while measuring, and with each run's end.
  std::map<int, fleet::GpuProgress> progress_of;
  auto last_written = std::chrono::steady_clock::now() - std::chrono::hours(1);
  auto note_progress = [&](int ordinal, const Progress& p, bool force) {
    if (t.progress_file.empty()) return;
    fleet::GpuProgress& g = progress_of[ordinal];
    g.ordinal = ordinal, g.done = p.done, g.total = p.total;
    g.phase = p.phase == "compile" ? "compile" : "measure";
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_written < std::chrono::seconds(2)) return;
    last_written = now;
    std::vector<fleet::GpuProgress> all;
    for (const auto& [o, x] : progress_of) all.push_back(x);
    fleet::write_progress(t.progress_file, all);
  };
  auto end_progress = [&](int ordinal, const db::DeviceRecord& d, const std::string& status, std::size_t done,
                          std::size_t total) {
    if (t.progress_file.empty()) return;
    fleet::GpuProgress& g = progress_of[ordinal];
    g.ordinal = ordinal, g.phase = status, g.name = d.name, g.uuid = d.uuid;
    if (total) g.done = done, g.total = total;
    std::vector<fleet::GpuProgress> all;
    for (const auto& [o, x] : progress_of) all.push_back(x);
    fleet::write_progress(t.progress_file, all);
  };
  std::vector<Shown> shown;
  const auto t0 = std::chrono::steady_clock::now();
  if (t.in_process) {
    double last = -10;
    const SweepResult r = sweep(t.sweep, [&](const Progress& p) {
      note_progress(t.sweep.device, p, false);
      if (p.phase == "stored" || (!tty && p.elapsed_s - last < 5 && p.done != p.total)) return;
      last = p.elapsed_s;
      std::fprintf(stderr, "%s[%s] %zu/%zu %s %s  elapsed %s eta %s%s", tty ? "\r\033[K" : "",
                   p.phase.c_str(), p.done, p.total, p.key.c_str(), p.key.empty() ? "" : point_text(p).c_str(),
                   format_eta(p.elapsed_s).c_str(), format_eta(p.eta_s).c_str(),
                   tty ? "" : "\n");
    }, [] { return g_stop.load(); });
    shown.push_back({r.device, r.run_id, r.interrupted ? "interrupted" : "done", r.times.total_s, 0, {}});
    end_progress(t.sweep.device, r.device, shown.back().status, 0, 0);
    std::fprintf(stderr,
                 "%swall time %.1f s: data %.1f s, compile %.1f s (%zu compiled, %zu from cache), "
                 "validation %.1f s, timing %.1f s\n", tty ? "\n" : "",
                 r.times.total_s, r.times.data_s, r.times.compile_s, r.compiled, r.cache_hits,
                 r.times.validate_s, r.times.timing_s);
    if (t.sweep.profile) std::fprintf(stderr, "%s", profile_text(r.times).c_str());
  } else {
    SupervisorOptions so;
    so.worker_exe = "/proc/self/exe";
    so.worker_args = t.sweep_args;
    so.devices = t.devices;
    so.timeout_s = t.timeout_s;
    std::map<int, Progress> latest;
    double last = -10;
    const auto outcomes = supervise(t.sweep, so, [&](int ordinal, const Progress& p) {
      latest[ordinal] = p;
      note_progress(ordinal, p, false);
      if (!tty && p.elapsed_s - last < 5) return;
      last = p.elapsed_s;
      std::string line;
      for (const auto& [gpu, q] : latest) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "[gpu %d %s %zu/%zu eta %s] ", gpu, q.phase == "compile" ? "compile" : "measure",
                      q.done, q.total, format_eta(q.eta_s).c_str());
        line += buf;
      }
      if (latest.size() == 1 && !p.key.empty()) line += p.key + " " + point_text(p);
      std::fprintf(stderr, "%s%s%s", tty ? "\r\033[K" : "", line.c_str(), tty ? "" : "\n");
    }, [] { return g_stop.load(); });
    if (tty) std::fprintf(stderr, "\n");
    for (const auto& d : outcomes) {
      shown.push_back({d.device, d.run_id, d.status, d.wall_s, d.restarts, d.incidents});
      end_progress(d.ordinal, d.device, d.status, d.done, d.total);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  bool any_invalid = false, interrupted = false, failed = false;
  for (const Shown& s : shown) {
    const auto ms = run_measurements(t.sweep, s.device.uuid, s.run_id);
    std::vector<Table> tables;
    if (t.material.empty()) {
      tables = material_tables(ms, s.device.name);
    } else {
      std::set<std::tuple<DType, Op, std::uint64_t>> problems;
      for (const auto& m : ms)
        if (m.problem == Problem::array) problems.insert({m.dtype, m.op, m.n});
      for (const auto& [d, op, n] : problems)
        tables.push_back(material_doc_table(ms, t.material, d, op, n, s.device.name));
    }
    std::cout << format_tables(tables, t.format);
    std::size_t invalid = 0;
    for (const auto& m : ms) invalid += !m.valid;
    any_invalid |= invalid > 0;
    interrupted |= s.status == "interrupted";
    failed |= s.status == "failed";
    std::fprintf(stderr, "\nGPU %s (%s, sm_%d%d, peak %.0f GB/s): run %lld %s in %.1f s, %zu measurements, "
                 "%zu failed the check, %d worker restarts\n",
                 s.device.name.c_str(), s.device.uuid.c_str(), s.device.cc_major, s.device.cc_minor,
                 s.device.peak_gbps, static_cast<long long>(s.run_id), s.status.c_str(), s.wall_s, ms.size(),
                 invalid, s.restarts);
    for (const auto& i : s.incidents) std::fprintf(stderr, "  incident: %s\n", i.c_str());
    for (const auto& m : ms)
      if (!m.valid)
        std::fprintf(stderr, "  FAILED %s %s: %s\n", m.key.c_str(), point_text(m).c_str(), m.error.c_str());
  }
  std::fprintf(stderr, "wall time %.1f s for %zu GPU(s)\n", wall, shown.size());
  if (interrupted) {
    std::fprintf(stderr, "interrupted: completed measurements are stored; run the same command "
                         "with --resume to continue\n");
    return 130;
  }
  return failed || any_invalid ? 1 : 0;
}

} // namespace reduce_tune
