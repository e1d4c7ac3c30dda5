// reduce-tune replay: search strategies against recorded measurements.
#include "tuner/replay.h"

#include "kernels/catalogue.h"
#include "kernels/segmented.h"
#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "tuner/measure.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sweep_search.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

namespace reduce_tune {
namespace {

/// One point's recorded measurements: each configuration's latest valid time (or its failure).
struct Recorded {
  std::vector<Config> configs;
  std::vector<double> us;     ///< infinity for a configuration that failed its check
  std::vector<std::string> keys;
};

using PointKey = std::tuple<DType, Op, Problem, std::uint64_t, std::uint64_t>;

PointId point_of(const PointKey& k) {
  const auto [dtype, op, problem, count, length] = k;
  return {dtype, op, problem, Shape{count, length}};
}

} // namespace

ReplaySummary replay(const db::Store& store, const ReplayOptions& o) {
  ReplaySummary out;
  // Every device's points, recorded.
  std::map<std::string, std::map<PointKey, Recorded>> all;
  std::map<std::string, db::DeviceRecord> devices;
  for (const db::DeviceRecord& d : store.devices()) {
    devices[d.uuid] = d;
    auto& points = all[d.uuid];
    std::map<PointKey, std::map<std::string, double>> latest;
    for (const db::Measurement& m : store.measurements(d.uuid)) {
      const PointKey k{m.dtype, m.op, m.problem, m.count, m.n};
      latest[k][m.key] = m.valid && std::isfinite(m.median_us) ? m.median_us : INFINITY;
    }
    for (auto& [k, by_key] : latest) {
      Recorded r;
      for (const auto& [key_text, us] : by_key)
        if (auto c = parse_key(key_text)) r.configs.push_back(*c), r.us.push_back(us), r.keys.push_back(key_text);
      if (o.every_twin) {
        // The search's candidates on the GPU: every plain configuration's evict-first twin, where
        // its variant has one, recorded or not (NaN: not recorded).
        const std::size_t n = r.configs.size();
        for (std::size_t i = 0; i < n; ++i) {
          std::optional<Config> t = evict_first_twin(r.configs[i]);
          if (!t) continue;
          std::string tk = key(*t);
          if (by_key.count(tk)) continue;
          r.configs.push_back(std::move(*t)), r.us.push_back(NAN), r.keys.push_back(std::move(tk));
        }
      }
      if (std::count_if(r.us.begin(), r.us.end(), [](double v) { return std::isfinite(v); }) >= 2)
        points.emplace(k, std::move(r));
    }
  }
  std::size_t used = 0, basis_total = 0;
  for (const auto& [uuid, points] : all) {
    const db::DeviceRecord& dev = devices[uuid];
    const DeviceKey gpu = device_key(dev);
    // The sweep's order: a problem's shapes by their element count, then their length.
    std::vector<const std::pair<const PointKey, Recorded>*> order;
    for (const auto& entry : points) order.push_back(&entry);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
      const auto [d1, o1, p1, c1, l1] = a->first;
      const auto [d2, o2, p2, c2, l2] = b->first;
      return std::tuple(p1, d1, c1 * l1, l1, o1) < std::tuple(p2, d2, c2 * l2, l2, o2);
    });
    // A point's basis, from which a search's budget is dealt and its share counted: for guided
    // and random, the measurements the GPU's exhaustive default sweep takes there, its candidates
    // but of a segmented point's evict-first twins at most TwinFilter::kKeep (the 1-D sweep
    // measures every twin), whether the store holds those only (offered every twin, the others
    // are not recorded) or every one (`tune --every-twin`); for exhaustive, every candidate.
    std::vector<std::pair<PointId, std::size_t>> planned;
    for (const auto* entry : order) {
      const Recorded& rec = entry->second;
      std::size_t n = rec.us.size();
      if (o.strategy != Strategy::exhaustive && std::get<Problem>(entry->first) != Problem::array) {
        const auto twins = std::size_t(std::count_if(rec.configs.begin(), rec.configs.end(),
                                                     [](const Config& c) { return evict_first_twin_of(c).has_value(); }));
        n = n - twins + std::min(twins, TwinFilter::kKeep);
      }
      planned.emplace_back(point_of(entry->first), n);
    }
    SweepSearch search(o.strategy, o.budget, planned);
    SeedBook& book = search.seeds();
    // Other GPUs' tuning: the exhaustive best of the store's other GPUs, and the rows of another
    // store (the shipped tuning) of every GPU model but this one.
    if (o.hints_from_other_gpus)
      for (const auto& [other, their] : all) {
        if (other == uuid || devices[other].name == dev.name) continue;
        for (const auto& [k, rec] : their) {
          const auto b = std::size_t(std::min_element(rec.us.begin(), rec.us.end()) - rec.us.begin());
          book.elsewhere(point_of(k), {rec.configs[b]});
        }
      }
    if (o.hints)
      for (const db::DeviceRecord& d : o.hints->devices()) {
        if (d.name == dev.name) continue;
        std::map<PointKey, std::vector<std::pair<double, Config>>> rows;
        for (const db::Measurement& m : o.hints->measurements(d.uuid))
          if (m.valid && std::isfinite(m.median_us))
            if (auto c = parse_key(m.key)) rows[{m.dtype, m.op, m.problem, m.count, m.n}].emplace_back(m.median_us, *c);
        for (auto& [k, list] : rows) {
          std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
          std::vector<Config> cs;
          for (auto& [us, c] : list) cs.push_back(c);
          book.elsewhere(point_of(k), std::move(cs));
        }
      }
    if (o.defaults)
      book.defaults([&gpu](const PointId& p) { return builtin_config(p.problem, p.dtype, p.op, p.shape, {}, gpu); });
    for (std::size_t at = 0; at < order.size(); ++at) {
      const auto* entry = order[at];
      const PointKey& k = entry->first;
      const Recorded& rec = entry->second;
      const PointId point = point_of(k);
      const std::size_t basis = planned[at].second;
      std::size_t best_at = rec.us.size();
      std::vector<std::pair<std::string, double>> trace;
      std::size_t unrecorded = 0;
      const std::size_t measured = search.run(point, rec.configs, [&](std::size_t i) {
        trace.emplace_back(rec.keys[i], rec.us[i]);
        unrecorded += std::isnan(rec.us[i]);
        if (std::isfinite(rec.us[i]) && (best_at == rec.us.size() || rec.us[i] < rec.us[best_at])) best_at = i;
        return rec.us[i];
      });
      const auto truth = std::size_t(std::min_element(rec.us.begin(), rec.us.end()) - rec.us.begin());
      ReplayPoint p;
      p.device = dev.name, p.dtype = point.dtype, p.op = point.op, p.problem = point.problem, p.shape = point.shape;
      p.candidates = rec.us.size(), p.measured = measured;
      p.best_us = rec.us[truth], p.best_key = rec.keys[truth];
      p.trace = std::move(trace);
      if (best_at < rec.us.size()) p.found_us = rec.us[best_at], p.found_key = rec.keys[best_at];
      used += measured;
      p.basis = basis;
      basis_total += basis;
      out.unrecorded += unrecorded, out.unrecorded_points += unrecorded > 0;
      out.points.push_back(p);
    }
  }
  std::vector<double> ratios;
  for (const auto& p : out.points) ratios.push_back(p.ratio());
  if (!ratios.empty()) {
    out.median = median(ratios);
    out.worst = *std::min_element(ratios.begin(), ratios.end());
  }
  out.share = basis_total ? double(used) / double(basis_total) : 0;
  return out;
}

db::Store open_replay_store(const std::string& path, std::vector<unsigned char>& image) {
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return db::Store(path, db::Store::Mode::read_only);
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  image.clear();
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) image.insert(image.end(), buf, buf + n);
  int err = 0;
  const std::string msg = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) throw std::runtime_error(path + ": not a readable gzip file: " + msg);
  // A store written in WAL mode says so in its header (bytes 18 and 19: 2), and SQLite reads such
  // an image in memory as unopenable; a file copied whole after its last connection closed holds
  // everything in itself, so it reads as the rollback-journal file it then is.
  if (image.size() > 19 && image[18] == 2 && image[19] == 2) image[18] = image[19] = 1;
  return db::Store(std::span<const unsigned char>(image), path);
}

} // namespace reduce_tune
