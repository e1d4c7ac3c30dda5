// reduce-tune: the sweep.
#include "tuner/sweep.h"

#include "kernels/runner.h"
#include "tuner/sizes.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

template <typename T> bool in(const std::vector<T>& list, const T& x) {
  return list.empty() || std::find(list.begin(), list.end(), x) != list.end();
}

template <typename T> double median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? double(v[m]) : (double(v[m - 1]) + double(v[m])) / 2;
}

// The configurations the options select, before validity.
std::vector<Config> selected(const SweepOptions& o) {
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
  for (const Variant& v : variants()) {
    if (!in(o.variants, std::string(v.name))) continue;
    for (const Config& c : space(v))
      if (in(o.blocks, c.block) && in(o.unrolls, c.unroll) && in(o.tails, c.tail) &&
          in(o.finishes, c.finish))
        out.push_back(c);
  }
  return out;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

using Job = CompileJob;

} // namespace

std::vector<std::uint64_t> default_sizes() {
  std::vector<std::uint64_t> s;
  for (int e = 10; e <= 28; e += 2) s.push_back(std::uint64_t(1) << e);
  return s;
}

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

  res.device = {info.uuid, info.name, info.cc_major, info.cc_minor, info.sm_count, info.l2_bytes,
                info.total_mem, info.mem_clock_khz, info.bus_width_bits, info.peak_gbps(),
                info.driver_version, host_name()};
  store.upsert_device(res.device);
  const int reps = std::max(3, o.reps);
  db::RunRecord run;
  run.device_uuid = info.uuid;
  run.tool_version = RT_VERSION;
  run.nvrtc_version = nvrtc.version();
  run.options = o.command_line;
  run.timing_method = "cuda events around the launches, 1 warm-up, median of " +
                      std::to_string(reps) +
                      (o.hot ? " (hot L2)" : ", L2 flushed (memset of 2x L2) before each") +
                      "; host finish timed with steady_clock and added";
  res.run_id = store.begin_run(run);

  // Valid jobs, and the skipped points with their reasons.
  std::vector<Job> jobs;
  for (DType d : o.dtypes)
    for (Op op : o.ops) {
      Target t{d, op, info.cc(), info.max_threads_per_block, info.sm_count, o.allow_unsafe};
      for (const Config& c : selected(o)) {
        if (auto why = invalid_reason(c, t))
          res.skipped.push_back({key(c), std::string(name(d)), std::string(name(op)), 0, *why});
        else
          jobs.push_back({c, d, op});
      }
    }

  // Compile every distinct source in parallel (into the disk cache).
  const auto t_compile = Clock::now();
  {
    std::vector<CompileJob> cj;
    for (const Job& j : jobs) cj.push_back({j.config, j.dtype, j.op});
    const auto outcomes = compile_all(loader, cj, 0, [&](std::size_t done, std::size_t total) {
      if (progress) progress({done, total, "compile", "", seconds_since(t_start), 0});
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

  std::vector<std::uint64_t> sizes = o.sizes.empty() ? default_sizes() : o.sizes;
  const std::size_t total = jobs.size() * sizes.size();
  std::size_t done = 0;
  const auto t_measure = Clock::now();

  cuda::Stream stream;
  const CUstream s = stream.get();
  cuda::Event ev_start, ev_stop;
  const std::size_t flush_bytes = std::size_t(std::max<std::int64_t>(2 * info.l2_bytes, 1 << 26));
  cuda::Buffer flush(o.hot ? 0 : flush_bytes);
  Workspace ws;

  for (DType d : o.dtypes) {
    const std::size_t es = size_of(d);
    for (std::uint64_t n : sizes) {
      if (res.interrupted) break;
      const bool any_in_place = std::any_of(jobs.begin(), jobs.end(), [&](const Job& j) {
        return j.dtype == d && find_variant(j.config.variant)->in_place;
      });
      std::size_t free_b = 0, total_b = 0;
      RT_CU(cuMemGetInfo(&free_b, &total_b));
      const double need = double(n) * es * (any_in_place ? 2 : 1) + (64 << 20);
      if (need > double(free_b)) {
        res.skipped.push_back({"*", std::string(name(d)), "*", n,
                               "needs " + std::to_string(std::uint64_t(need) >> 20) +
                                   " MiB of GPU memory, " + std::to_string(free_b >> 20) +
                                   " MiB free"});
        done += std::size_t(std::count_if(jobs.begin(), jobs.end(), [&](const Job& j) { return j.dtype == d; }));
        continue;
      }
      const auto t_data = Clock::now();
      const std::uint64_t seed = o.seed ^ (n * 0x9e3779b97f4a7c15ull) ^ std::uint64_t(d);
      const HostArray data = make_input(d, n, seed);
      cuda::Buffer d_in(n * es);
      RT_CU(cuMemcpyHtoD(d_in.get(), data.bytes.data(), n * es));
      res.times.data_s += seconds_since(t_data);

      for (Op op : o.ops) {
        const Reference ref = reference(data, op);
        const Target t{d, op, info.cc(), info.max_threads_per_block, info.sm_count, o.allow_unsafe};
        std::set<std::string> stored;
        if (o.resume)
          for (const auto& k : store.measured_keys(info.uuid, std::string(name(d)), std::string(name(op)), n))
            stored.insert(k);
        if (!stored.empty())
          for (const auto& m : store.measurements(info.uuid, std::string(name(d)), std::string(name(op)), n))
            res.measurements.push_back(m);
        double best_us = 1e300;
        std::vector<db::Measurement> batch;
        // The catalogue runs from the material's slowest kernels to the fastest: measure in
        // reverse, so the best time is known early and slow configurations get few repetitions.
        for (auto jt = jobs.rbegin(); jt != jobs.rend(); ++jt) {
          const Job& j = *jt;
          if (j.dtype != d || j.op != op) continue;
          if (stop && stop()) {
            res.interrupted = true;
            break;
          }
          const std::string k = key(j.config);
          ++done;
          if (progress) {
            const double el = seconds_since(t_measure);
            progress({done, total, "measure", k + " " + std::string(name(d)) + " " +
                                                  std::string(name(op)) + " n=" + format_size(n),
                      seconds_since(t_start), el / double(done) * double(total - done)});
          }
          if (stored.count(k)) continue;
          db::Measurement m;
          m.key = k;
          m.variant = j.config.variant;
          m.block = j.config.block, m.unroll = j.config.unroll, m.vec = j.config.vec,
          m.grid = j.config.grid;
          m.tail = name(j.config.tail), m.finish = name(j.config.finish);
          m.dtype = name(d), m.op = name(op);
          m.n = n;
          m.seed = seed;
          m.cold = !o.hot;
          try {
            const Kernel kernel = loader.load(j.config, d, op);
            const LaunchPlan p = plan(j.config, t, n);
            ws.reserve(p, d, n);
            // Poison what the kernels must write, so an unwritten result cannot pass.
            RT_CU(cuMemsetD8Async(ws.out(), 0xA5, 8, s));
            if (p.partials) RT_CU(cuMemsetD8Async(ws.partials(), 0xA5, std::size_t(p.grid) * es, s));
            const auto t_val = Clock::now();
            const Scalar got = reduce_once(kernel, p, d_in.get(), n, ws, s);
            const Check chk = check(ref, got, op, summation_depth(j.config, t, n));
            res.times.validate_s += seconds_since(t_val);
            m.expected = chk.expected, m.observed = chk.observed;
            m.valid = chk.ok;
            if (!chk.ok) {
              m.error = "wrong result: got " + chk.observed + ", expected " + chk.expected +
                        (chk.bound > 0 ? " (error " + std::to_string(chk.error) + " > bound " +
                                             std::to_string(chk.bound) + ")"
                                       : "");
              batch.push_back(m);
              continue;
            }
            const auto t_time = Clock::now();
            std::vector<float> kernel_ms;
            std::vector<double> host_us;
            for (int r = 0; r < reps; ++r) {
              prepare(kernel, p, d_in.get(), n, ws, s);
              if (!o.hot) RT_CU(cuMemsetD32Async(flush.get(), unsigned(r), flush_bytes / 4, s));
              ev_start.record(s);
              enqueue(kernel, p, d_in.get(), n, ws, s);
              ev_stop.record(s);
              kernel_ms.push_back(ev_stop.since(ev_start));
              if (p.host_finish) {
                const auto h = Clock::now();
                result(kernel, p, ws, s);
                host_us.push_back(seconds_since(h) * 1e6);
              }
              // A configuration clearly slower than the best so far gets few repetitions: its
              // median is reported from those (m.reps says how many).
              if (r == 2 && median(kernel_ms) * 1e3 > 4 * best_us) break;
              if (r == 4 && median(kernel_ms) * 1e3 > 1.5 * best_us) break;
            }
            res.times.timing_s += seconds_since(t_time);
            m.host_us = host_us.empty() ? 0 : median(host_us);
            m.median_us = median(kernel_ms) * 1e3 + m.host_us;
            m.min_us = *std::min_element(kernel_ms.begin(), kernel_ms.end()) * 1e3 + m.host_us;
            m.max_us = *std::max_element(kernel_ms.begin(), kernel_ms.end()) * 1e3 + m.host_us;
            m.reps = int(kernel_ms.size());
            m.gbps = double(n) * double(es) / (m.median_us * 1e-6) / 1e9;
            m.pct_peak = 100 * m.gbps / info.peak_gbps();
            best_us = std::min(best_us, m.median_us);
          } catch (const cuda::CudaError& e) {
            // A fault leaves the context unusable: record it and end the sweep cleanly.
            m.valid = false;
            m.error = e.what();
            batch.push_back(m);
            store.add_measurements(res.run_id, batch);
            store.end_run(res.run_id, "failed");
            throw;
          }
          batch.push_back(m);
        }
        store.add_measurements(res.run_id, batch);
        res.measurements.insert(res.measurements.end(), batch.begin(), batch.end());
        if (res.interrupted) break;
      }
      // No configuration may modify the caller's input.
      HostArray after;
      after.bytes.resize(n * es);
      RT_CU(cuMemcpyDtoH(after.bytes.data(), d_in.get(), n * es));
      if (after.bytes != data.bytes)
        throw std::runtime_error("the input buffer was modified during the sweep of " +
                                 std::string(name(d)) + " n=" + format_size(n));
    }
  }
  store.end_run(res.run_id, res.interrupted ? "interrupted" : "done");
  res.times.total_s = seconds_since(t_start);
  return res;
}

} // namespace reduce_tune
