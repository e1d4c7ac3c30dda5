// reduce-tune bench: the library's argmax beside CUB's (reduce_bench_cub_argmax), in one run on
// the same data: cub::DeviceReduce::ArgMax against Reducer::reduce_async on the 1-D problem, the
// fixed-size cub::DeviceSegmentedReduce::ArgMax (CCCL 3.2 and later; before, the offsets overload
// with counting-iterator offsets) against Reducer::reduce_rows on rows, and the offsets overload
// against Reducer::reduce_segments on skewed segments (bench/cub_argmax.h). Both timed with
// reduce_bench's method (bench/timer.cuh: cold L2, chunk medians); every result checked on the
// CPU (CUB's with bench/cub_argmax.h, the library's int64 indices against tuner/reference.h).
// Exit code: 0 all checks passed, 1 a check FAILED, 2 no CUDA device, 3 error.
#include "bench/cccl.h"
#include "bench/common.h"
#include "bench/cub_argmax.h"
#include "bench/data.h"
#include "bench/timer.cuh"
#include "kernels/half.h"
#include "tuner/reference.h"
#include "tuner/sizes.h"
#include "reduce_tune/reducer.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace rt_bench;
using reduce_tune::DType;

struct Options {
  std::vector<DType> dtypes{DType::f32};
  std::vector<std::uint64_t> totals{std::uint64_t(1) << 24};
  std::vector<std::uint64_t> lengths{1, 16, 256}; ///< row lengths
  std::vector<std::uint64_t> means{128};          ///< mean segment lengths
  TimerOptions timer;
  bool hot = false;
  bool self_test = false;
  int device = 0;
  std::uint64_t seed = 20240601;
  std::string db; ///< the Reducer's store ("": $REDUCE_TUNE_DB or the default path)
  std::string command;
};

const char* kUsage =
    "usage: reduce_bench_cub_argmax [options]\n"
    "  --dtypes LIST   int32,uint32,int64,float32,float64,bfloat16,float16 (default float32)\n"
    "  --totals LIST   elements per problem (default 2^24)\n"
    "  --lengths LIST  row lengths of the rows problem (default 1,16,256; none: no rows)\n"
    "  --means LIST    mean segment lengths of the offsets problem (default 128; none: no segments)\n"
    "  --reps N        timed calls (default 30)\n"
    "  --warmup N      warm-up calls (default 3)\n"
    "  --hot           no L2 flush before each call (default: cold)\n"
    "  --device N      CUDA device ordinal (default 0)\n"
    "  --seed N        data and offsets seed\n"
    "  --db PATH       tuning store for the Reducer (default $REDUCE_TUNE_DB, else the default path)\n"
    "  --self-test     check the CPU checks on fixed data (no GPU) and exit\n"
    "exit code: 0 all results correct, 1 a result FAILED its check, 2 no CUDA device, 3 error\n";

Options parse(int argc, char** argv) {
  Options o;
  o.timer.reps = 30;
  for (int i = 0; i < argc; ++i) o.command.append(i ? " " : "").append(argv[i]);
  for_each_flag(argc, argv, [&](const std::string& flag, const std::function<std::string()>& next) {
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--dtypes") {
      o.dtypes = dtypes_arg(flag, next());
    } else if (flag == "--totals") {
      o.totals = sizes_arg(flag, next());
    } else if (flag == "--lengths") {
      o.lengths = sizes_arg(flag, next());
    } else if (flag == "--means") {
      o.means = sizes_arg(flag, next());
    } else if (flag == "--reps") {
      o.timer.reps = int_arg(flag, next(), 1);
    } else if (flag == "--warmup") {
      o.timer.warmup = int_arg(flag, next(), 0);
    } else if (flag == "--hot") {
      o.hot = true;
    } else if (flag == "--device") {
      o.device = int_arg(flag, next(), 0);
    } else if (flag == "--self-test") {
      o.self_test = true;
    } else if (flag == "--db") {
      o.db = next();
    } else if (flag == "--seed") {
      o.seed = std::stoull(next());
    } else {
      throw UsageError("unknown option " + flag);
    }
  });
  return o;
}

/// Device memory freed on scope exit.
struct Buffer {
  void* p = nullptr;
  explicit Buffer(std::size_t bytes) { CK(cudaMalloc(&p, bytes ? bytes : 1)); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

/// One table row: the call timed, its bytes read, its check.
void report(const Device& dev, const char* problem, DType dt, std::uint64_t n, const std::string& shape,
            const char* api, const Stats& st, double bytes, const std::string& error, int& failed) {
  const double gbps = bytes / (st.median_us * 1e3);
  std::printf("| %s | %s | %s | %s | `%s` | %s | %.0f | %.1f %% | %s |\n", problem,
              dtype_name(dt).c_str(), reduce_tune::format_size(n).c_str(), shape.c_str(), api,
              us_str(st.median_us).c_str(), gbps, 100 * gbps / dev.peak_gbps,
              error.empty() ? "ok" : ("FAILED: " + error).c_str());
  std::fflush(stdout);
  failed += !error.empty();
}

/// (index, value) results laid out as cub_segmented_argmax writes them for T.
template <typename T> std::vector<unsigned char> pairs(DType dt, const std::vector<std::pair<int, T>>& r) {
  const std::size_t step = cub_arg_pair_bytes(dt), at = step - (sizeof(T) > 4 ? sizeof(T) : 4);
  std::vector<unsigned char> b(r.size() * step);
  for (std::size_t i = 0; i < r.size(); ++i) {
    std::memcpy(&b[i * step], &r[i].first, sizeof(int));
    std::memcpy(&b[i * step + at], &r[i].second, sizeof(T));
  }
  return b;
}

/// The CPU checks accept CUB's answer and reject near misses: a later tie, an int64 maximum that
/// doubles would round onto its neighbour, a 2-byte float, an empty segment's (1, lowest).
int self_test() {
  int bad = 0;
  auto expect = [&](bool accepted, const std::string& verdict, const char* what) {
    if (accepted != verdict.empty()) {
      std::printf("self-test FAILED: %s: %s\n", what, verdict.empty() ? "accepted" : verdict.c_str());
      ++bad;
    }
  };
  const float f[] = {1, 3, 3, 2};
  const float three = 3, two = 2;
  expect(true, check_cub_argmax(DType::f32, f, 4, &three, 1), "float32 first maximum");
  expect(false, check_cub_argmax(DType::f32, f, 4, &three, 2), "float32 later tie");
  expect(false, check_cub_argmax(DType::f32, f, 4, &two, 1), "float32 wrong value");
  const long long big[] = {(1LL << 62) + 2, (1LL << 62) + 3, (1LL << 62) + 1};
  expect(true, check_cub_argmax(DType::i64, big, 3, &big[1], 1), "int64 maximum");
  expect(false, check_cub_argmax(DType::i64, big, 3, &big[0], 0), "int64 neighbour");
  using reduce_tune::bf16_t;
  const bf16_t h[] = {bf16_t(0.5), bf16_t(-1.0), bf16_t(0.5)};
  expect(true, check_cub_argmax(DType::bf16, h, 3, &h[0], 0), "bfloat16 first maximum");
  expect(false, check_cub_argmax(DType::bf16, h, 3, &h[2], 2), "bfloat16 later tie");
  // Segments [0, 3), [3, 3) (empty), [3, 4) of {1, 5, 2, 7}.
  const float g[] = {1, 5, 2, 7};
  const std::int64_t offs[] = {0, 3, 3, 4};
  const float low = std::numeric_limits<float>::lowest();
  expect(true, check_cub_segmented_argmax(DType::f32, g, offs, 3, 0,
                                          pairs<float>(DType::f32, {{1, 5}, {1, low}, {0, 7}}).data()),
         "segments with an empty one");
  expect(false, check_cub_segmented_argmax(DType::f32, g, offs, 3, 0,
                                           pairs<float>(DType::f32, {{1, 5}, {0, 0}, {0, 7}}).data()),
         "an empty segment's value");
  // Rows of 2 of {1, 2, 4, 3} in float64: (1, 2), (0, 4).
  const double d[] = {1, 2, 4, 3};
  expect(true, check_cub_segmented_argmax(DType::f64, d, nullptr, 2, 2,
                                          pairs<double>(DType::f64, {{1, 2}, {0, 4}}).data()),
         "float64 rows");
  expect(false, check_cub_segmented_argmax(DType::f64, d, nullptr, 2, 2,
                                           pairs<double>(DType::f64, {{1, 2}, {1, 4}}).data()),
         "float64 row index");
  std::printf("self-test: %s\n", bad ? "FAILED" : "the checks accept the right answers and reject the wrong ones");
  return bad ? 1 : 0;
}

int run(const Options& o) {
  if (o.self_test) return self_test();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "reduce_bench_cub_argmax: no CUDA device\n");
    return 2;
  }
  const Device dev = open_device(o.device);
  reduce_tune::Options ro;
  ro.store_path = o.db;
  reduce_tune::Reducer reducer(o.device, ro);
  CK(cudaSetDevice(o.device)); // the reducer restores the caller's context; make sure it is ours
  std::printf("# argmax: reduce-tune beside CUB\n\n");
  std::printf("- **Device**: %s, %d SMs, L2 %.0f MiB, peak %.0f GB/s\n", dev.prop.name, dev.sm_count,
              dev.l2_bytes / 1048576.0, dev.peak_gbps);
  std::printf("- **CUB**: %s\n- **Date**: %s\n- **Command**: `%s`\n", cub_line().c_str(), today().c_str(),
              o.command.c_str());
  std::printf("- **Method**: reduce_bench's timer (%d warm-up + %d timed calls in 4 chunks, the lowest "
              "chunk median; %s); GB/s = bytes read (elements, and the offsets for segments) / time; "
              "both on the same data, every result checked on the CPU against the first maximum "
              "(CUB's rule: `>`, no NaN in the data; the library's int64 index against the CPU "
              "reference). reduce-tune: `Reducer::reduce_async / reduce_rows / reduce_segments` "
              "with `Op::argmax` and the tuning its lookup finds (the grade in the table).\n\n",
              o.timer.warmup, o.timer.reps, o.hot ? "hot: no L2 flush" : "cold: a 2 x L2 memset before each call");
  std::printf("| problem | dtype | n | shape | call | us | GB/s | %% peak | check |\n"
              "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |\n");
  Timer timer(dev, o.timer);
  const cudaStream_t s = timer.stream();
  const bool fixed = cub_fixed_size_segments();
  int failed = 0;
  struct Side { std::string problem, dtype, shape, config; double cub = 0, rt = 0; };
  std::vector<Side> sides;
  using reduce_tune::Op;
  using reduce_tune::Problem;
  // The library's indices (int64, `count` of them) against the CPU reference of `sg`.
  auto check_indices = [](const reduce_tune::HostArray& a, const reduce_tune::Segmentation& sg,
                          const void* d_out, std::uint64_t count) {
    reduce_tune::HostArray got{DType::i64, count, reduce_tune::HostBytes(count * 8)};
    CK(cudaMemcpy(got.bytes.data(), d_out, count * 8, cudaMemcpyDeviceToHost));
    const auto c = reduce_tune::check_segmented(reduce_tune::segmented_reference(a, sg, Op::argmax),
                                                got, sg, Op::argmax, [](std::uint64_t) { return 1; });
    return c.ok ? std::string() : "expected " + c.expected + ", got " + c.observed;
  };
  auto config_text = [](const reduce_tune::Choice& c) {
    return reduce_tune::key(c.config) + " (" + std::string(reduce_tune::name(c.match)) + ")";
  };
  for (DType dt : o.dtypes)
    for (std::uint64_t n : o.totals) {
      const std::size_t es = reduce_tune::size_of(dt);
      const auto host = make_data(dt, n, o.seed + std::uint64_t(dt));
      reduce_tune::HostArray ha{dt, n, reduce_tune::HostBytes(n * es)};
      std::memcpy(ha.bytes.data(), host.get(), n * es);
      Buffer in(n * es);
      CK(cudaMemcpy(in.p, host.get(), n * es, cudaMemcpyHostToDevice));
      {
        // 1-D: the value and its int64 index side by side in one output buffer.
        Buffer out(16);
        void* value = out.p;
        auto* index = reinterpret_cast<std::int64_t*>(static_cast<char*>(out.p) + 8);
        std::size_t bytes = 0;
        CK(cub_argmax(dt, nullptr, bytes, in.p, value, index, n, s));
        Buffer tmp(bytes);
        const Stats st = timer.time(!o.hot, out.p, 16, [&] {
          std::size_t b = bytes;
          CK(cub_argmax(dt, tmp.p, b, in.p, value, index, n, s));
        });
        unsigned char got[16];
        CK(cudaMemcpy(got, out.p, 16, cudaMemcpyDeviceToHost));
        std::int64_t idx = 0;
        std::memcpy(&idx, got + 8, 8);
        report(dev, "array", dt, n, "-", "cub::DeviceReduce::ArgMax", st, double(n * es),
               check_cub_argmax(dt, host.get(), n, got, idx), failed);
        const Stats rs = timer.time(!o.hot, out.p, 8, [&] {
          reducer.reduce_async(dt, Op::argmax, in.p, n, out.p, s);
        });
        reduce_tune::Segmentation whole;
        whole.problem = Problem::rows;
        whole.shape = {1, n};
        whole.stride = n;
        report(dev, "array", dt, n, "-", "reduce-tune argmax", rs, double(n * es),
               check_indices(ha, whole, out.p, 1), failed);
        sides.push_back({"array", dtype_name(dt), reduce_tune::format_size(n),
                         config_text(reducer.async_config_for(dt, Op::argmax, n)), st.median_us,
                         rs.median_us});
      }
      auto segmented = [&](const char* problem, CubKind kind, const char* api, std::uint64_t segs,
                           std::uint64_t cols, const std::vector<std::int64_t>& offsets,
                           const std::string& shape) {
        const std::size_t out_bytes = segs * cub_arg_pair_bytes(dt);
        Buffer out(out_bytes), offs(offsets.size() * 8);
        if (!offsets.empty())
          CK(cudaMemcpy(offs.p, offsets.data(), offsets.size() * 8, cudaMemcpyHostToDevice));
        const auto* d_offs = offsets.empty() ? nullptr : static_cast<const std::int64_t*>(offs.p);
        std::size_t bytes = 0;
        CK(cub_segmented_argmax(kind, dt, nullptr, bytes, in.p, d_offs, segs, cols, out.p, s));
        Buffer tmp(bytes);
        const Stats st = timer.time(!o.hot, out.p, out_bytes, [&] {
          std::size_t b = bytes;
          CK(cub_segmented_argmax(kind, dt, tmp.p, b, in.p, d_offs, segs, cols, out.p, s));
        });
        std::vector<unsigned char> got(out_bytes);
        CK(cudaMemcpy(got.data(), out.p, out_bytes, cudaMemcpyDeviceToHost));
        const double read = double(n * es + offsets.size() * 8);
        report(dev, problem, dt, n, shape, api, st, read,
               check_cub_segmented_argmax(dt, host.get(), offsets.empty() ? nullptr : offsets.data(),
                                          segs, cols, got.data()),
               failed);
        // The library's int64 indices (8 bytes a result: within CUB's pair buffer).
        reduce_tune::Segmentation sg;
        sg.shape = {segs, offsets.empty() ? cols : n / segs};
        reduce_tune::Choice choice;
        Stats rs;
        if (offsets.empty()) {
          sg.problem = Problem::rows;
          sg.stride = cols;
          rs = timer.time(!o.hot, out.p, segs * 8, [&] {
            reducer.reduce_rows(dt, Op::argmax, in.p, segs, cols, out.p, s);
          });
          choice = reducer.config_for(dt, Op::argmax, Problem::rows, sg.shape);
        } else {
          sg.problem = Problem::segments;
          sg.offsets = offsets;
          rs = timer.time(!o.hot, out.p, segs * 8, [&] {
            reducer.reduce_segments(dt, Op::argmax, in.p, d_offs, segs, out.p, s, n);
          });
          choice = reducer.segments_config_for(dt, Op::argmax, in.p, segs, n);
        }
        report(dev, problem, dt, n, shape, "reduce-tune argmax", rs, read,
               check_indices(ha, sg, out.p, segs), failed);
        sides.push_back({problem, dtype_name(dt), shape, config_text(choice), st.median_us, rs.median_us});
      };
      for (std::uint64_t len : o.lengths) {
        if (len > n || n % len) continue;
        segmented("rows", fixed ? CubKind::row_fixed : CubKind::row_iterator,
                  fixed ? "cub::DeviceSegmentedReduce::ArgMax(num_segments, segment_size)"
                        : "cub::DeviceSegmentedReduce::ArgMax(counting-iterator offsets)",
                  n / len, len, {}, reduce_tune::format_size(n / len) + " x " + reduce_tune::format_size(len));
      }
      for (std::uint64_t mean : o.means) {
        if (mean > n) continue;
        const std::uint64_t segs = n / mean;
        segmented("segments", CubKind::offsets, "cub::DeviceSegmentedReduce::ArgMax(int64 offsets)", segs, 0,
                  reduce_tune::skewed_offsets(segs, n, o.seed),
                  reduce_tune::format_size(segs) + " x " + reduce_tune::format_size(mean) + " (mean)");
      }
    }
  std::printf("\n| problem | dtype | shape | CUB us | reduce-tune us | CUB / reduce-tune | reduce-tune's configuration |\n"
              "| --- | --- | ---: | ---: | ---: | ---: | --- |\n");
  for (const Side& d : sides)
    std::printf("| %s | %s | %s | %s | %s | %.2fx | `%s` |\n", d.problem.c_str(), d.dtype.c_str(),
                d.shape.c_str(), us_str(d.cub).c_str(), us_str(d.rt).c_str(), d.cub / d.rt,
                d.config.c_str());
  std::printf("\n%s\n", failed ? "Some results FAILED their check." : "All results checked: correct.");
  return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "reduce_bench_cub_argmax: %s\n\n%s", e.what(), kUsage);
    return 3;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "reduce_bench_cub_argmax: error: %s\n", e.what());
    return 3;
  }
}
