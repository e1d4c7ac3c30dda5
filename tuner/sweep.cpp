// reduce-tune: the sweep.
#include "tuner/sweep.h"

#include "kernels/runner.h"
#include "kernels/segmented.h"
#include "tuner/eta.h"
#include "tuner/hold.h"
#include "tuner/input_ahead.h"
#include "tuner/measure.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sizes.h"
#include "tuner/sweep_search.h"
#include "tuner/upload.h"
#include "tuner/user_check.h"
#include "runtime/lookup.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#ifndef RT_VERSION
#define RT_VERSION "dev"
#endif

namespace reduce_tune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Compiles take about the same time each: the ones left at the rate so far (negative: unknown).
double compile_eta(std::size_t done, std::size_t total, double elapsed_s) {
  return done ? elapsed_s / double(done) * double(total - done) : -1;
}

template <typename T> bool in(const std::vector<T>& list, const T& x) {
  return list.empty() || std::find(list.begin(), list.end(), x) != list.end();
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

using Job = CompileJob;

} // namespace

std::vector<Config> selected_configs(const SweepOptions& o) {
  std::vector<Config> out;
  if (!o.keys.empty()) {
    for (const auto& k : o.keys) {
      std::string why;
      auto c = parse_key(k, &why);
      if (!c) throw std::invalid_argument(why);
      out.push_back(*c);
    }
    return out;
  }
  for (const Variant& v : variants(o.problem)) {
    if (!in(o.variants, std::string(v.name))) continue;
    for (const Config& c : space(v))
      if (in(o.blocks, c.block) && in(o.unrolls, c.unroll) && in(o.tails, c.tail) &&
          in(o.finishes, c.finish))
        out.push_back(c);
  }
  for (const Config& c : o.first)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

std::vector<CompileJob> sweep_jobs(const SweepOptions& o, int cc, int max_block, int sm_count,
                                   std::vector<Skip>* skipped) {
  std::vector<CompileJob> jobs;
  const std::vector<Config> configs = selected_configs(o);
  for (DType d : o.dtypes)
    for (Op op : o.ops) {
      Target t{d, op, cc, max_block, sm_count, o.allow_unsafe, o.problem};
      t.user = o.user.get();
      for (const Config& c : configs) {
        if (auto why = invalid_reason(c, t)) {
          if (valid_wide_only(c, t))
            jobs.push_back({c, d, op, true});
          else if (skipped)
            skipped->push_back({key(c), std::string(name(d)), std::string(name(op)), 0, *why});
        } else if (auto left = o.keys.empty() ? unswept(c, t) : std::nullopt) {
          if (skipped) skipped->push_back({key(c), std::string(name(d)), std::string(name(op)), 0, *left});
        } else {
          jobs.push_back({c, d, op, false, o.user});
        }
      }
    }
  if (o.requirements) {
    // Only what the call may run (first-use tuning): the lookup's own rule.
    std::erase_if(jobs, [&](const Job& j) {
      Target t{j.dtype, j.op, cc, max_block, sm_count, o.allow_unsafe, o.problem};
      t.wide_result = o.requirements->wide_result;
      t.user = o.user.get();
      return config_unusable(j.config, t, *o.requirements).has_value();
    });
  }
  return jobs;
}

std::optional<std::string> refused_key(const SweepOptions& o, int cc, int max_block, int sm_count) {
  if (o.keys.empty()) return std::nullopt;
  // The sweep's own rule: a key runs where sweep_jobs makes a job of it.
  std::vector<Skip> skipped;
  const std::vector<Job> jobs = sweep_jobs(o, cc, max_block, sm_count, &skipped);
  for (const std::string& k : o.keys) {
    const std::optional<Config> c = parse_key(k);
    if (!c) continue; // parse_tune refused it already
    const std::string canonical = key(*c);
    if (std::any_of(jobs.begin(), jobs.end(), [&](const Job& j) { return key(j.config) == canonical; }))
      continue;
    const auto s = std::find_if(skipped.begin(), skipped.end(), [&](const Skip& x) { return x.key == canonical; });
    if (s != skipped.end())
      return "--keys " + k + " is invalid for every dtype and op of the sweep (" + s->dtype + " " + s->op +
             ": " + s->reason + ")";
  }
  return std::nullopt;
}

std::optional<std::string> too_large(const SweepOptions& o, std::int64_t total_mem) {
  if (o.problem != Problem::array) { // the input and one result per segment
    for (DType d : o.dtypes)
      for (const Shape& sh : o.shapes.empty() ? default_shapes(o.problem) : o.shapes) {
        const double need = double(sh.elements() + sh.count) * double(size_of(d));
        if (need > double(total_mem))
          return std::to_string(sh.count) + " x " + std::to_string(sh.length) + " of " +
                 std::string(name(d)) + " needs " + std::to_string(std::uint64_t(need / (1 << 30))) +
                 " GiB of GPU memory; the GPU has " + std::to_string(total_mem >> 30) + " GiB";
      }
    return std::nullopt;
  }
  bool in_place = false;
  for (const Config& c : selected_configs(o)) in_place |= find_variant(c.variant)->in_place;
  for (DType d : o.dtypes)
    for (std::uint64_t n : o.sizes.empty() ? default_sizes() : o.sizes) {
      const double need = double(n) * double(size_of(d)) * (in_place ? 2 : 1);
      if (need > double(total_mem))
        return "n = " + format_size(n) + " of " + std::string(name(d)) + " needs " +
               std::to_string(std::uint64_t(need / (1 << 30))) + " GiB of GPU memory" +
               (in_place ? " (input and the in-place variants' scratch copy)" : "") + "; the GPU has " +
               std::to_string(total_mem >> 30) + " GiB";
    }
  return std::nullopt;
}

db::DeviceRecord device_record(int ordinal) {
  const cuda::DeviceInfo i = cuda::device_info(ordinal);
  return {i.uuid, i.name, i.cc_major, i.cc_minor, i.sm_count, i.l2_bytes, i.total_mem,
          i.mem_clock_khz, i.bus_width_bits, i.peak_gbps(), i.driver_version, host_name()};
}

db::RunRecord run_record(const SweepOptions& o, const std::string& device_uuid,
                         const std::string& nvrtc_version) {
  db::RunRecord run;
  run.device_uuid = device_uuid;
  run.tool_version = RT_VERSION;
  run.nvrtc_version = nvrtc_version;
  run.options = o.command_line;
  run.timing_method = "cuda events around the launches, 1 warm-up (the checked launch), median of " +
                      std::to_string(std::max(3, o.reps)) +
                      (o.hot ? " (hot L2)" : ", L2 flushed (memset of the L2 size) before each") +
                      "; host finish timed with steady_clock and added; early stops: the checked "
                      "launch alone when over 4x the best and 200 us, 3 repetitions when over 4x, "
                      "5 when over 1.25x";
  return run;
}

std::size_t precompile(const SweepOptions& o, int cc, int max_block, int sm_count,
                       const std::function<void(const Progress&)>& progress) {
  const auto t0 = Clock::now();
  Nvrtc nvrtc(o.nvrtc_path);
  CompileCache cache(o.cache_dir.empty() ? CompileCache::default_dir() : std::filesystem::path(o.cache_dir));
  KernelLoader loader(nvrtc, cache, nvrtc.target_for(cc));
  compile_all(loader, sweep_jobs(o, cc, max_block, sm_count, nullptr), 0,
              [&](std::size_t done, std::size_t total) {
                if (progress) {
                  const double el = seconds_since(t0);
                  progress({.done = done, .total = total, .phase = "compile", .key = {}, .elapsed_s = el,
                            .eta_s = compile_eta(done, total, el)});
                }
              });
  return cache.misses();
}

std::vector<std::uint64_t> default_sizes() {
  std::vector<std::uint64_t> s;
  for (int e = 10; e <= 28; e += 2) s.push_back(std::uint64_t(1) << e);
  return s;
}

void seed_first(SweepSearch& search, const SweepOptions& o, const std::vector<std::pair<PointId, std::size_t>>& points) {
  if (o.first.empty()) return;
  for (const auto& [p, candidates] : points) search.seeds().first(p, o.first);
}

namespace {
std::string point_text(DType dtype, const db::OpKey& op, Problem problem, Shape shape) {
  std::string s = std::string(name(dtype)) + " " + op.name();
  if (problem == Problem::array) return s + " n=" + format_size(shape.length);
  return s + " " + std::string(name(problem)) + " " + format_size(shape.count) + " x " +
         format_size(shape.length);
}
} // namespace

std::string point_text(const Progress& p) { return point_text(p.dtype, p.op, p.problem, {p.count, p.n}); }
std::string point_text(const db::Measurement& m) { return point_text(m.dtype, m.op_key(), m.problem, m.shape()); }

SweepResult sweep(const SweepOptions& o, const std::function<void(const Progress&)>& progress,
                  const std::function<bool()>& stop) {
  const auto t_start = Clock::now();
  SweepResult res;
  cuda::Context ctx(o.device);
  const cuda::DeviceInfo info = cuda::device_info(o.device);
  Nvrtc nvrtc(o.nvrtc_path);
  CompileCache cache(o.cache_dir.empty() ? CompileCache::default_dir() : std::filesystem::path(o.cache_dir));
  KernelLoader loader(nvrtc, cache, nvrtc.target_for(info.cc()));
  db::Store store(o.db_path.empty() ? db::default_store_path() : o.db_path);

  res.device = device_record(o.device);
  store.upsert_device(res.device);
  res.run_id = o.run_id ? o.run_id : store.begin_run(run_record(o, info.uuid, nvrtc.version()));
  if (o.user) store.add_reduction({o.user->hash, o.user->description.canonical(), to_text(o.user->description), {}});
  res.times.setup_s = seconds_since(t_start);

  std::vector<Job> jobs = sweep_jobs(o, info.cc(), info.max_threads_per_block, info.sm_count, &res.skipped);

  // Compile every distinct source in parallel (into the disk cache); lazily: each when measured.
  const auto t_compile = Clock::now();
  if (!o.lazy_compile) {
    const auto outcomes = compile_all(loader, jobs, 0, [&](std::size_t done, std::size_t total) {
      if (progress)
        progress({.done = done, .total = total, .phase = "compile", .key = {}, .elapsed_s = seconds_since(t_start), .eta_s =
                  compile_eta(done, total, seconds_since(t_compile))});
    });
    res.compiled = cache.misses();
    res.cache_hits = cache.hits();
    // A compile failure of a valid configuration is a defect: report it, do not measure it.
    std::vector<Job> ok;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (outcomes[i].error.empty()) ok.push_back(jobs[i]);
      else res.skipped.push_back({key(jobs[i].config), std::string(name(jobs[i].dtype)),
                                  std::string(name(jobs[i].op)), 0, "compile failed: " + outcomes[i].error});
    }
    jobs = std::move(ok);
  }
  res.times.compile_s = seconds_since(t_compile);

  if (o.problem != Problem::array) {
    SweepSetup setup{info, loader, nvrtc, store, progress, stop,
                     std::chrono::duration<double>(t_start.time_since_epoch()).count()};
    measure_segmented(o, jobs, setup, res);
    if (!o.run_id) store.end_run(res.run_id, res.interrupted ? "interrupted" : "done");
    res.times.total_s = seconds_since(t_start);
    return res;
  }

  std::vector<std::uint64_t> sizes = o.sizes.empty() ? default_sizes() : o.sizes;
  // The points and their candidates, for the search's budget.
  std::vector<std::pair<PointId, std::size_t>> points;
  for (DType d : o.dtypes)
    for (std::uint64_t n : sizes)
      for (Op op : o.ops)
        points.emplace_back(PointId{d, op, Problem::array, Shape{1, n}},
                            std::size_t(std::count_if(jobs.begin(), jobs.end(), [&](const Job& j) {
                              return j.dtype == d && j.op == op;
                            })));
  SweepSearch search = [&] {
    PhaseTimer t(res.times.seeds_s);
    return sweep_search(o.search, o.budget, points, &store, device_key(info));
  }();
  seed_first(search, o, points);
  auto planned_of = [&](const PointId& p, std::size_t candidates) { return search.limit(p, candidates); };
  std::size_t total = 0, done = 0;
  // The time left: the points ahead, each its fixed cost plus its bytes' cost, at the rate observed.
  // Until the sizes seen make the bytes' cost measurable, it is the checked launch and every
  // repetition reading the input at the peak bandwidth.
  Eta eta(double(std::max(3, o.reps) + 1) / (std::max(info.peak_gbps(), 1.0) * 1e9));
  for (const auto& [p, candidates] : points) {
    const std::size_t planned = planned_of(p, candidates);
    eta.plan(double(p.shape.length) * double(size_of(p.dtype)), planned);
    total += planned;
  }
  eta.start();

  cuda::Stream stream;
  const CUstream s = stream.get();
  // One event pair per repetition: a batch of repetitions is queued, then read with one wait.
  const int reps = std::max(3, o.reps);
  std::vector<cuda::Event> ev_start(static_cast<std::size_t>(reps)), ev_stop(static_cast<std::size_t>(reps));
  // A memset as large as L2 evicts the input from it before each repetition (as nvbench does).
  const std::size_t flush_bytes = std::size_t(std::max<std::int64_t>(info.l2_bytes, 1 << 24));
  cuda::Buffer flush(o.hot ? 0 : flush_bytes);
  Workspace ws;
  InputCheck input_check(nvrtc, cache, loader.target(), s);
  // Every timed batch waits on the GPU until it is queued whole: no host delay is timed.
  Hold timed(nvrtc, cache, loader.target(), Hold::kTimeoutS, o.hold);
  const double seeds_before = res.times.seeds_s;

  // Each size's input, and its references for the ops of one input, are made on a thread while
  // the one before is measured (tuner/input_ahead.h).
  // A user reduction (rendered in sum's place) is checked against its own evaluation, never
  // against sum's reference: none is made for it.
  const bool two_inputs = two_input_ops(o.ops);
  std::vector<Op> one_input_ops;
  for (Op op : o.ops)
    if (!describe(op).traits.two_inputs && !o.user) one_input_ops.push_back(op);
  const auto spec_of = [&](DType d, std::uint64_t n) {
    InputSpec spec{d, n, o.seed ^ (n * 0x9e3779b97f4a7c15ull) ^ std::uint64_t(d), two_inputs, false, one_input_ops};
    if (o.check_data) spec.supplied = supplied_point(*o.check_data, d, Shape{1, n});
    return spec;
  };
  InputAhead ahead;
  StagedUpload upload;

  for (std::size_t di = 0; di < o.dtypes.size(); ++di) {
    const DType d = o.dtypes[di];
    const std::size_t es = size_of(d);
    for (std::size_t si = 0; si < sizes.size(); ++si) {
      const std::uint64_t n = sizes[si];
      if (res.interrupted) break;
      const bool any_in_place = std::any_of(jobs.begin(), jobs.end(), [&](const Job& j) {
        return j.dtype == d && find_variant(j.config.variant)->in_place;
      });
      std::size_t free_b = 0, total_b = 0;
      RT_CU(cuMemGetInfo(&free_b, &total_b));
      const bool two = two_input_ops(o.ops);
      const double need = double(n) * es * ((any_in_place ? 2 : 1) + (two ? 1 : 0)) + (64 << 20);
      if (need > double(free_b)) {
        res.skipped.push_back({"*", std::string(name(d)), "*", n,
                               "needs " + std::to_string(std::uint64_t(need) >> 20) +
                                   " MiB of GPU memory, " + std::to_string(free_b >> 20) +
                                   " MiB free"});
        std::size_t skipped = 0;
        for (const auto& [p, candidates] : points)
          if (p.dtype == d && p.shape.length == n) skipped += planned_of(p, candidates);
        done += skipped;
        eta.skipped(double(n) * double(es), skipped);
        continue;
      }
      const auto t_data = Clock::now();
      const std::uint64_t seed = o.check_data ? 0 : spec_of(d, n).seed; // 0: a supplied input
      // With the second input of the ops of two (dot): other random data of the same kind.
      PreparedInput input = ahead.take(spec_of(d, n));
      res.times.input_wait_s += seconds_since(t_data);
      if (si + 1 < sizes.size()) ahead.start(spec_of(d, sizes[si + 1]));
      else if (di + 1 < o.dtypes.size() && !sizes.empty()) ahead.start(spec_of(o.dtypes[di + 1], sizes.front()));
      const HostArray& data = input.data;
      const HostArray& data2 = input.data2;
      cuda::Buffer d_in(n * es);
      upload(d_in.get(), data.bytes.data(), n * es, s);
      cuda::Buffer d_in2(two ? n * es : 0);
      if (two) upload(d_in2.get(), data2.bytes.data(), n * es, s);
      res.times.input_s += seconds_since(t_data);
      ++res.times.inputs;

      for (Op op : o.ops) {
        const bool op_two = describe(op).traits.two_inputs;
        UserExpected user_ref;
        const Reference ref = [&] {
          PhaseTimer t(res.times.reference_s);
          if (o.user) {
            user_ref = o.check_data ? load_check_expected(*supplied_point(*o.check_data, d, Shape{1, n}))
                                    : user_expected(*o.user, data);
            return Reference{};
          }
          if (op_two) return reference(data, data2, op);
          const std::optional<Reference> made = input.reference_of(op);
          return made ? *made : reference(data, op);
        }();
        ++res.times.points;
        const CUdeviceptr in2 = op_two ? d_in2.get() : 0;
        Target t{d, op, info.cc(), info.max_threads_per_block, info.sm_count, o.allow_unsafe};
        t.user = o.user.get();
        const db::OpKey op_key = o.user ? db::OpKey::user(o.user->hash) : db::OpKey(op);
        // Points this run already holds (a restarted worker), or any run (--resume), are done.
        std::set<std::string> stored;
        if (o.resume || o.run_id)
          for (const auto& k : store.measured_keys(info.uuid, d, op_key, Problem::array, Shape{1, n},
                                                   o.resume ? 0 : o.run_id))
            stored.insert(k);
        if (!stored.empty())
          for (const auto& m : store.measurements(info.uuid, {d, op_key, Problem::array, Shape{1, n}}))
            if (stored.count(m.key) && (o.resume || m.run_id == o.run_id)) res.measurements.push_back(m);
        double best_us = 1e300;
        for (const auto& m : res.measurements)
          if (m.valid && m.dtype == d && m.op == op && m.problem == Problem::array && m.n == n) best_us = std::min(best_us, m.median_us);
        // The point's measurements are committed together when it ends (one transaction, not
        // one a measurement), and before a fault ends the sweep: a crash or kill -9 loses at most
        // the point in progress, which a restarted worker measures again.
        std::vector<db::Measurement> pending;
        auto commit = [&] {
          if (pending.empty()) return;
          PhaseTimer t(res.times.store_s);
          store.add_measurements(res.run_id, pending);
          pending.clear();
        };
        auto keep = [&](const db::Measurement& m) {
          pending.push_back(m);
          ++res.times.measured;
          res.measurements.push_back(m);
          eta.measured(double(n) * double(es));
          if (progress)
            progress({.done = done, .total = total, .phase = "stored", .key = m.key, .dtype = d, .op = op, .n = n,
                      .elapsed_s = seconds_since(t_start), .eta_s = eta.remaining_s()});
        };
        // The catalogue runs from the material's slowest kernels to the fastest: measure in
        // reverse, so the best time is known early and slow configurations get few repetitions.
        std::vector<const Job*> point_jobs;
        std::vector<Config> candidates;
        for (auto jt = jobs.rbegin(); jt != jobs.rend(); ++jt)
          if (jt->dtype == d && jt->op == op) point_jobs.push_back(&*jt), candidates.push_back(jt->config);
        const PointId point{d, op, Problem::array, Shape{1, n}};
        // One candidate: its time (infinity: it failed its check; NaN: not measured).
        auto measure_one = [&](std::size_t at) -> double {
          const Job& j = *point_jobs[at];
          const std::string k = key(j.config);
          ++done;
          if (stored.count(k)) {
            eta.skipped(double(n) * double(es));
            return NAN;
          }
          if (progress)
            progress({.done = done, .total = total, .phase = "measure", .key = k, .dtype = d, .op = op, .n = n,
                      .elapsed_s = seconds_since(t_start), .eta_s = eta.remaining_s()});
          db::Measurement m;
          m.key = k;
          m.variant = j.config.variant;
          m.block = j.config.block, m.unroll = j.config.unroll, m.vec = j.config.vec,
          m.grid = j.config.grid;
          m.tail = name(j.config.tail), m.finish = name(j.config.finish);
          m.dtype = d, m.op = op;
          if (o.user) m.user = o.user->hash;
          m.n = n;
          m.seed = seed;
          m.cold = !o.hot;
          try {
            const Kernel kernel = [&] {
              PhaseTimer t(res.times.load_s);
              Kernel k = j.user ? loader.load(j.config, d, j.user) : loader.load(j.config, d, op, j.wide_result);
              load_fully(k); // not at its first launch: that is held
              return k;
            }();
            const LaunchPlan p = plan(j.config, t, n);
            ws.reserve(p, d, n);
            // Poison what the kernels must write, so an unwritten result cannot pass.
            RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, s));
            if (p.partials)
              RT_CU(cuMemsetD8Async(ws.partials(), 0xA5,
                                    std::size_t(p.grid) * size_of(accumulator_of(d)), s));
            // Repetition r, queued: the input prepared, L2 flushed, the launches between event
            // pair r.
            auto queue_timed = [&](int r) {
              prepare(kernel, p, d_in.get(), n, ws, s);
              if (!o.hot) RT_CU(cuMemsetD32Async(flush.get(), unsigned(r), flush_bytes / 4, s));
              ev_start[r].record(s);
              enqueue(kernel, p, d_in.get(), n, ws, s, 0, in2);
              ev_stop[r].record(s);
            };
            // The result of repetition r; the host finish's own time (after the kernel) in host_us.
            auto read_result = [&](int r, double& host_us) {
              if (p.host_finish) RT_CU(cuEventSynchronize(ev_stop[r].get()));
              const auto h = Clock::now();
              const Scalar v = result(kernel, p, ws, s);
              host_us = p.host_finish ? seconds_since(h) * 1e6 : 0;
              return v;
            };
            // The checked launch is timed like a repetition (flushed, between events, held): it is
            // the warm-up, and for a configuration hopelessly slower than the best, the one timing.
            const auto t_val = Clock::now();
            timed.hold(s);
            queue_timed(0);
            timed.release();
            double check_host_us = 0;
            const Scalar got = read_result(0, check_host_us);
            const Check chk = o.user ? check_user(*o.user, d, user_ref, 0, got.to_double(), summation_depth(j.config, t, n))
                                     : check(ref, got, op, summation_depth(j.config, t, n));
            res.times.validate_s += seconds_since(t_val);
            if (!record_check(chk, m)) {
              keep(m);
              return INFINITY;
            }
            const auto t_time = Clock::now();
            // Its hold timed out: timed again (its result was checked).
            if (timed.timed_out())
              timed.rerun(s, [&] { queue_timed(0); }, [&] { read_result(0, check_host_us); });
            std::vector<float> kernel_ms;
            std::vector<double> host_us;
            // Repetitions [from, to): queued back to back behind one hold; the host finish needs
            // the host each time, so each of its repetitions is held alone.
            auto batch = [&](int from, int to) {
              if (p.host_finish) {
                for (int r = from; r < to; ++r) {
                  const std::size_t at = host_us.size();
                  timed.batch(s, [&] { queue_timed(r); }, [&] {
                    host_us.resize(at);
                    read_result(r, host_us.emplace_back());
                  });
                }
              } else {
                timed.batch(s, [&] { for (int r = from; r < to; ++r) queue_timed(r); },
                            [&] { RT_CU(cuEventSynchronize(ev_stop[to - 1].get())); });
              }
              for (int r = from; r < to; ++r) kernel_ms.push_back(ev_stop[r].since(ev_start[r]));
            };
            // A configuration clearly slower than the best so far gets few repetitions: its
            // median is reported from those (m.reps says how many). One whose checked launch
            // alone took over 4x the best (and long enough that no one-time cost of a first
            // launch can account for it) keeps that single timing.
            const float check_ms = ev_stop[0].since(ev_start[0]);
            if (check_ms * 1e3 > std::max(4 * best_us, kSingleTimingUs)) {
              kernel_ms.push_back(check_ms);
              if (p.host_finish) host_us.push_back(check_host_us);
            } else {
              batch(0, 3);
              if (median(kernel_ms) * 1e3 <= 4 * best_us) {
                batch(3, std::min(5, reps));
                if (median(kernel_ms) * 1e3 <= 1.25 * best_us) batch(std::min(5, reps), reps);
              }
            }
            res.times.timing_s += seconds_since(t_time);
            m.host_us = host_us.empty() ? 0 : median(host_us);
            record_times(kernel_ms, m.host_us, double(n) * double(es) * inputs_of(op),
                         info.peak_gbps(), m);
            best_us = std::min(best_us, m.median_us);
          } catch (const CompileError& e) {
            // Only where compiling lazily: the compile pass reports the others before measuring.
            res.skipped.push_back({k, std::string(name(d)), std::string(name(op)), n,
                                   std::string("compile failed: ") + e.what()});
            return NAN;
          } catch (const cuda::CudaError& e) {
            // A fault leaves the context unusable: record it, then end this process's sweep (a
            // supervisor restarts the worker, which skips what the run holds).
            m.valid = false;
            m.error = e.what();
            keep(m);
            commit();
            if (!o.run_id) store.end_run(res.run_id, "failed");
            throw;
          }
          keep(m);
          return m.median_us;
        };
        PastDeadline past(o.deadline_s);
        auto measure_counted = [&](std::size_t at) { return past.count(measure_one(at)); };
        const std::size_t visited =
            search.run(point, candidates, measure_counted, [&] { return (stop && stop()) || past(); });
        commit();
        if (stop && stop()) res.interrupted = true;
        // What the search left unmeasured is done too.
        const std::size_t planned = planned_of(point, candidates.size());
        if (visited < planned) {
          done += planned - visited;
          eta.skipped(double(n) * double(es), planned - visited);
        }
        if (res.interrupted) break;
      }
      {
        PhaseTimer t(res.times.input_check_s);
        input_check(d_in.get(), data, std::string(name(d)) + " n=" + format_size(n), input.hash);
        if (two) input_check(d_in2.get(), data2, std::string(name(d)) + " n=" + format_size(n) + " (y)", input.hash2);
      }
      ahead.retire(std::move(input)); // up to 1 GiB, freed on a thread while the next is uploaded
    }
  }
  if (!o.run_id) store.end_run(res.run_id, res.interrupted ? "interrupted" : "done");
  res.times.seeds_s = seeds_before + search.seeding_s();
  res.times.data_s = res.times.input_s + res.times.reference_s;
  res.times.input_checks = input_check.count(), res.times.inputs_hashed = input_check.hashed();
  res.times.held_batches = timed.holds(), res.times.hold_reruns = timed.reruns();
  res.times.hold_unprotected = timed.unprotected();
  res.times.inputs_ahead = ahead.ahead();
  res.times.upload_s = upload.seconds(), res.times.upload_bytes = upload.bytes(), res.times.upload_staged_bytes = upload.staged_bytes();
  res.times.total_s = seconds_since(t_start);
  return res;
}

} // namespace reduce_tune
