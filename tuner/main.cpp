// reduce-tune: the command line. Parses options into plain structs, calls the library, prints.
// Exit codes: 0 success, 1 runtime failure (no GPU, a failed compile, a store error), 2 usage.
#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"
#include "tuner/cli.h"
#include "tuner/cli_compare.h"
#include "tuner/cli_coverage.h"
#include "tuner/cli_reduction.h"
#include "tuner/cli_fleet.h"
#include "tuner/cli_info.h"
#include "tuner/cli_replay.h"
#include "tuner/autotune_worker.h"
#include "tuner/cubin.h"
#include "tuner/eta.h"
#include "tuner/fleet.h"
#include "tuner/material.h"
#include "tuner/recorded.h"
#include "tuner/report.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sizes.h"
#include "tuner/supervisor.h"
#include "tuner/sweep.h"
#include "tuner/test_variants.h"
#include "tuner/user_check.h"

#include <boost/program_options.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <tuple>
#include <thread>

namespace po = boost::program_options;
using namespace reduce_tune;

namespace {

using cli::Usage;
using cli::parse;
using cli::parse_format;
using cli::split;
using cli::parse_n;
using cli::parse_shapes;
using cli::problem_option;

template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& text, Parse parse, const char* what) {
  std::vector<T> out;
  for (const auto& tok : split(text)) {
    auto v = parse(tok);
    if (!v) throw Usage("unknown " + std::string(what) + " '" + tok + "'");
    out.push_back(*v);
  }
  return out;
}

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


// Every named variant exists and solves `problem`.
void check_variants(const std::vector<std::string>& names, Problem problem) {
  for (const auto& v : names) {
    const Variant* var = find_variant(v);
    if (!var) throw Usage("unknown variant '" + v + "' (see: reduce-tune variants)");
    if (var->problem != problem)
      throw Usage("variant '" + v + "' reduces " + std::string(name(var->problem)) + ", not " +
                  std::string(name(problem)) + " (see: reduce-tune variants --problem " +
                  std::string(name(problem)) + ")");
  }
}

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// ---- tune -------------------------------------------------------------------------------------


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

// A worker: measures on one GPU, reporting each point on stdout for the supervisor.
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

// ---- variants ---------------------------------------------------------------------------------

int cmd_variants(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune variants options");
  std::string arch, dtype = "float32", op = "sum", problem = "array";
  bool material = false, unsafe = false, all = false;
  desc.add_options()
    ("help,h", "this help")
    ("material", po::bool_switch(&material), "the material's kernel names and their keys")
    ("all", po::bool_switch(&all), "every point of the space, with the reason for invalid ones")
    ("arch", po::value(&arch), "check validity for sm_XX (default sm_90)")
    ("dtype", po::value(&dtype)->default_value(dtype), "dtype for validity")
    ("op", po::value(&op)->default_value(op), "op for validity")
    ("problem", po::value(&problem)->default_value(problem), "array, rows, columns or segments")
    ("unsafe-tails", po::bool_switch(&unsafe), "admit the volatile tail on sm_70+");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  if (material) {
    std::printf("%-28s %-36s %s\n", "document", "kernel", "configuration key");
    for (const auto& k : material_kernels())
      std::printf("%-28.*s %-36.*s %.*s%s%.*s\n", int(k.doc.size()), k.doc.data(), int(k.name.size()),
                  k.name.data(), int(k.key.size()), k.key.data(), k.note.empty() ? "" : "  # ",
                  int(k.note.size()), k.note.data());
    return 0;
  }
  Target t;
  auto d = parse_dtype(dtype);
  auto o = parse_op(op);
  if (!d) throw Usage("unknown dtype '" + dtype + "'");
  if (!o) throw Usage("unknown op '" + op + "'");
  t.dtype = *d, t.op = *o, t.allow_unsafe = unsafe, t.problem = problem_option(problem);
  if (!arch.empty()) {
    const auto digits = arch.find_first_of("0123456789");
    try {
      t.cc = std::stoi(arch.substr(digits == std::string::npos ? arch.size() : digits));
    } catch (const std::exception&) {
      throw Usage("'" + arch + "' is not an architecture (expected e.g. sm_90)");
    }
  }
  for (const Variant& v : variants(t.problem)) {
    std::size_t valid = 0;
    std::map<std::string, std::size_t> reasons;
    for (const Config& c : space(v)) {
      auto why = invalid_reason(c, t);
      if (all) std::printf("  %-50s %s\n", key(c).c_str(), why ? ("skipped: " + *why).c_str() : "valid");
      why ? ++reasons[*why] : ++valid;
    }
    std::printf("%-32.*s %4zu valid on sm_%d  %.*s\n", int(v.name.size()), v.name.data(), valid, t.cc,
                int(v.summary.size()), v.summary.data());
    for (const auto& [why, n] : reasons) std::printf("%37zu skipped: %s\n", n, why.c_str());
  }
  return 0;
}

// ---- compile ----------------------------------------------------------------------------------

int cmd_compile(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune compile options");
  std::string arch = "sm_90", nvrtc_path, dtypes = "int32,float32", ops = "sum", vars, cache_dir,
              problem = "array";
  bool unsafe = false, quiet = false;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  desc.add_options()
    ("help,h", "this help")
    ("arch", po::value(&arch)->default_value(arch), "target, e.g. sm_75, sm_90, compute_90")
    ("nvrtc", po::value(&nvrtc_path), "NVRTC library")
    ("dtypes", po::value(&dtypes)->default_value(dtypes), "dtypes")
    ("ops", po::value(&ops)->default_value(ops), "ops")
    ("variants", po::value(&vars), "catalogue names (default: all)")
    ("problem", po::value(&problem)->default_value(problem), "array, rows, columns or segments")
    ("unsafe-tails", po::bool_switch(&unsafe), "include the volatile tail on sm_70+")
    ("threads", po::value(&threads)->default_value(threads), "parallel compiles")
    ("cache-dir", po::value(&cache_dir), "use this compile cache (default: none)")
    ("quiet", po::bool_switch(&quiet), "print only the summary and failures");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  const auto ds = parse_list<DType>(dtypes, parse_dtype, "dtype");
  const auto os = parse_list<Op>(ops, parse_op, "op");
  const Problem pr = problem_option(problem);
  const auto names = split(vars);
  check_variants(names, pr);
  Nvrtc nvrtc(nvrtc_path);
  ArchTarget target;
  try {
    target = nvrtc.parse_target(arch);
  } catch (const std::invalid_argument& e) {
    throw Usage(e.what());
  }
  const int cc = target.number();
  std::vector<CompileJob> jobs;
  std::set<std::string> seen;
  for (DType d : ds)
    for (Op op : os) {
      const Target t{d, op, cc, 1024, 132, unsafe, pr};
      for (const Variant& v : variants(pr)) {
        if (!names.empty() && std::find(names.begin(), names.end(), v.name) == names.end()) continue;
        for (const Config& c : space(v)) {
          // As the sweep: bf16/f16 sums' atomic finishes with the float32 result they need.
          const bool wide = valid_wide_only(c, t);
          if ((wide || !invalid_reason(c, t)) && seen.insert(render(c, d, op, wide)).second)
            jobs.push_back({c, d, op, wide});
        }
      }
    }
  CompileCache cache(cache_dir);
  KernelLoader loader(nvrtc, cache, target);
  const auto outcomes = compile_all(loader, jobs, threads);
  std::size_t failed = 0;
  if (!quiet)
    std::printf("# NVRTC %s, %s (%s); instrs: SASS instructions derived from the code size (see tuner/cubin.h)\n"
                "%-52s %-8s %-4s %4s %6s %6s %6s %6s %6s %6s\n", nvrtc.version().c_str(),
                target.arch.c_str(), target.cubin ? "cubin" : "PTX", "configuration", "dtype", "op",
                "regs", "spillS", "spillL", "smem", "stack", "bytes", "instrs");
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const bool ok = outcomes[k].error.empty();
    failed += !ok;
    if (ok && quiet) continue;
    const Resources& r = outcomes[k].compiled.resources;
    std::printf("%-52s %-8s %-4s ", key(jobs[k].config).c_str(), std::string(name(jobs[k].dtype)).c_str(),
                std::string(name(jobs[k].op)).c_str());
    if (ok) {
      long long bytes = -1, instrs = -1;
      if (target.cubin) {
        const CubinKernel ck = inspect_cubin(outcomes[k].compiled.image,
                                             pr == Problem::array ? "rt_reduce" : "rt_segmented");
        bytes = static_cast<long long>(ck.code_bytes), instrs = static_cast<long long>(ck.instructions);
      }
      std::printf("%4d %6d %6d %6d %6d %6lld %6lld\n", r.registers, r.spill_stores, r.spill_loads, r.smem_bytes,
                  r.stack_bytes, bytes, instrs);
    }
    else
      std::printf("FAILED: %s\n", outcomes[k].error.c_str());
  }
  std::printf("%zu distinct kernels for %s with NVRTC %s: %zu compiled, %zu failed\n", jobs.size(),
              target.arch.c_str(), nvrtc.version().c_str(), jobs.size() - failed, failed);
  return failed ? 1 : 0;
}

constexpr const char* kUsage =
    "usage: reduce-tune [command] [options]\n\n"
    "commands:\n"
    "  tune       sweep the configuration space on one GPU (the default: reduce-tune --device 0)\n"
    "  variants   list the catalogue (--material: the course material's kernels and their keys)\n"
    "  compile    compile every valid configuration for an architecture, no GPU needed\n"
    "  query      the stored best configuration for (device, dtype, op, n); --lookup: the library's\n"
    "             graded choice\n"
    "  coverage   what the library runs on a GPU, per problem, dtype and op: tuned here, shipped,\n"
    "             carried, related or the built-in defaults, and the command that tunes the rest\n"
    "  reduction  a user reduction's file: its name (user:<hash>) and an NVRTC compile per dtype\n"
    "  devices    list the GPUs of this machine\n"
    "  nvrtc      the NVRTC version and the architectures it targets\n"
    "  compare    GPUs of the database and the material's published tables side by side (--static:\n"
    "             registers, spills, shared memory and instructions per architecture; --plot FILE)\n"
    "  replay     a search strategy replayed against a store's exhaustive measurements, no GPU\n"
    "  merge      bring other tuning databases into this one (reduce-tune merge OTHER.db...)\n"
    "  ship       write the shipped-tuning form of a store (reduce-tune ship --db S --out FILE)\n"
    "  fleet      tune a cluster's GPUs through Slurm: submit, status, merge (reduce-tune fleet --help)\n"
    "  import-reference  load the material's published figures into the database\n\n"
    "reduce-tune COMMAND --help for the options of a command.\n";

} // namespace

int main(int argc, char** argv) {
  register_test_variants_from_env(); // in the supervisor and in every worker it spawns
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string cmd = "tune";
  if (!args.empty() && args[0][0] != '-') {
    cmd = args[0];
    args.erase(args.begin());
  } else if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  try {
    if (cmd == "tune") return cmd_tune(args, command_line(argc, argv));
    if (cmd == "worker") return cmd_worker(args, command_line(argc, argv));
    // Not in the usage: started by the library for first-use tuning (tuner/autotune_worker.h).
    if (cmd == "autotune-worker") {
      if (!args.empty()) throw Usage("autotune-worker takes no options (the library starts it)");
      return serve_autotune();
    }
    if (cmd == "variants") return cmd_variants(args);
    if (cmd == "compile") return cmd_compile(args);
    if (cmd == "query") return cmd_query(args);
    if (cmd == "coverage") return cmd_coverage(args);
    if (cmd == "reduction") return cmd_reduction(args);
    if (cmd == "replay") return cmd_replay(args);
    if (cmd == "devices") return cmd_devices(args);
    if (cmd == "nvrtc") return cmd_nvrtc(args);
    if (cmd == "compare") return cmd_compare(args);
    if (cmd == "merge") return cmd_merge(args);
    if (cmd == "import-reference") return cmd_import_reference(args);
    if (cmd == "ship") return cmd_ship(args);
    if (cmd == "fleet")
      return cmd_fleet(args, [](const std::vector<std::string>& a) { return parse_tune(a, false).sweep; });
    if (cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    throw Usage("unknown command '" + cmd + "'");
  } catch (const Usage& e) {
    std::fprintf(stderr, "reduce-tune: %s\n", e.what());
    return 2;
  } catch (const po::error& e) {
    std::fprintf(stderr, "reduce-tune: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reduce-tune: %s\n", e.what());
    return 1;
  }
}
