// reduce-tune replay: a search strategy judged offline against a store's exhaustive measurements.
#include "tuner/cli_replay.h"

#include "tuner/cli.h"
#include "tuner/measure.h"
#include "tuner/replay.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace po = boost::program_options;

namespace reduce_tune {
namespace {

struct Tally {
  std::vector<double> ratios;
  std::size_t used = 0, basis = 0; // measurements used; the points' basis (ReplayPoint::basis)
};

} // namespace

int cmd_replay(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune replay options");
  std::string db_path, search_text = "guided", budget_text = "5%", baseline_text = "random";
  std::uint64_t seed = 1;
  std::string hints_path;
  bool no_other = false, no_defaults = false, points = false, every_twin = false;
  std::size_t worst_n = 0;
  std::vector<std::string> traces;
  desc.add_options()
    ("help,h", "this help")
    ("db", po::value(&db_path), "a store of exhaustive sweeps (.db, or .db.gz)")
    ("search", po::value(&search_text)->default_value(search_text), "guided, random or exhaustive")
    ("budget", po::value(&budget_text)->default_value(budget_text),
     "measurements a point (e.g. 40) or a share of its configurations (e.g. 5%, at least 3)")
    ("baseline", po::value(&baseline_text)->default_value(baseline_text),
     "a second strategy replayed at the same budget, shown beside ('none': no second)")
    ("seed", po::value(&seed)->default_value(seed), "seed of the random strategy")
    ("no-other-gpus", po::bool_switch(&no_other), "no hints from the other GPUs of the store")
    ("hints", po::value(&hints_path),
     "another store (e.g. the shipped tuning.db) whose rows of other GPU models seed the search")
    ("no-defaults", po::bool_switch(&no_defaults), "no seed from the built-in defaults")
    ("every-twin", po::bool_switch(&every_twin),
     "offer the search every evict-first twin, as on the GPU (the store holds only those of each point's fastest "
     "plain configurations: one it lacks costs a measurement and gives no time)")
    ("points", po::bool_switch(&points), "print every point")
    ("worst", po::value(&worst_n), "print the N points where the search ended farthest from the best, worst first")
    ("trace", po::value(&traces)->composing(),
     "print what the search measured, in order, at the points named so (e.g. \"float32 sum columns 8192x2048\"; "
     "a part of a name names every point it is part of)");
  auto vm = cli::parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  if (db_path.empty()) throw cli::Usage("replay needs --db STORE");
  const auto strategy = parse_strategy(search_text);
  if (!strategy) throw cli::Usage("--search: unknown strategy '" + search_text + "' (guided, random or exhaustive)");
  std::string why;
  const auto budget = parse_budget(budget_text, &why);
  if (!budget) throw cli::Usage("--budget '" + budget_text + "': " + why);
  std::optional<Strategy> baseline;
  if (baseline_text != "none") {
    baseline = parse_strategy(baseline_text);
    if (!baseline) throw cli::Usage("--baseline: unknown strategy '" + baseline_text + "'");
  }
  std::vector<unsigned char> image;
  const db::Store store = open_replay_store(db_path, image);

  std::vector<unsigned char> hints_image;
  std::optional<db::Store> hints;
  if (!hints_path.empty()) hints.emplace(open_replay_store(hints_path, hints_image));

  ReplayOptions o;
  o.strategy = *strategy, o.budget = *budget, o.seed = seed, o.hints_from_other_gpus = !no_other;
  o.hints = hints ? &*hints : nullptr, o.defaults = !no_defaults, o.every_twin = every_twin;
  const ReplaySummary main = replay(store, o);
  if (main.points.empty()) {
    std::fprintf(stderr, "replay: %s holds no point with two or more valid measurements\n", db_path.c_str());
    return 1;
  }
  ReplaySummary second;
  if (baseline) {
    ReplayOptions b = o;
    b.strategy = *baseline;
    second = replay(store, b);
  }
  auto line = [](const ReplayPoint& p) {
    std::printf("%s %s %s %s %llu x %llu: %zu of %zu, best %s %.2f us, found %s %.2f us (%.3f)\n", p.device.c_str(),
                std::string(name(p.dtype)).c_str(), std::string(name(p.op)).c_str(),
                std::string(name(p.problem)).c_str(), (unsigned long long)p.shape.count,
                (unsigned long long)p.shape.length, p.measured, p.candidates, p.best_key.c_str(), p.best_us,
                p.found_key.c_str(), p.found_us, p.ratio());
  };
  // Per GPU and problem.
  std::map<std::pair<std::string, Problem>, std::pair<Tally, Tally>> by;
  for (std::size_t i = 0; i < main.points.size(); ++i) {
    const auto& p = main.points[i];
    auto& [a, b] = by[{p.device, p.problem}];
    a.ratios.push_back(p.ratio()), a.used += p.measured, a.basis += p.basis;
    if (i < second.points.size())
      b.ratios.push_back(second.points[i].ratio()), b.used += second.points[i].measured, b.basis += p.basis;
    if (points) line(p);
  }
  for (const std::string& wanted : traces) {
    // Names compared without spaces: "8192x2048" and "8192 x 2048" name one shape.
    auto bare = [](std::string t) {
      t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
      return t;
    };
    std::size_t shown = 0;
    for (const auto& p : main.points) {
      const std::string label = std::string(name(p.dtype)) + " " + std::string(name(p.op)) + " " +
                                std::string(name(p.problem)) + " " + std::to_string(p.shape.count) + "x" +
                                std::to_string(p.shape.length);
      if (bare(label).find(bare(wanted)) == std::string::npos) continue;
      ++shown;
      line(p);
      double best = INFINITY;
      for (std::size_t i = 0; i < p.trace.size(); ++i) {
        const auto& [key, us] = p.trace[i];
        const bool better = us < best;
        if (better) best = us;
        if (std::isnan(us)) std::printf("  %2zu %-48s not recorded\n", i + 1, key.c_str());
        else std::printf("  %2zu %-48s %10.2f us%s\n", i + 1, key.c_str(), us, better ? "  *" : "");
      }
    }
    if (!shown) std::printf("no point named '%s'\n", wanted.c_str());
    std::printf("\n");
  }
  if (worst_n) {
    // Worst first; ties in the replay's order, so the list is the same from run to run.
    std::vector<std::size_t> order(main.points.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return main.points[a].ratio() < main.points[b].ratio(); });
    std::printf("the %zu worst points of %s:\n", std::min(worst_n, order.size()), search_text.c_str());
    for (std::size_t i = 0; i < order.size() && i < worst_n; ++i) line(main.points[order[i]]);
    std::printf("\n");
  }
  std::printf("| GPU | problem | points | %s median | worst | measured |", search_text.c_str());
  if (baseline) std::printf(" %s median | worst | measured |", baseline_text.c_str());
  std::printf("\n|---|---|---:|---:|---:|---:|%s\n", baseline ? "---:|---:|---:|" : "");
  for (const auto& [k, t] : by) {
    const auto& [a, b] = t;
    std::printf("| %s | %s | %zu | %.3f | %.3f | %.1f%% |", k.first.c_str(), std::string(name(k.second)).c_str(),
                a.ratios.size(), median(a.ratios), *std::min_element(a.ratios.begin(), a.ratios.end()),
                100.0 * double(a.used) / double(a.basis));
    if (baseline)
      std::printf(" %.3f | %.3f | %.1f%% |", median(b.ratios), *std::min_element(b.ratios.begin(), b.ratios.end()),
                  100.0 * double(b.used) / double(b.basis));
    std::printf("\n");
  }
  // What the guided search started from: never the replayed GPU's own answer at a point.
  std::string seeds = "the best of the nearest points searched before in the run";
  if (!no_other) seeds += ", the exhaustive best of the store's other GPU models";
  if (hints) seeds += ", the rows of " + hints_path + " for GPU models other than the one replayed";
  if (!no_defaults) seeds += ", the built-in defaults";
  std::printf("\nseeds: %s\n", seeds.c_str());
  if (baseline)
    std::printf("%s at the same budget: median %.2f, worst %.2f of the exhaustive best with %.1f%% of the measurements\n",
                baseline_text.c_str(), second.median, second.worst, 100 * second.share);
  if (every_twin)
    std::printf("twins the store lacks: %zu measurements asked for one, at %zu of %zu points\n", main.unrecorded,
                main.unrecorded_points, main.points.size());
  std::printf("replay: median %.2f, worst %.2f of the exhaustive best with %.1f%% of the measurements\n", main.median,
              main.worst, 100 * main.share);
  return 0;
}

} // namespace reduce_tune
