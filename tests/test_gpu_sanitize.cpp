// GPU runs for compute-sanitizer (scripts/gpu-sanitize.sh): every valid configuration reduces
// once, through the library's path (KernelLoader, plan, reduce_once; no poisoned buffers, so that
// initcheck sees what a user's call reads), at a few sizes. Hidden tags: the normal GPU run skips
// them; select with "[sanitize]" or "[sanitize-volatile]". Environment, all optional:
//   RT_SANITIZE_DTYPES    dtypes, default int32,float32 (op: RT_SANITIZE_OPS, default sum)
//   RT_SANITIZE_SIZES     sizes, default 1000,2^20+1
//   RT_SANITIZE_VARIANTS  catalogue names, default all
// Each (dtype, op, n) prints one progress line, so a run cut short by a time limit still says how
// far it got.
#include <catch2/catch.hpp>

#include "tests/gpu_fixture.h"
#include "tuner/sizes.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace reduce_tune;
using testing::Gpu;
using testing::gpu;

namespace {

std::vector<std::string> env_list(const char* var, const char* fallback) {
  const char* e = std::getenv(var);
  std::vector<std::string> out;
  std::stringstream s(e && *e ? e : fallback);
  for (std::string tok; std::getline(s, tok, ',');)
    if (!tok.empty()) out.push_back(tok);
  return out;
}

struct Outcome {
  std::size_t configs = 0, wrong = 0;
  std::vector<std::string> wrong_keys;
};

/// Runs every configuration `pick` admits (among those valid for the target, volatile tails
/// admitted when `unsafe`) once per size for each dtype and op of the environment.
std::vector<Outcome> run_all(bool unsafe, bool (*pick)(const Config&)) {
  Gpu& g = gpu();
  std::vector<DType> dtypes;
  std::vector<Op> ops;
  for (const auto& d : env_list("RT_SANITIZE_DTYPES", "int32,float32")) dtypes.push_back(parse_dtype(d).value());
  for (const auto& o : env_list("RT_SANITIZE_OPS", "sum")) ops.push_back(parse_op(o).value());
  std::string why;
  const auto sizes = parse_sizes(std::getenv("RT_SANITIZE_SIZES") ? std::getenv("RT_SANITIZE_SIZES") : "1000,2^20+1", &why);
  INFO(why);
  REQUIRE(sizes);
  const auto only = env_list("RT_SANITIZE_VARIANTS", "");
  std::vector<Outcome> outcomes;
  for (DType d : dtypes)
    for (Op op : ops) {
      const Target t{d, op, g.info.cc(), g.info.max_threads_per_block, g.info.sm_count, unsafe};
      std::vector<CompileJob> jobs;
      for (const Variant& v : variants()) {
        if (!only.empty() && std::find(only.begin(), only.end(), v.name) == only.end()) continue;
        for (const Config& c : space(v))
          if (!invalid_reason(c, t) && pick(c)) jobs.push_back({c, d, op});
      }
      for (const auto& o : compile_all(g.loader, jobs, 0)) REQUIRE(o.error.empty());
      Workspace ws;
      for (std::uint64_t n : *sizes) {
        const HostArray data = make_input(d, n, 2024 + n);
        const Reference ref = reference(data, op);
        cuda::Buffer in(n * size_of(d));
        reduce_tune::cuda::upload_sync(in.get(), data.bytes.data(), data.bytes.size());
        Outcome out;
        for (const CompileJob& j : jobs) {
          const Kernel k = g.loader.load(j.config, d, op);
          const LaunchPlan p = plan(j.config, t, n);
          ws.reserve(p, d, n);
          const Scalar got = reduce_once(k, p, in.get(), n, ws, g.stream.get());
          ++out.configs;
          if (!check(ref, got, op, summation_depth(j.config, t, n)).ok) {
            ++out.wrong;
            out.wrong_keys.push_back(key(j.config) + " got " + got.to_string() + ", expected " +
                                     ref.value.to_string());
          }
        }
        std::printf("sanitize: %s %s n=%s: %zu configurations, %zu wrong\n", std::string(name(d)).c_str(),
                    std::string(name(op)).c_str(), format_size(n).c_str(), out.configs, out.wrong);
        for (const auto& w : out.wrong_keys) std::printf("  wrong: %s\n", w.c_str());
        std::fflush(stdout);
        outcomes.push_back(std::move(out));
      }
    }
  return outcomes;
}

} // namespace

TEST_CASE("every valid configuration, once per size, for compute-sanitizer", "[.sanitize]") {
  for (const Outcome& o : run_all(false, [](const Config&) { return true; })) {
    CHECK(o.configs > 0);
    CHECK(o.wrong == 0);
  }
}

// The material's warp-synchronous volatile tail is invalid on sm_70+ (independent thread
// scheduling) unless admitted for study; this runs it there so that racecheck can say what it
// sees. Wrong results are reported, not failed: the point is the sanitizer's report.
TEST_CASE("the material's volatile tail on sm_70+, for racecheck", "[.sanitize-volatile]") {
  std::size_t configs = 0, wrong = 0;
  for (const Outcome& o : run_all(true, [](const Config& c) { return c.tail == Tail::volatile_; })) {
    configs += o.configs;
    wrong += o.wrong;
  }
  std::printf("volatile tail: %zu runs, %zu wrong results\n", configs, wrong);
  WARN("volatile tail: " << configs << " runs, " << wrong << " wrong results");
  CHECK(configs > 0);
}
