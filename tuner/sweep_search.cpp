// reduce-tune: the sweep's search at each point (tuner/sweep_search.h).
#include "tuner/sweep_search.h"

#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "runtime/shipped.h"
#include "runtime/store_rows.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <tuple>

namespace reduce_tune {

SweepSearch::SweepSearch(Strategy strategy, const Budget& budget,
                         const std::vector<std::pair<PointId, std::size_t>>& points)
    : strategy_(strategy), budget_(budget) {
  std::vector<std::size_t> sizes;
  for (const auto& [p, n] : points) sizes.push_back(n);
  const std::vector<std::size_t> plan = budget.plan(sizes);
  for (std::size_t i = 0; i < points.size(); ++i) limits_[points[i].first] = plan[i];
}

std::size_t SweepSearch::limit(const PointId& p, std::size_t candidates) const {
  const auto it = limits_.find(p);
  return std::min(candidates, it == limits_.end() ? budget_.limit(candidates) : it->second);
}

std::size_t SweepSearch::run(const PointId& p, const std::vector<Config>& candidates,
                             const std::function<double(std::size_t)>& measure, const std::function<bool()>& stop) {
  std::size_t visited = 0;
  if (strategy_ == Strategy::exhaustive) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (stop && stop()) break;
      ++visited;
      measure(i);
    }
    return visited;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (known_ && !known_asked_) {
    for (const auto& [q, n] : limits_)
      if (const std::optional<Config> c = known_(q)) book_.elsewhere(q, {*c});
    known_asked_ = true;
  }
  if (known_ && !limits_.count(p))
    if (const std::optional<Config> c = known_(p)) book_.elsewhere(p, {*c});
  auto search = make_search(strategy_, candidates, book_.hints(p), limit(p, candidates.size()),
                            p.shape.count * 0x9e3779b97f4a7c15ull ^ p.shape.length ^ std::uint64_t(p.dtype));
  seeding_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::pair<Config, double>> measured;
  while (const auto i = search->next()) {
    if (stop && stop()) break;
    ++visited;
    const double us = measure(*i);
    const bool valid = std::isfinite(us);
    search->observe(*i, valid ? us : INFINITY, valid);
    if (!std::isnan(us)) measured.emplace_back(candidates[*i], valid ? us : INFINITY);
  }
  book_.found(p, measured);
  return visited;
}

namespace {

/// A point's fastest valid rows a snapshot keeps: the lookup passes over rows invalid for the call
/// to the next fastest at the shape, rarely more than a few.
constexpr std::size_t kSnapshotRows = 8;

/// The user's store as the run found it, reduced to what the lookup answers from for `problems`:
/// every device's kSnapshotRows fastest valid rows a point, in memory. A lookup reads every row of
/// the problem it is asked about, for every device, and a store that holds exhaustive sweeps has
/// tens of thousands: read once here, not once a point. The lookups then see the tuning known
/// before the run (this GPU's earlier runs, other GPUs), not the points the run measures, which
/// seed the search through its own book (the replay's model). nullptr when the store is empty.
std::shared_ptr<db::Store> snapshot(const db::Store& store, const std::vector<Problem>& problems) {
  auto mem = std::make_shared<db::Store>(":memory:");
  bool any = false;
  for (const db::DeviceRecord& d : store.devices()) {
    std::vector<db::Measurement> keep;
    for (Problem problem : problems) {
      db::MeasurementFilter f;
      f.problem = problem;
      std::map<std::tuple<DType, Op, std::uint64_t, std::uint64_t>, std::vector<db::Measurement>> by_point;
      for (db::Measurement& m : store.measurements(d.uuid, f))
        if (m.valid && std::isfinite(m.median_us)) by_point[{m.dtype, m.op, m.count, m.n}].push_back(std::move(m));
      for (auto& [k, rows] : by_point) {
        // Fastest first; equal medians keep the store's order, as the lookup does.
        std::stable_sort(rows.begin(), rows.end(),
                         [](const db::Measurement& a, const db::Measurement& b) { return a.median_us < b.median_us; });
        if (rows.size() > kSnapshotRows) rows.resize(kSnapshotRows);
        for (db::Measurement& m : rows) keep.push_back(std::move(m));
      }
    }
    mem->upsert_device(d);
    if (keep.empty()) continue;
    db::RunRecord run;
    run.device_uuid = d.uuid;
    run.tool_version = "snapshot";
    mem->add_measurements(mem->begin_run(run), keep);
    any = true;
  }
  return any ? mem : nullptr;
}

} // namespace

SweepSearch sweep_search(Strategy strategy, const Budget& budget,
                         const std::vector<std::pair<PointId, std::size_t>>& points, const db::Store* store,
                         const DeviceKey& device) {
  SweepSearch s(strategy, budget, points);
  if (strategy == Strategy::exhaustive) return s;
  std::string why;
  std::shared_ptr<db::Store> shipped(open_shipped_store(&why));
  std::shared_ptr<db::Store> before;
  if (store) {
    std::vector<Problem> problems;
    for (const auto& [p, n] : points)
      if (std::find(problems.begin(), problems.end(), p.problem) == problems.end()) problems.push_back(p.problem);
    try {
      before = snapshot(*store, problems);
    } catch (const db::StoreError&) {
      before = nullptr; // seeds the less; the sweep itself reports a store it cannot write
    }
  }
  // Both stores' rows read once, not by each point's lookup (runtime/store_rows.h).
  std::shared_ptr<const StoreRows> before_rows, shipped_rows;
  try {
    if (before) before_rows = std::make_shared<StoreRows>(*before);
    if (shipped) shipped_rows = std::make_shared<StoreRows>(*shipped);
  } catch (const db::StoreError&) {
    before_rows = shipped_rows = nullptr; // no seeds from the stores, as where a lookup fails
  }
  s.known([before_rows, shipped_rows, device](const PointId& p) -> std::optional<Config> {
    try {
      const Choice c = lookup_rows(before_rows.get(), shipped_rows.get(), device, p.dtype, p.op, p.problem, p.shape, {});
      if (c.match == Match::builtin) return std::nullopt;
      return c.config;
    } catch (const db::StoreError&) {
      return std::nullopt; // a seed the less; the sweep itself reports a store it cannot write
    }
  });
  s.seeds().defaults([device](const PointId& p) { return builtin_config(p.problem, p.dtype, p.op, p.shape, {}, device); });
  return s;
}

} // namespace reduce_tune
