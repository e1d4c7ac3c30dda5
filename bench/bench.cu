// reduce-tune bench: reduce-tune's choice through the library API against
// cub::DeviceReduce and a streaming-read ceiling kernel, all timed the same way in one run, and the
// per-call host overhead of the library over launching the same kernel directly.
//
// Method, the same for every contestant: random data (integers uniform over all values, floats
// uniform in [-1, 1); bench/data.h), allocated once per size; per contestant 3 warm-up calls then
// R timed calls in 4 chunks (see Timer::time), each: [cold: memset of a 2 x L2 buffer] -> output
// poisoned -> a ~40 us spin kernel (so the host enqueue of the call is hidden, as nvbench's
// blocking kernel does: the events time the GPU) -> event -> the call -> event; the lowest of the
// chunks' medians, and the min of the event times. Every result is
// checked against a CPU reference. Exit code: 0 all checks passed, 1 a check FAILED, 2 no CUDA
// device, 3 error.
#include "bench/cccl.h"
#include "bench/ceiling.cuh"
#include "bench/common.h"
#include "bench/cub_reduce.h"
#include "bench/data.h"
#include "bench/overhead.h"
#include "bench/timer.cuh"
#include "kernels/driver.h"
#include "reduce_tune/reducer.h"
#include "tuner/reference.h"
#include "tuner/sizes.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using reduce_tune::DType;
using reduce_tune::Op;

using rt_bench::CudaRuntimeError;
using rt_bench::cub_dispatch;
using rt_bench::Device;
using rt_bench::Stats;
using rt_bench::Timer;
using rt_bench::UsageError;
using rt_bench::for_each_flag;
using rt_bench::ceiling;
using rt_bench::dtype_name;
using rt_bench::fmt;
using rt_bench::gib;
using rt_bench::int_arg;
using rt_bench::op_name;
using rt_bench::sizes_arg;
using rt_bench::split;
using rt_bench::today;
using rt_bench::us_str;
using rt_bench::kCeilUnroll;

// ---- options ------------------------------------------------------------------------------

struct Options {
  std::vector<std::uint64_t> sizes;
  std::vector<DType> dtypes{DType::i32, DType::f32};
  std::vector<Op> ops{Op::sum};
  int reps = 50;
  int warmup = 3;
  bool cold = true, hot = true;
  std::string db;
  int device = 0;
  std::vector<std::uint64_t> overhead_sizes;
  int overhead_calls = 1000;
  int overhead_trials = 7;
  double spin_us = 40;
  bool idle = false; ///< GPU idle at the start event: the call's host side is inside the events
  std::uint64_t seed = 20240601;
  std::string csv;
  std::string command;
  bool float_result = false; ///< bf16/f16: reduce-tune and CUB write the float32 accumulator
};

const char* kUsage =
    "usage: reduce_bench [options]\n"
    "  --sizes LIST          sizes, e.g. 2^10,3*2^20+17,16M (default 2^10,2^12,...,2^30,\n"
    "                        2^21 and 3*2^20+17; sizes that do not fit in device memory are skipped)\n"
    "  --dtypes LIST         int32,uint32,int64,float32,float64,bfloat16,float16 (default\n"
    "                        int32,float32)\n"
    "  --ops LIST            sum,min,max (default sum)\n"
    "  --reps N              timed calls per contestant and mode (default 50, at least 1)\n"
    "  --warmup N            warm-up calls (default 3)\n"
    "  --cold-only           only with L2 flushed before each call\n"
    "  --hot-only            only without the flush\n"
    "  --db PATH             tuning store for the Reducer (default $REDUCE_TUNE_DB, else the\n"
    "                        default store path)\n"
    "  --device N            CUDA device ordinal (default 0)\n"
    "  --overhead-sizes LIST sizes for the per-call overhead table (default 2^10,2^16; 'none')\n"
    "  --no-overhead         skip the per-call overhead table\n"
    "  --overhead-calls K    back-to-back calls per overhead trial (default 1000)\n"
    "  --spin-us US          spin kernel before each timed call (default 40)\n"
    "  --idle                no spin kernel: wait for the stream before the start event, so the\n"
    "                        GPU idles and each call's host side (dispatch, launches) is timed too\n"
    "  --seed N              data seed\n"
    "  --csv PATH            also write every measurement as CSV\n"
    "  --float-result        bfloat16/float16: reduce-tune (reduce_async with DType::f32) and CUB\n"
    "                        write the float32 accumulator, not the element type\n"
    "exit code: 0 all results correct, 1 a result FAILED its check, 2 no CUDA device, 3 error\n";




Options parse(int argc, char** argv) {
  Options o;
  for (std::uint64_t k = 10; k <= 30; k += 2) {
    o.sizes.push_back(std::uint64_t(1) << k);
    if (k == 20) { // sizes the default sweep does not tune: an odd power and a non-power of two
      o.sizes.push_back(std::uint64_t(1) << 21);
      o.sizes.push_back(3 * (std::uint64_t(1) << 20) + 17);
    }
  }
  o.overhead_sizes = {std::uint64_t(1) << 10, std::uint64_t(1) << 16};
  for (int i = 0; i < argc; ++i) o.command.append(i ? " " : "").append(argv[i]);
  for_each_flag(argc, argv, [&](const std::string& flag, const std::function<std::string()>& next) {
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--sizes") {
      o.sizes = sizes_arg(flag, next());
    } else if (flag == "--dtypes") {
      o.dtypes = rt_bench::dtypes_arg(flag, next());
    } else if (flag == "--ops") {
      o.ops = rt_bench::ops_arg(flag, next());
    } else if (flag == "--reps") {
      o.reps = int_arg(flag, next(), 1);
    } else if (flag == "--warmup") {
      o.warmup = int_arg(flag, next(), 0);
    } else if (flag == "--cold-only") {
      o.hot = false;
    } else if (flag == "--hot-only") {
      o.cold = false;
    } else if (flag == "--db") {
      o.db = next();
    } else if (flag == "--device") {
      o.device = int_arg(flag, next(), 0);
    } else if (flag == "--overhead-sizes") {
      o.overhead_sizes = sizes_arg(flag, next());
    } else if (flag == "--no-overhead") {
      o.overhead_sizes.clear();
    } else if (flag == "--overhead-calls") {
      o.overhead_calls = int_arg(flag, next(), 5);
    } else if (flag == "--spin-us") {
      o.spin_us = int_arg(flag, next(), 0);
    } else if (flag == "--idle") {
      o.idle = true;
    } else if (flag == "--seed") {
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    } else if (flag == "--csv") {
      o.csv = next();
    } else if (flag == "--float-result") {
      o.float_result = true;
    } else {
      throw UsageError("unknown option '" + flag + "'");
    }
  });
  if (!o.cold && !o.hot) throw UsageError("--cold-only and --hot-only exclude each other");
  if (o.dtypes.empty() || o.ops.empty()) throw UsageError("--dtypes and --ops need a value");
  return o;
}

// ---- results ------------------------------------------------------------------------------

enum Who { RT = 0, CUB = 1, CEIL = 2, kWho = 3 };
const char* const kWhoName[kWho] = {"reduce-tune", "cub", "ceiling"};

struct Cell {
  bool ran = false;
  Stats st;
  rt_bench::Verdict v;
  std::string error; ///< the call threw
};

struct Row {
  std::uint64_t n = 0;
  std::string skip;      ///< why not measured
  std::string key, match;
  Cell cell[2][kWho];    ///< [cold, hot][who]
};

struct OverheadRow {
  DType dtype;
  Op op;
  std::uint64_t n = 0;
  rt_bench::Overhead o;
  bool ok = false;
  std::string error, detail;
};




bool failed(const Cell& c) { return c.ran && (!c.error.empty() || !c.v.ok); }


void print_table(const Device& dev, DType dt, Op op, int mode, const std::vector<Row>& rows) {
  std::printf("\n### %s %s, %s L2\n\n", dtype_name(dt).c_str(), op_name(op).c_str(),
              mode == 0 ? "cold" : "hot");
  std::printf("| n | reduce-tune us | GB/s | %% peak | CUB us | GB/s | %% peak | ceiling us | GB/s "
              "| %% peak | rt/CUB | rt/ceiling | rt/CUB, all calls | check (max rel. err) | reduce-tune config |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
  const double es = double(reduce_tune::size_of(dt));
  for (const Row& r : rows) {
    std::string line = "| " + reduce_tune::format_size(r.n) + " |";
    if (!r.skip.empty()) {
      std::printf("%s skipped: %s | | | | | | | | | | | | | |\n", line.c_str(), r.skip.c_str());
      continue;
    }
    const Cell* c = r.cell[mode];
    double t[kWho];
    for (int w = 0; w < kWho; ++w) {
      t[w] = 0;
      if (!c[w].ran) {
        line += " - | - | - |";
      } else if (!c[w].error.empty()) {
        line += " error | - | - |";
      } else {
        t[w] = c[w].st.median_us;
        const double gbps = double(r.n) * es / (t[w] * 1e-6) / 1e9;
        line += ' ' + us_str(t[w]) + " | " + fmt("%.0f", gbps) + " | " +
                fmt("%.1f", 100 * gbps / dev.peak_gbps) + " |";
      }
    }
    line += t[RT] > 0 && t[CUB] > 0 ? " " + fmt("%.2f", t[CUB] / t[RT]) + " |" : " - |";
    line += t[RT] > 0 && t[CEIL] > 0 ? " " + fmt("%.2f", t[CEIL] / t[RT]) + " |" : " - |";
    line += t[RT] > 0 && t[CUB] > 0 ? " " + fmt("%.2f", c[CUB].st.all_median_us / c[RT].st.all_median_us) + " |"
                                    : " - |";
    std::string check;
    double err = 0;
    for (int w = 0; w < kWho; ++w) {
      if (failed(c[w])) check += std::string(check.empty() ? "FAILED: " : ", ") + kWhoName[w];
      if (c[w].ran && c[w].error.empty()) err = std::max(err, c[w].v.rel_err);
    }
    if (check.empty())
      check = reduce_tune::is_float(dt) && op == Op::sum ? "ok (" + fmt("%.1e", err) + ")"
                                                         : "ok (exact)";
    line += " " + check + " | `" + r.key + "` (" + r.match + ") |";
    std::printf("%s\n", line.c_str());
  }
}


int run(const Options& o) {
  // ---- device ----
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess || count == 0) {
    const std::string why = ce != cudaSuccess ? std::string(cudaGetErrorName(ce)) + ": " +
                                                    cudaGetErrorString(ce)
                                              : "no GPU found";
    std::printf("no CUDA device (%s): nothing to measure\n", why.c_str());
    std::fprintf(stderr, "reduce_bench: no CUDA device (%s)\n", why.c_str());
    return 2;
  }
  if (o.device >= count)
    throw UsageError("--device " + std::to_string(o.device) + ": only " + std::to_string(count) +
                     " device(s)");
  const Device dev = rt_bench::open_device(o.device);
  const int drv = dev.driver_version, rtv = dev.runtime_version;

  reduce_tune::Options ro;
  ro.store_path = o.db;
  reduce_tune::Reducer reducer(o.device, ro);
  std::optional<rt_bench::OverheadBench> direct;
  if (!o.overhead_sizes.empty()) direct.emplace(o.device, ro.nvrtc_path);
  CK(cudaSetDevice(o.device)); // the reducer restores the caller's context; make sure it is ours

  const char* env_db = std::getenv("REDUCE_TUNE_DB");
  const std::string store = !o.db.empty() ? o.db
                            : env_db && *env_db ? std::string(env_db) + " ($REDUCE_TUNE_DB)"
                                                : std::string("the default store path");
  std::printf("# reduce-tune bench\n\n");
  std::printf("- **Device**: %s, %d SMs, L2 %.0f MiB, peak %.0f GB/s (2 x %d MHz x %d-bit / 8), "
              "driver %d.%d, CUDA runtime %d.%d\n",
              dev.prop.name, dev.sm_count, dev.l2_bytes / 1048576.0, dev.peak_gbps,
              dev.mem_clock_khz / 1000, dev.bus_bits, drv / 1000, drv % 1000 / 10, rtv / 1000,
              rtv % 1000 / 10);
  std::printf("- **CUB**: %s\n", rt_bench::cub_line().c_str());
  std::printf("- **Date**: %s\n- **Command**: `%s`\n- **Tuning store**: %s\n", today().c_str(),
              o.command.c_str(), store.c_str());
  std::printf("- **Method**: CUDA events around one call, %d warm-up + %d timed calls per "
              "contestant in 4 chunks, each after a different filler (none, an empty kernel, a memset, both: a "
              "hidden state of the launch sequence adds ~0.9 us to two-kernel calls in some chunks), "
              "the lowest chunk median shown (min and the median of all calls in the CSV; the latter also in the last ratio column); cold = `cudaMemsetAsync` of a %.0f MiB "
              "buffer (2 x L2) before each call, hot = no flush; %s. Data: integers uniform over all values (sums wrap), floats "
              "uniform in [-1,1) (bfloat16/float16: float32 values rounded to them); results checked against a CPU reference, exact for integers and "
              "min/max (float sums: |got-ref| <= eps sum|x| + eps_r |ref|, ref the compensated "
              "double sum, eps = eps_r = %g for float32, %g for float64; bfloat16/float16 accumulate in float32 and round once: eps = %g, "
              "eps_r = %g and %g).\n",
              o.warmup, o.reps, 2.0 * dev.l2_bytes / 1048576.0,
              o.idle ? "**idle GPU**: the stream is synchronized before the start event, so each "
                       "call's host side (the library's lookup and launch, CUB's dispatch and two "
                       "launches) is inside the events, as in a call on an idle GPU"
                     : ("a " + std::to_string(int(o.spin_us)) + " us spin kernel before the start event "
                        "hides the host's enqueue (the events time the GPU; host cost is in the "
                        "overhead table)").c_str(),
              rt_bench::sum_tolerance(DType::f32), rt_bench::sum_tolerance(DType::f64),
              rt_bench::sum_tolerance(DType::bf16), rt_bench::result_tolerance(DType::bf16),
              rt_bench::result_tolerance(DType::f16));
  std::printf("- **Contestants**: reduce-tune = `Reducer::reduce_async` (result on the device); "
              "CUB = `cub::DeviceReduce::Sum/Min/Max` (CCCL %s, temp storage allocated "
              "beforehand; bfloat16/float16: `cub::DeviceReduce::Reduce` with a float accumulator, "
              "`cuda::std::plus<float>` from 0.0f, `cuda::minimum<float>`/`cuda::maximum<float>` from -+inf, the "
              "result written as the element type%s); ceiling = a streaming-read kernel (16-byte loads, the faster of plain and evict-first, grid-stride, %d "
              "loads in flight per thread, one atomic per block, output set inside the timed "
              "region: a memset, for int64/float64 min/max a one-thread kernel; bfloat16/float16: float accumulation, "
              "one float atomic per block, the last block rounds the result). GB/s = n x "
              "element size (2 bytes for bfloat16, float16; 4 for int32, uint32, float32; 8 for int64, float64) / time. "
              "rt/CUB = CUB time / reduce-tune time, rt/ceiling = ceiling time / reduce-tune time, "
              "rt/CUB, all calls = the same from the medians of every timed call (all chunks) "
              "(above 1: reduce-tune faster).\n",
              rt_bench::cccl_version(),
              o.float_result ? "; with --float-result, reduce-tune (`reduce_async(..., DType::f32)`) "
                               "and CUB write it as float32, unrounded, checked with float32's "
                               "tolerance" : "",
              kCeilUnroll);
  std::fflush(stdout);

  std::set<std::uint64_t> table_sizes(o.sizes.begin(), o.sizes.end());
  std::set<std::uint64_t> ovh_sizes(o.overhead_sizes.begin(), o.overhead_sizes.end());
  std::vector<std::uint64_t> all = o.sizes;
  for (auto n : o.overhead_sizes)
    if (!table_sizes.count(n)) all.push_back(n);

  void* d_out = nullptr;
  CK(cudaMalloc(&d_out, 8));
  rt_bench::TimerOptions to;
  to.reps = o.reps;
  to.warmup = o.warmup;
  to.spin_us = o.spin_us;
  to.idle = o.idle;
  Timer timer(dev, to);
  const cudaStream_t s = timer.stream();

  std::map<std::pair<DType, Op>, std::vector<Row>> tables;
  std::vector<OverheadRow> overheads;
  std::map<std::string, std::vector<std::string>> notes; // note -> the problems it is about
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw std::runtime_error("cannot write " + o.csv);
    csv << "# device=" << dev.prop.name << ";peak_gbps=" << dev.peak_gbps
        << ";l2_bytes=" << dev.l2_bytes << "\n"
        << "dtype,op,n,mode,contestant,median_us,min_us,gbps,pct_peak,ok,rel_err,config,all_median_us\n";
  }
  int n_checks = 0, n_failed = 0;

  for (DType dt : o.dtypes) {
    const std::size_t es = reduce_tune::size_of(dt);
    // Sizes that fit: the input, the flush buffer and a margin for temp storage and workspaces.
    std::size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    const std::size_t margin = std::size_t(512) << 20;
    auto fits = [&](std::uint64_t n) { return n * es + margin <= free_b; };
    std::uint64_t max_n = 0;
    for (auto n : all)
      if (fits(n)) max_n = std::max(max_n, n);
    std::fprintf(stderr, "%s: generating %s of data\n", dtype_name(dt).c_str(),
                 gib(double(max_n) * es).c_str());
    auto host = rt_bench::make_data(dt, std::max<std::uint64_t>(max_n, 1),
                                    o.seed + std::uint64_t(dt));

    for (std::uint64_t n : all) {
      const bool in_table = table_sizes.count(n) > 0, in_ovh = ovh_sizes.count(n) > 0;
      if (!fits(n)) {
        const std::string why = "needs " + gib(double(n) * es) + ", " + gib(double(free_b)) +
                                " free besides the 2 x L2 flush buffer";
        std::fprintf(stderr, "%s n=%s: skipped: %s\n", dtype_name(dt).c_str(),
                     reduce_tune::format_size(n).c_str(), why.c_str());
        if (in_table)
          for (Op op : o.ops) {
            Row r;
            r.n = n;
            r.skip = why;
            tables[{dt, op}].push_back(r);
          }
        continue;
      }
      void* d_in = nullptr;
      CK(cudaMalloc(&d_in, n * es));
      CK(cudaMemcpy(d_in, host.get(), n * es, cudaMemcpyHostToDevice));
      // From pageable memory cudaMemcpy may return before the DMA lands, and the timing stream
      // does not wait for the legacy default stream.
      CK(cudaDeviceSynchronize());

      for (Op op : o.ops) {
        const rt_bench::Reference ref = rt_bench::reference(host.get(), n, dt, op);
        if (in_table) {
          std::fprintf(stderr, "%s %s n=%s\n", dtype_name(dt).c_str(), op_name(op).c_str(),
                       reduce_tune::format_size(n).c_str());
          Row row;
          row.n = n;
          // bf16/f16 with --float-result: reduce-tune and CUB write the float32 accumulator, checked
          // as float32; the ceiling keeps its own (element-typed) result.
          const bool wide = o.float_result && reduce_tune::is_half(dt);
          const rt_bench::Reference wref = wide ? rt_bench::widened(ref) : ref;
          const std::size_t res_es = wide ? 4 : es;
          const reduce_tune::Choice ch =
              wide ? reducer.async_config_for(dt, op, n, DType::f32) : reducer.async_config_for(dt, op, n);
          row.key = reduce_tune::key(ch.config);
          row.match = std::string(reduce_tune::name(ch.match));
          const std::string what = dtype_name(dt) + " " + op_name(op) + " at n = " +
                                   reduce_tune::format_size(n);
          if (!ch.note.empty()) notes["`" + row.key + "`: " + ch.note].push_back(what);
          const std::string sync_key = reduce_tune::key(reducer.config_for(dt, op, n).config);
          if (sync_key != row.key)
            notes["the synchronous API would use `" + sync_key + "`"].push_back(what);

          std::size_t tmp_bytes = 0;
          CK(cub_dispatch(dt, op, nullptr, tmp_bytes, d_in, d_out, n, s, wide));
          void* tmp = nullptr;
          CK(cudaMalloc(&tmp, std::max<std::size_t>(tmp_bytes, 1)));

          for (int mode = 0; mode < 2; ++mode) {
            if ((mode == 0 && !o.cold) || (mode == 1 && !o.hot)) continue;
            for (int w = 0; w < kWho; ++w) {
              Cell& c = row.cell[mode][w];
              c.ran = true;
              if (std::string e = rt_bench::cell_error([&] {
                // Times `call`, then checks the result it left (`bytes` of it, against `want`).
                auto measure = [&](auto&& call, const rt_bench::Reference& want,
                                   std::size_t bytes) {
                  std::pair<Stats, rt_bench::Verdict> r;
                  r.first = timer.time(mode == 0, d_out, bytes, call);
                  std::uint64_t got = 0; // the result bytes in its low bytes (bench/data.h)
                  CK(cudaMemcpy(&got, d_out, bytes, cudaMemcpyDeviceToHost));
                  r.second = rt_bench::check(want, got);
                  return r;
                };
                if (w == RT) {
                  std::tie(c.st, c.v) = measure(
                      [&] {
                        if (wide) reducer.reduce_async(dt, op, d_in, n, d_out, DType::f32, s);
                        else reducer.reduce_async(dt, op, d_in, n, d_out, s);
                      },
                      wref, res_es);
                } else if (w == CUB) {
                  std::tie(c.st, c.v) = measure(
                      [&] {
                        std::size_t b = tmp_bytes;
                        CK(cub_dispatch(dt, op, tmp, b, d_in, d_out, n, s, wide));
                      },
                      wref, res_es);
                } else {
                  // The ceiling is the faster of its two load kinds; both must be right.
                  const auto plain = measure(
                      [&] { ceiling<false>(dt, op, d_in, n, d_out, dev.sm_count, s); }, ref, es);
                  const auto ef = measure(
                      [&] { ceiling<true>(dt, op, d_in, n, d_out, dev.sm_count, s); }, ref, es);
                  const bool take_plain = !plain.second.ok || !ef.second.ok ||
                                          plain.first.median_us <= ef.first.median_us;
                  std::tie(c.st, c.v) = take_plain ? plain : ef;
                  if (!ef.second.ok) c.v = ef.second;
                }
              });
              !e.empty())
                c.error = e; // a library error (argument, compile, store): this cell fails
              ++n_checks;
              if (failed(c)) {
                ++n_failed;
                std::printf("\nFAILED: %s %s %s n=%s %s: %s\n", kWhoName[w],
                            dtype_name(dt).c_str(), op_name(op).c_str(),
                            reduce_tune::format_size(n).c_str(), mode == 0 ? "cold" : "hot",
                            !c.error.empty() ? c.error.c_str()
                                             : ("got " + c.v.got + ", expected " + c.v.want).c_str());
              }
              if (csv.is_open()) {
                const double gbps = c.error.empty() ? double(n) * es / (c.st.median_us * 1e-6) / 1e9 : 0;
                csv << dtype_name(dt) << ',' << op_name(op) << ',' << n << ','
                    << (mode == 0 ? "cold" : "hot") << ',' << kWhoName[w] << ','
                    << c.st.median_us << ',' << c.st.min_us << ',' << gbps << ','
                    << 100 * gbps / dev.peak_gbps << ',' << (failed(c) ? 0 : 1) << ','
                    << c.v.rel_err << ',' << (w == RT ? row.key : "") << ',' << c.st.all_median_us << '\n';
              }
            }
          }
          CK(cudaFree(tmp));
          tables[{dt, op}].push_back(row);
        }
        if (in_ovh && direct) {
          std::fprintf(stderr, "%s %s n=%s: per-call overhead\n", dtype_name(dt).c_str(),
                       op_name(op).c_str(), reduce_tune::format_size(n).c_str());
          OverheadRow orow{dt, op, n, {}, false, {}, {}};
          try {
            orow.o = direct->measure(reducer, dt, op, d_in, n, d_out, s, o.overhead_calls,
                                     o.overhead_trials);
            CK(cudaSetDevice(o.device));
            const auto vd = rt_bench::check(ref, orow.o.direct_bits);
            const auto vl = rt_bench::check(ref, orow.o.library_bits);
            orow.ok = vd.ok && vl.ok;
            if (!vd.ok) orow.detail += "direct got " + vd.got + ", expected " + vd.want + ". ";
            if (!vl.ok) orow.detail += "reduce_async got " + vl.got + ", expected " + vl.want + ".";
          } catch (const CudaRuntimeError&) {
            throw;
          } catch (const reduce_tune::cuda::CudaError&) {
            throw;
          } catch (const std::exception& e) {
            orow.error = e.what();
          }
          ++n_checks;
          if (!orow.ok) {
            ++n_failed;
            std::printf("\nFAILED: overhead %s %s n=%s: %s\n", dtype_name(dt).c_str(),
                        op_name(op).c_str(), reduce_tune::format_size(n).c_str(),
                        !orow.error.empty() ? orow.error.c_str() : orow.detail.c_str());
          }
          overheads.push_back(orow);
        }
      }
      CK(cudaFree(d_in));
    }
  }

  // ---- report ----
  for (const auto& [k, rows] : tables)
    for (int mode = 0; mode < 2; ++mode)
      if ((mode == 0 && o.cold) || (mode == 1 && o.hot)) print_table(dev, k.first, k.second, mode, rows);

  double worst_overhead = -1e300;
  if (!overheads.empty()) {
    std::printf("\n### Per-call host overhead of `Reducer::reduce_async` (goal: <= 1 us)\n\n");
    std::printf("Wall clock (steady_clock) per call, median of %d trials. Back-to-back: %d calls, "
                "then one stream sync. Direct = `prepare` + `enqueue` of the same kernel through "
                "kernels/runner.h with the configuration reduce_async chose; direct + copy adds "
                "the result copy (4 or 8 bytes) to the caller's pointer that reduce_async does. "
                "Synced: %d calls, each followed by `cuStreamSynchronize` (the latency of one "
                "call).\n\n",
                o.overhead_trials, o.overhead_calls, std::max(1, o.overhead_calls / 5));
    std::printf("| dtype | op | n | config | direct us | direct + copy us | reduce_async us | "
                "overhead vs direct | vs direct + copy | synced: direct us | synced: "
                "reduce_async us | synced overhead | check |\n");
    std::printf("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (const auto& r : overheads) {
      const auto& v = r.o;
      if (!r.error.empty()) {
        std::printf("| %s | %s | %s | | | | | | | | | | error: %s |\n", dtype_name(r.dtype).c_str(),
                    op_name(r.op).c_str(), reduce_tune::format_size(r.n).c_str(), r.error.c_str());
        continue;
      }
      worst_overhead = std::max(worst_overhead, v.library_us - v.direct_us);
      std::printf("| %s | %s | %s | `%s` (%s) | %.2f | %.2f | %.2f | %+.2f | %+.2f | %.2f | %.2f | "
                  "%+.2f | %s |\n",
                  dtype_name(r.dtype).c_str(), op_name(r.op).c_str(),
                  reduce_tune::format_size(r.n).c_str(), v.key.c_str(), v.match.c_str(),
                  v.direct_us, v.direct_copy_us, v.library_us, v.library_us - v.direct_us,
                  v.library_us - v.direct_copy_us, v.direct_sync_us, v.library_sync_us,
                  v.library_sync_us - v.direct_sync_us, r.ok ? "ok" : "FAILED");
    }
  }
  if (!notes.empty()) {
    std::printf("\n### Notes from the configuration lookup\n\n");
    for (const auto& [note, where] : notes) {
      std::string list;
      for (const auto& w : where) list += (list.empty() ? "" : "; ") + w;
      std::printf("- %s (%s)\n", note.c_str(), list.c_str());
    }
  }
  std::printf("\n**Summary**: %d results checked, %d FAILED", n_checks, n_failed);
  if (worst_overhead > -1e300)
    std::printf("; worst per-call overhead of reduce_async over a direct launch: %+.2f us (goal "
                "<= 1 us: %s)",
                worst_overhead, worst_overhead <= 1.0 ? "met" : "NOT met");
  std::printf("\n");
  CK(cudaFree(d_out));
  return n_failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    return run(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "reduce_bench: %s\n\n%s", e.what(), kUsage);
    return 3;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::printf("\nerror: %s\n", e.what());
    std::fprintf(stderr, "reduce_bench: error: %s\n", e.what());
    return 3;
  }
}
