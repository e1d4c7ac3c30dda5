// reduce-tune bench: segmented reductions -- rows, columns and offsets -- through the
// library's segmented calls against cub::DeviceSegmentedReduce and a streaming-read ceiling, all
// timed the same way in one run, over a grid of shapes.
//
// Method (reduce_bench's, bench/timer.cuh): random data (integers uniform over all values, floats
// uniform in [-1, 1); bench/data.h), per contestant warm-up calls then R timed calls in 4 chunks,
// each: output poisoned -> [cold: memset of a 2 x L2 buffer] -> a spin kernel that hides the
// host's enqueue -> event -> the call -> event; the lowest of the chunks' medians. Every result of
// every contestant is checked against a CPU reference (tuner/reference.h) after it is timed.
// Exit code: 0 all checks passed, 1 a check FAILED, 2 no CUDA device, 3 error.
#include "bench/cccl.h"
#include "bench/ceiling.cuh"
#include "bench/common.h"
#include "bench/data.h"
#include "bench/segmented_cub.h"
#include "bench/segmented_report.h"
#include "bench/timer.cuh"
#include "kernels/driver.h"
#include "reduce_tune/reducer.h"
#include "tuner/reference.h"
#include "tuner/sizes.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using namespace rt_bench;
using namespace rt_bench::seg;
using reduce_tune::HostArray;
using reduce_tune::Segmentation;

// ---- options ------------------------------------------------------------------------------

struct Options {
  std::vector<Problem> problems{Problem::rows, Problem::columns, Problem::segments};
  std::vector<DType> dtypes{DType::i32, DType::f32};
  std::vector<Op> ops{Op::sum};
  std::vector<std::uint64_t> totals, lengths;
  bool who[kWho] = {true, true, true, true, true};
  TimerOptions timer;
  bool hot = false;
  bool count_only = false; ///< offsets: call without the element count (the count-only lookup)
  std::string db;
  int device = 0;
  std::uint64_t seed = 20240601;
  std::string csv;
  std::string command;
};

const char* kUsage =
    "usage: reduce_bench_segmented [options]\n"
    "  --quick               fewer shapes and calls: totals 2^20,2^24; row lengths 1,4,16,64,256,\n"
    "                        1024,4096,2^16,2^20,2^24; 10 timed calls\n"
    "  --problems LIST       rows,columns,segments (default all three)\n"
    "  --dtypes LIST         int32,uint32,int64,float32,float64 (default int32,float32)\n"
    "  --ops LIST            sum,min,max (default sum)\n"
    "  --totals LIST         elements per shape (default 2^16,2^20,2^24,2^28)\n"
    "  --lengths LIST        row length (rows, columns: cols) or mean segment length (segments);\n"
    "                        default 1,2,4,...,2^24; lengths above a total are left out\n"
    "  --contestants LIST    reduce-tune,cub,cub-iter,ceiling,one-d (default all; one-d: the\n"
    "                        library's tuned 1-D reduction of the same elements to one value)\n"
    "  --reps N              timed calls per contestant (default 30)\n"
    "  --warmup N            warm-up calls (default 3)\n"
    "  --budget-s S          fewer timed calls (not below 8) where R calls would take longer\n"
    "                        than S seconds (default 1; 0: never)\n"
    "  --hot                 also without the L2 flush (default: cold only)\n"
    "  --count-only          offsets: call reduce_segments without its element count, as a\n"
    "                        caller that does not know it (the lookup by segment count alone,\n"
    "                        or by the input allocation's extent where that is below 2^22)\n"
    "  --db PATH             tuning store for the Reducer (default $REDUCE_TUNE_DB, else the\n"
    "                        default store path)\n"
    "  --device N            CUDA device ordinal (default 0)\n"
    "  --spin-us US          spin kernel before each timed call (default 40)\n"
    "  --idle                no spin kernel: the GPU idles at the start event\n"
    "  --seed N              data and offsets seed\n"
    "  --csv PATH            also write every measurement as CSV\n"
    "exit code: 0 all results correct, 1 a result FAILED its check, 2 no CUDA device, 3 error\n";

std::vector<std::uint64_t> powers(int lo, int hi) {
  std::vector<std::uint64_t> v;
  for (int e = lo; e <= hi; ++e) v.push_back(std::uint64_t(1) << e);
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  o.timer.reps = 30;
  o.timer.budget_s = 1.0;
  o.timer.poison_before_flush = true; // outputs can be as large as inputs: flush them too
  bool quick = false, totals_set = false, lengths_set = false, reps_set = false;
  for (int i = 0; i < argc; ++i) o.command.append(i ? " " : "").append(argv[i]);
  for_each_flag(argc, argv, [&](const std::string& flag, const std::function<std::string()>& next) {
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--quick") {
      quick = true;
    } else if (flag == "--problems") {
      o.problems.clear();
      for (const auto& t : split(next())) {
        const auto p = reduce_tune::parse_problem(t);
        if (!p || *p == Problem::array)
          throw UsageError("--problems: '" + t + "': expected rows, columns or segments");
        o.problems.push_back(*p);
      }
      if (o.problems.empty()) throw UsageError("--problems needs a value");
    } else if (flag == "--dtypes") {
      o.dtypes = dtypes_arg(flag, next());
    } else if (flag == "--ops") {
      o.ops = ops_arg(flag, next());
    } else if (flag == "--totals") {
      o.totals = sizes_arg(flag, next()), totals_set = true;
    } else if (flag == "--lengths") {
      o.lengths = sizes_arg(flag, next()), lengths_set = true;
    } else if (flag == "--contestants") {
      std::fill(std::begin(o.who), std::end(o.who), false);
      for (const auto& t : split(next())) {
        int w = 0;
        while (w < kWho && t != kWhoName[w]) ++w;
        if (w == kWho)
          throw UsageError("--contestants: '" + t +
                           "': expected reduce-tune, cub, cub-iter, ceiling or one-d");
        o.who[w] = true;
      }
    } else if (flag == "--reps") {
      o.timer.reps = int_arg(flag, next(), 1), reps_set = true;
    } else if (flag == "--warmup") {
      o.timer.warmup = int_arg(flag, next(), 1);
    } else if (flag == "--budget-s") {
      o.timer.budget_s = std::strtod(next().c_str(), nullptr);
    } else if (flag == "--hot") {
      o.hot = true;
    } else if (flag == "--count-only") {
      o.count_only = true;
    } else if (flag == "--db") {
      o.db = next();
    } else if (flag == "--device") {
      o.device = int_arg(flag, next(), 0);
    } else if (flag == "--spin-us") {
      o.timer.spin_us = int_arg(flag, next(), 0);
    } else if (flag == "--idle") {
      o.timer.idle = true;
    } else if (flag == "--seed") {
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    } else if (flag == "--csv") {
      o.csv = next();
    } else {
      throw UsageError("unknown option '" + flag + "'");
    }
  });
  if (!totals_set)
    o.totals = quick ? std::vector<std::uint64_t>{1 << 20, 1 << 24}
                     : std::vector<std::uint64_t>{1 << 16, 1 << 20, 1 << 24, 1 << 28};
  if (!lengths_set)
    o.lengths = quick ? std::vector<std::uint64_t>{1, 4, 16, 64, 256, 1024, 4096, 1 << 16, 1 << 20, 1 << 24}
                      : powers(0, 24);
  if (quick && !reps_set) o.timer.reps = 10;
  return o;
}

/// The grid of one problem: every (total, length) with length <= total; count = total / length.
/// Rows and columns reduce the same rows x cols matrix (cols = the length); segments spread the
/// total over total / length segments of skewed lengths.
std::vector<Case> cases(const Options& o, Problem p) {
  std::vector<Case> out;
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (std::uint64_t total : o.totals)
    for (std::uint64_t len : o.lengths) {
      if (len == 0 || len > total) continue;
      Case c;
      c.problem = p;
      const std::uint64_t count = total / len;
      if (p == Problem::segments) c.segments = count, c.n = total;
      else c.rows = count, c.cols = len, c.n = count * len;
      if (seen.insert({c.n, c.count()}).second) out.push_back(c);
    }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) {
    return a.n != b.n ? a.n < b.n : a.row_length() < b.row_length();
  });
  return out;
}

// ---- device side --------------------------------------------------------------------------

/// out[i] = i * step for i <= count: CUB's offsets for the rows of a dense matrix.
__global__ void iota_times(std::int64_t* out, std::uint64_t count, std::int64_t step) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i <= count;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    out[i] = std::int64_t(i) * step;
}

/// A device allocation freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { CK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1))); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T = void> T* get() const { return static_cast<T*>(p); }
};

// ---- the library --------------------------------------------------------------------------

/// The element count an offsets call gives (0: none, the count-only lookup).
std::uint64_t elements_given(const Options& o, const Case& c) { return o.count_only ? 0 : c.n; }

void library_call(reduce_tune::Reducer& r, const Options& o, const Case& c, DType dt, Op op,
                  const void* in, const std::int64_t* offsets, void* out, cudaStream_t s) {
  switch (c.problem) {
  case Problem::rows: return r.reduce_rows(dt, op, in, c.rows, c.cols, out, s);
  case Problem::columns: return r.reduce_columns(dt, op, in, c.rows, c.cols, out, s);
  case Problem::segments:
    return r.reduce_segments(dt, op, in, offsets, c.segments, out, s, elements_given(o, c));
  case Problem::array: break;
  }
  throw std::logic_error("library_call: not a segmented problem");
}

/// The configuration the library uses (key, how it was found), asked as the call asks (offsets:
/// Reducer::segments_config_for with the call's input and element count).
std::pair<std::string, std::string> library_choice(const reduce_tune::Reducer& r, const Options& o,
                                                   const Case& c, DType dt, Op op, const void* in) {
  const reduce_tune::Choice ch = c.problem == Problem::segments
                                     ? r.segments_config_for(dt, op, in, c.segments, elements_given(o, c))
                                     : r.config_for(dt, op, c.problem, c.shape());
  return {reduce_tune::key(ch.config), std::string(reduce_tune::name(ch.match))};
}

// ---- one case ----------------------------------------------------------------------------

/// What the contestants of one case share: the input on the device (elements, then for segments
/// the offsets at a 256-byte boundary), the output, CUB's row offsets, the CPU side.
struct CaseData {
  Case c;
  DType dt;
  std::size_t es = 0, off_at = 0, in_bytes = 0, out_bytes = 0;
  Segmentation seg;
  std::uint32_t ceiling_ref = 0; ///< the wrapping uint32 sum of the input's bytes
};

/// The wrapping sum of `words` uint32 words at p.
std::uint32_t word_sum(const void* p, std::uint64_t words) {
  return std::uint32_t(rt_bench::reference(p, words, DType::u32, Op::sum).bits);
}

/// CUB's result for an empty segment of float min/max: its documented initial value,
/// numeric_limits max() / lowest(), where the library (and the reference) give +-infinity.
/// Replaced by the reference's identity before the check, only for empty segments.
void accept_cub_empty(HostArray& got, const Segmentation& seg, Op op) {
  if (!reduce_tune::is_float(got.dtype) || op == Op::sum || seg.problem != Problem::segments) return;
  rt_bench::visit(got.dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) {
      T* v = got.data<T>();
      const T cub_id = op == Op::min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
      for (std::uint64_t i = 0; i < seg.shape.count; ++i)
        if (seg.length(i) == 0 && v[i] == cub_id) v[i] = reduce_tune::identity<T>(op);
    }
  });
}

/// Every result in `got` against its reference, on all cores: integers and min/max bit-exact,
/// float sums within float_bound(depth(len)); the first failure is re-checked and described by
/// reduce_tune::check (tuner/reference.h), which builds its texts for that one result only.
reduce_tune::Check check_all(const std::vector<reduce_tune::Reference>& refs, const HostArray& got,
                             const Segmentation& seg, Op op) {
  const DType dt = got.dtype;
  const std::size_t es = reduce_tune::size_of(dt);
  const bool bounded = reduce_tune::is_float(dt) && op == Op::sum;
  const auto depth = [](std::uint64_t len) { return std::min<std::uint64_t>(len, 17); };
  const auto at = [&](std::uint64_t i) {
    reduce_tune::Scalar v;
    v.dtype = dt;
    std::memcpy(&v.bits, got.bytes.data() + i * es, es);
    return v;
  };
  std::atomic<std::uint64_t> first{~0ull};
  parallel_for(seg.shape.count, [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t i = lo; i < hi; ++i) {
      const reduce_tune::Scalar v = at(i);
      const reduce_tune::Reference& r = refs[i];
      bool ok = v == r.value;
      if (!ok && bounded) {
        const double g = v.to_double();
        ok = std::isfinite(g) &&
             std::fabs(g - r.exact) <= reduce_tune::float_bound(dt, depth(seg.length(i)), r.abs_sum, r.exact);
      }
      if (!ok && !reduce_tune::check(r, v, op, depth(seg.length(i))).ok) {
        std::uint64_t f = first.load();
        while (i < f && !first.compare_exchange_weak(f, i)) {
        }
        return;
      }
    }
  });
  const std::uint64_t i = first.load();
  if (i == ~0ull) {
    reduce_tune::Check ok;
    ok.ok = true;
    return ok;
  }
  reduce_tune::Check c = reduce_tune::check(refs[i], at(i), op, depth(seg.length(i)));
  const std::string where = "result " + std::to_string(i) + " of " + std::to_string(seg.shape.count) +
                            " (" + std::to_string(seg.length(i)) + " elements): ";
  c.expected = where + c.expected;
  c.observed = where + c.observed;
  return c;
}

int run(const Options& o) {
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess || count == 0) {
    const std::string why = ce != cudaSuccess ? std::string(cudaGetErrorName(ce)) + ": " + cudaGetErrorString(ce)
                                              : "no GPU found";
    std::printf("no CUDA device (%s): nothing to measure\n", why.c_str());
    std::fprintf(stderr, "reduce_bench_segmented: no CUDA device (%s)\n", why.c_str());
    return 2;
  }
  if (o.device >= count)
    throw UsageError("--device " + std::to_string(o.device) + ": only " + std::to_string(count) + " device(s)");
  const Device dev = open_device(o.device);
  reduce_tune::Options ro;
  ro.store_path = o.db;
  std::unique_ptr<reduce_tune::Reducer> reducer;
  if (o.who[RT] || o.who[ONE_D]) reducer = std::make_unique<reduce_tune::Reducer>(o.device, ro);
  CK(cudaSetDevice(o.device)); // the reducer restores the caller's context; make sure it is ours

  const char* env_db = std::getenv("REDUCE_TUNE_DB");
  const std::string store = !o.db.empty() ? o.db
                            : env_db && *env_db ? std::string(env_db) + " ($REDUCE_TUNE_DB)"
                                                : std::string("the default store path");
  std::printf("# reduce-tune segmented bench\n\n");
  std::printf("- **Device**: %s, %d SMs, L2 %.0f MiB, peak %.0f GB/s, driver %d.%d, CUDA runtime %d.%d\n",
              dev.prop.name, dev.sm_count, dev.l2_bytes / 1048576.0, dev.peak_gbps,
              dev.driver_version / 1000, dev.driver_version % 1000 / 10, dev.runtime_version / 1000,
              dev.runtime_version % 1000 / 10);
  std::printf("- **CUB**: %s\n", rt_bench::cub_line().c_str());
  std::printf("- **Date**: %s\n- **Command**: `%s`\n- **Tuning store**: %s\n", today().c_str(),
              o.command.c_str(), store.c_str());
  std::printf("- **Method**: CUDA events around one call, %d warm-up + %d timed calls per contestant "
              "(fewer, not below %d, where they would take over %.1f s) in 4 chunks, the lowest chunk "
              "median shown (min and the median of all calls in the CSV); before each call the "
              "output is poisoned, then (cold) a %.0f MiB buffer (2 x L2) is written, then %s. "
              "Data: integers uniform over all values (sums wrap), floats uniform in [-1,1); "
              "segments: Pareto lengths (tuner/reference.h skewed_offsets: most shorter than the "
              "mean, empty ones too, a few hundreds of times longer; one seed for every shape, so a "
              "shape's lengths are one draw: `longest / empty` gives the longest segment's share of "
              "the elements and the share of empty segments). Every result of every "
              "contestant checked against the CPU reference: integers and min/max exact, float sums "
              "within gamma(min(len, 17)) sum|x| + u |ref| (u = unit roundoff; 17 u = 1.0e-6 for "
              "float32, reduce_bench's tolerance).\n",
              o.timer.warmup, o.timer.reps, std::min(o.timer.min_reps, o.timer.reps), o.timer.budget_s,
              2.0 * dev.l2_bytes / 1048576.0,
              o.timer.idle ? "the stream is synchronized (idle GPU: host side timed too)"
                           : ("a " + std::to_string(int(o.timer.spin_us)) +
                              " us spin kernel hides the host's enqueue").c_str());
  std::printf("- **Contestants**: reduce-tune = `Reducer::reduce_rows / reduce_columns / "
              "reduce_segments` (results on the device; reduce_segments %s); CUB = %s "
              "Ceiling = a streaming-read kernel (16-byte loads, the faster of "
              "plain and evict-first, grid-stride, %d loads in flight per thread) summing the "
              "problem's input bytes (elements, and the offsets for segments) as uint32 words. "
              "1-D (one-d) = the library's tuned 1-D reduction of the same elements to one value "
              "(`Reducer::reduce_async`, checked like the rest): not a segmented reduction, a "
              "yardstick for what reading those elements costs the library where calls are a few "
              "microseconds. GB/s = bytes read (elements + offsets; 1-D: elements) / time; outputs "
              "are not counted (the CSV has bytes_written). rt/CUB = faster CUB time / reduce-tune "
              "time; CUB/1-D = faster CUB time / 1-D time; rt %% of ceiling = ceiling time / "
              "reduce-tune time.\n",
              o.count_only ? "without the element count: the lookup by segment count alone, or by "
                             "the extent of an input allocation below 2^22 elements"
                           : "given the element count, as the Python package gives x's size",
              cub_method().c_str(), kCeilUnroll);
  std::fflush(stdout);

  Timer timer(dev, o.timer);
  const cudaStream_t s = timer.stream();
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw std::runtime_error("cannot write " + o.csv);
    csv << "# device=" << dev.prop.name << ";peak_gbps=" << dev.peak_gbps << ";l2_bytes=" << dev.l2_bytes
        << ";source=reduce_bench_segmented;cccl=" << cccl_version()
        << ";cub_fixed_size=" << cub_fixed_size_segments() << "\n"
        << kCsvHeader << "\n";
  }
  Tables tables;
  int n_checks = 0, n_failed = 0;
  for (DType dt : o.dtypes) {
    const std::size_t es = reduce_tune::size_of(dt);
    std::uint64_t max_n = 1;
    for (Problem p : o.problems)
      for (const Case& c : cases(o, p)) max_n = std::max(max_n, c.n);
    std::fprintf(stderr, "%s: generating %s of data\n", dtype_name(dt).c_str(), gib(double(max_n) * es).c_str());
    HostArray host;
    host.dtype = dt;
    host.n = max_n;
    host.bytes.resize(max_n * es);
    fill_data(dt, max_n, o.seed + std::uint64_t(dt), host.bytes.data());

    for (Problem p : o.problems)
      for (const Case& c : cases(o, p)) {
        CaseData d;
        d.c = c;
        d.dt = dt;
        d.es = es;
        d.off_at = (c.n * es + 255) / 256 * 256;
        d.in_bytes = p == Problem::segments ? d.off_at + (c.segments + 1) * sizeof(std::int64_t) : c.n * es;
        d.out_bytes = std::max<std::size_t>(c.count() * es, 8);
        // CUB's row offsets, where rows take the offsets overload (no fixed-size one in this CCCL).
        const bool cub_row_offsets = o.who[CUB] && p == Problem::rows &&
                                     cub_kind(p, false, c.rows, c.cols) == CubKind::offsets;
        const std::size_t cub_offsets = cub_row_offsets ? (c.rows + 1) * sizeof(std::int64_t) : 0;
        std::size_t free_b = 0, total_b = 0;
        CK(cudaMemGetInfo(&free_b, &total_b));
        const std::size_t need = d.in_bytes + d.out_bytes + cub_offsets + (std::size_t(512) << 20);
        if (need > free_b) {
          for (Op op : o.ops) {
            Row row;
            row.c = c;
            row.skip = "needs " + gib(double(need)) + ", " + gib(double(free_b)) + " free";
            tables[{p, dt, op}].push_back(row);
          }
          continue;
        }
        d.seg.problem = p;
        d.seg.shape = c.shape();
        d.seg.stride = c.cols;
        if (p == Problem::segments) d.seg.offsets = reduce_tune::skewed_offsets(c.segments, c.n, o.seed);

        DeviceBuffer in(d.in_bytes), out(d.out_bytes), rowoff(cub_offsets);
        CK(cudaMemcpy(in.get(), host.bytes.data(), c.n * es, cudaMemcpyHostToDevice));
        d.ceiling_ref = word_sum(host.bytes.data(), c.n * es / 4);
        const std::int64_t* d_offsets = nullptr;
        if (p == Problem::segments) {
          char* base = in.get<char>();
          CK(cudaMemset(base + c.n * es, 0, d.off_at - c.n * es));
          CK(cudaMemcpy(base + d.off_at, d.seg.offsets.data(), d.seg.offsets.size() * 8, cudaMemcpyHostToDevice));
          d_offsets = reinterpret_cast<const std::int64_t*>(base + d.off_at);
          d.ceiling_ref += word_sum(d.seg.offsets.data(), d.seg.offsets.size() * 2);
        }
        if (cub_offsets) {
          iota_times<<<1024, 256, 0, s>>>(rowoff.get<std::int64_t>(), c.rows, std::int64_t(c.cols));
          CK(cudaGetLastError());
        }
        // Pageable cudaMemcpy may return before the DMA lands; the timing stream does not wait
        // for the legacy default stream.
        CK(cudaDeviceSynchronize());

        for (Op op : o.ops) {
          std::fprintf(stderr, "%s %s %s n=%s count=%s\n", std::string(reduce_tune::name(p)).c_str(),
                       dtype_name(dt).c_str(), op_name(op).c_str(), reduce_tune::format_size(c.n).c_str(),
                       reduce_tune::format_size(c.count()).c_str());
          Row row;
          row.c = c;
          if (p == Problem::segments) row.mix = length_mix(d.seg.offsets);
          const std::vector<reduce_tune::Reference> refs = reduce_tune::segmented_reference(host, d.seg, op);
          // The 1-D reduction's one result: the elements as a single row.
          Segmentation whole;
          whole.problem = Problem::rows;
          whole.shape = {1, c.n};
          whole.stride = c.n;
          std::vector<reduce_tune::Reference> whole_ref;
          if (o.who[ONE_D]) whole_ref = reduce_tune::segmented_reference(host, whole, op);
          if (o.who[RT]) std::tie(row.key, row.match) = library_choice(*reducer, o, c, dt, op, in.get());
          for (int mode = 0; mode < 2; ++mode) {
            if (mode == 1 && !o.hot) continue;
            const bool cold = mode == 0;
            for (int w = 0; w < kWho; ++w) {
              if (!o.who[w] || (w == CUB_ITER && p != Problem::rows)) continue;
              Cell& x = row.cell[mode][w];
              x.ran = true;
              if (std::string e = rt_bench::cell_error([&] {
                // Times `call`, then checks every result it left (those of `sg`: the case's
                // segmentation, or the whole input for the 1-D reduction).
                auto measure = [&](auto&& call) {
                  const Segmentation& sg = w == ONE_D ? whole : d.seg;
                  const std::uint64_t results = sg.shape.count;
                  x.st = timer.time(cold, out.get(), results * es, call);
                  HostArray got;
                  got.dtype = dt;
                  got.n = results;
                  got.bytes.resize(results * es);
                  CK(cudaMemcpy(got.bytes.data(), out.get(), got.bytes.size(), cudaMemcpyDeviceToHost));
                  if (w == CUB) accept_cub_empty(got, d.seg, op);
                  const reduce_tune::Check ch = check_all(w == ONE_D ? whole_ref : refs, got, sg, op);
                  x.ok = ch.ok;
                  if (!ch.ok) x.error = "got " + ch.observed + ", expected " + ch.expected;
                };
                if (w == RT) {
                  measure([&] { library_call(*reducer, o, c, dt, op, in.get(), d_offsets, out.get(), s); });
                } else if (w == ONE_D) {
                  measure([&] { reducer->reduce_async(dt, op, in.get(), c.n, out.get(), s); });
                } else if (w == CUB || w == CUB_ITER) {
                  const CubKind kind = cub_kind(p, w == CUB_ITER, c.rows, c.cols);
                  const std::int64_t* offs = p == Problem::rows ? rowoff.get<const std::int64_t>() : d_offsets;
                  std::size_t tmp_bytes = 0;
                  CK(cub_segmented(kind, dt, op, nullptr, tmp_bytes, in.get(), offs, c.count(), c.rows, c.cols, out.get(), s));
                  DeviceBuffer tmp(tmp_bytes);
                  measure([&] {
                    std::size_t b = tmp_bytes;
                    CK(cub_segmented(kind, dt, op, tmp.get(), b, in.get(), offs, c.count(), c.rows, c.cols, out.get(), s));
                  });
                } else {
                  // The faster of the two load kinds; both must be right.
                  const std::uint64_t words = d.in_bytes / 4;
                  Stats best;
                  for (int ef = 0; ef < 2; ++ef) {
                    const Stats st = timer.time(cold, out.get(), 4, [&] {
                      if (ef) ceiling<true>(DType::u32, Op::sum, in.get(), words, out.get(), dev.sm_count, s);
                      else ceiling<false>(DType::u32, Op::sum, in.get(), words, out.get(), dev.sm_count, s);
                    });
                    std::uint32_t got = 0;
                    CK(cudaMemcpy(&got, out.get(), 4, cudaMemcpyDeviceToHost));
                    if (got != d.ceiling_ref)
                      x.error += std::string(ef ? "evict-first" : "plain") + " got " + std::to_string(got) +
                                 ", expected " + std::to_string(d.ceiling_ref) + ". ";
                    if (ef == 0 || st.median_us < best.median_us) best = st;
                  }
                  x.st = best;
                  x.ok = x.error.empty();
                }
              });
              !e.empty())
                x.error = e; // a library error (argument, compile, store): this cell fails
              ++n_checks;
              if (row.failed(mode, w)) {
                ++n_failed;
                std::printf("\nFAILED: %s %s %s %s n=%s count=%s %s: %s\n", kWhoName[w],
                            std::string(reduce_tune::name(p)).c_str(), dtype_name(dt).c_str(),
                            op_name(op).c_str(), reduce_tune::format_size(c.n).c_str(),
                            reduce_tune::format_size(c.count()).c_str(), cold ? "cold" : "hot",
                            x.error.c_str());
              }
            }
            if (csv.is_open()) write_csv(csv, dev, p, dt, op, mode, row);
          }
          tables[{p, dt, op}].push_back(row);
        }
      }
  }

  for (const auto& [k, rows] : tables)
    for (int mode = 0; mode < (o.hot ? 2 : 1); ++mode)
      print_table(dev, std::get<0>(k), std::get<1>(k), std::get<2>(k), mode, rows);
  print_targets(tables);
  std::printf("\n**Summary**: %d results checked (every result of each), %d FAILED\n", n_checks, n_failed);
  return n_failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "reduce_bench_segmented: %s\n\n%s", e.what(), kUsage);
    return 3;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::printf("\nerror: %s\n", e.what());
    std::fprintf(stderr, "reduce_bench_segmented: error: %s\n", e.what());
    return 3;
  }
}
