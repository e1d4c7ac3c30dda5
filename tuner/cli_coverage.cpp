// reduce-tune coverage: what the library would run on a GPU, problem by problem, dtype by dtype and
// op by op: tuned here, shipped, carried from another GPU, related, or the built-in defaults, over
// the default sweep's points; and the command that tunes what this GPU has not tuned itself.
#include "tuner/cli_coverage.h"

#include "db/store.h"
#include "kernels/driver.h"
#include "runtime/lookup.h"
#include "kernels/user_op.h"
#include "runtime/shipped.h"
#include "runtime/user_lookup.h"
#include "tuner/cli.h"
#include "tuner/cli_info.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sweep.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace po = boost::program_options;

namespace reduce_tune {
namespace {

constexpr Problem kProblems[] = {Problem::array, Problem::rows, Problem::columns, Problem::segments};
constexpr Op kOps[] = {Op::sum, Op::min, Op::max};
constexpr DType kDTypes[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};

/// The points coverage looks up: the default sweep's sizes or shapes at their lookup buckets, at
/// most about a dozen spread over the grid (each lookup reads the stores' rows of the problem).
std::vector<Shape> points(Problem p) {
  std::vector<Shape> all;
  if (p == Problem::array) {
    for (std::uint64_t n : default_sizes()) all.push_back({1, n});
  } else {
    all = default_shapes(p);
  }
  constexpr std::size_t kMost = 12;
  const std::size_t stride = (all.size() + kMost - 1) / kMost;
  std::vector<Shape> out;
  for (std::size_t i = 0; i < all.size(); i += stride) out.push_back(lookup_point(all[i]));
  return out;
}

/// "shipped 10/10" or "shipped 8/10, builtin 2/10": the grades over the points, best first.
std::string grades_text(const std::map<Match, int>& grades, std::size_t total) {
  std::string s;
  for (const auto& [m, k] : grades)
    s += (s.empty() ? "" : ", ") + std::string(name(m)) + " " + std::to_string(k) + "/" + std::to_string(total);
  return s;
}

std::string join(const std::set<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ",") + i;
  return s;
}

/// The user reductions the stores keep (tune --reduction): per reduction, problem and dtype it has
/// rows of on any GPU, the grades of its lookup (lookup_user) at the default sweep's points.
void print_user_reductions(const db::Store* store, const db::Store* shipped, const DeviceKey& gpu) {
  std::map<std::uint64_t, db::ReductionRecord> kept;
  std::map<std::uint64_t, std::set<std::pair<Problem, DType>>> tuned;
  for (const db::Store* st : {store, shipped}) {
    if (!st) continue;
    for (db::ReductionRecord& r : st->reductions()) kept.emplace(r.hash, std::move(r));
    for (const db::DeviceRecord& d : st->devices())
      for (const db::Best& b : st->user_bests(d.uuid)) tuned[*b.user].insert({b.problem, b.dtype});
  }
  if (kept.empty()) return;
  std::printf("\n%zu user reduction%s (reduce-tune tune --reduction FILE tunes one):\n", kept.size(),
              kept.size() == 1 ? "" : "s");
  for (const auto& [hash, r] : kept) {
    const std::string label = r.op_key().name();
    std::shared_ptr<const UserOp> u;
    try {
      u = make_user_op(parse_reduction(r.text));
    } catch (const ReductionError& e) {
      std::printf("  %s: its stored description does not parse here: %s\n", label.c_str(), e.what());
      continue;
    }
    if (tuned[hash].empty()) {
      std::printf("  %s: no rows on any GPU\n", label.c_str());
      continue;
    }
    for (const auto& [p, dt] : tuned[hash]) {
      std::map<Match, int> grades;
      const std::vector<Shape> at = points(p);
      try {
        for (Shape s : at) ++grades[lookup_user(store, shipped, gpu, *u, dt, p, s, Requirements{}).match];
      } catch (const ReductionError& e) {
        std::printf("  %s %-9s %-9s %s\n", label.c_str(), std::string(name(p)).c_str(),
                    std::string(name(dt)).c_str(), e.what());
        continue;
      }
      std::printf("  %s %-9s %-9s %s\n", label.c_str(), std::string(name(p)).c_str(),
                  std::string(name(dt)).c_str(), grades_text(grades, at.size()).c_str());
    }
  }
}

} // namespace

int cmd_coverage(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune coverage options");
  std::string db_path, uuid;
  int device = -1;
  desc.add_options()
    ("help,h", "this help")
    ("device", po::value(&device), "GPU ordinal (its identity and figures are read from the GPU)")
    ("uuid", po::value(&uuid), "a GPU as stored, or the shipped tuning's model:NAME (works without a GPU)")
    ("db", po::value(&db_path), "tuning database (default $REDUCE_TUNE_DB or the XDG data dir)");
  auto vm = cli::parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  if ((device < 0) == uuid.empty()) throw cli::Usage("coverage needs one of --device or --uuid");

  const std::string path = db_path.empty() ? db::default_store_path() : db_path;
  auto src = lookup_sources(path, uuid, device);
  if (!src) return 1;
  const auto& [store, shipped, why_store, why_shipped, gpu] = *src;

  std::printf("%s (sm_%d%d, %d SMs, %.0f MiB L2, %.0f GB/s)\n", gpu.name.c_str(), gpu.cc_major, gpu.cc_minor,
              gpu.sm_count, double(gpu.l2_bytes) / (1 << 20), gpu.peak_gbps);
  std::printf("your store:      %s\n", store ? path.c_str() : why_store.c_str());
  if (shipped) {
    std::string models;
    for (const auto& d : shipped->devices()) models += (models.empty() ? "" : ", ") + d.name;
    std::printf("shipped tuning:  %s (%s)\n", shipped_source().describe().c_str(), models.c_str());
  } else {
    std::printf("shipped tuning:  none: %s\n", why_shipped.c_str());
  }
  std::printf("\n%-9s %-9s %-4s  %s\n", "problem", "dtype", "op", "grade at the default sweep's points");

  // What this GPU has not tuned itself, per problem: the dtypes and ops to sweep.
  std::map<Problem, std::pair<std::set<std::string>, std::set<std::string>>> untuned;
  for (Problem p : kProblems) {
    const std::vector<Shape> at = points(p);
    Requirements req; // as the Reducer asks: segmented results stay on the device
    req.device_result = p != Problem::array;
    for (DType dt : kDTypes)
      for (Op op : kOps) {
        std::map<Match, int> grades;
        std::string source;
        for (Shape s : at) {
          const Choice c = lookup(store.get(), shipped.get(), gpu, dt, op, p, s, req);
          ++grades[c.match];
          if (source.empty() && c.match != Match::exact && c.match != Match::nearest_size &&
              c.match != Match::builtin)
            source = c.match == Match::related || c.match == Match::carried ? c.note : "from " + c.device_name;
        }
        std::printf("%-9s %-9s %-4s  %s%s\n", std::string(name(p)).c_str(), std::string(name(dt)).c_str(),
                    std::string(name(op)).c_str(), grades_text(grades, at.size()).c_str(),
                    source.empty() ? "" : ("  (" + source + ")").c_str());
        if (grades.size() > std::size_t(grades.count(Match::exact) + grades.count(Match::nearest_size))) {
          untuned[p].first.insert(std::string(name(dt)));
          untuned[p].second.insert(std::string(name(op)));
        }
      }
  }
  // The call points programs made here without an exact tuning (Options::record), with the grade
  // they ran with and the one they would get now.
  std::vector<db::RecordedPoint> recorded;
  if (store)
    for (db::RecordedPoint& r : store->recorded())
      if (r.device_uuid == gpu.uuid || r.device_name == gpu.name) recorded.push_back(std::move(r));
  if (!recorded.empty()) {
    std::printf("\n%zu call points recorded without an exact tuning (reduce-tune tune --recorded tunes them):\n",
                recorded.size());
    for (const db::RecordedPoint& r : recorded) {
      Requirements req;
      req.device_result = r.problem != Problem::array;
      std::string now;
      if (!r.user) {
        now = name(lookup(store.get(), shipped.get(), gpu, r.dtype, r.op, r.problem, r.shape, req).match);
      } else {
        // A user reduction's point: its lookup, from the description the store keeps for it.
        now = "unknown (no description kept)";
        if (const auto kept = store->reduction(*r.user)) {
          try {
            const auto u = make_user_op(parse_reduction(kept->text));
            req.device_result = true; // every user reduction's call writes device memory
            now = name(lookup_user(store.get(), shipped.get(), gpu, *u, r.dtype, r.problem, r.shape, req).match);
          } catch (const ReductionError& e) {
            now = std::string("unknown (") + e.what() + ")";
          }
        }
      }
      std::printf("  %-9s %-9s %-4s %llu x %llu: %s when recorded, %s now\n", std::string(name(r.problem)).c_str(),
                  std::string(name(r.dtype)).c_str(), r.op_key().name().c_str(),
                  (unsigned long long)r.shape.count, (unsigned long long)r.shape.length, r.grade.c_str(),
                  now.c_str());
    }
  }
  print_user_reductions(store.get(), shipped.get(), gpu);
  if (untuned.empty()) {
    std::printf("\nEverything is tuned on this GPU.\n");
    return 0;
  }
  std::string cmd;
  const std::string gpu_arg = device >= 0 ? "--device " + std::to_string(device) : "--device N";
  for (const auto& [p, what] : untuned)
    cmd += (cmd.empty() ? "" : " && ") + std::string("reduce-tune tune ") + gpu_arg + " --problem " +
           std::string(name(p)) + " --dtypes " + join(what.first) + " --ops " + join(what.second) +
           (db_path.empty() ? "" : " --db " + db_path);
  std::printf("\nTo tune the rest on this GPU (it then answers exact or nearest_size):\n  %s\n", cmd.c_str());
  return 0;
}

} // namespace reduce_tune
