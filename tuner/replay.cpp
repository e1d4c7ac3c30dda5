// reduce-tune replay: search strategies against recorded measurements.
#include "tuner/replay.h"

#include "kernels/catalogue.h"
#include "runtime/defaults.h"
#include "runtime/lookup.h"
#include "tuner/measure.h"

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

double log_distance(Shape a, Shape b) {
  return std::abs(std::log2(double(std::max<std::uint64_t>(a.count, 1)) / double(std::max<std::uint64_t>(b.count, 1)))) +
         std::abs(std::log2(double(std::max<std::uint64_t>(a.length, 1)) / double(std::max<std::uint64_t>(b.length, 1))));
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
      if (std::count_if(r.us.begin(), r.us.end(), [](double v) { return std::isfinite(v); }) >= 2)
        points.emplace(k, std::move(r));
    }
  }
  std::size_t used = 0, recorded = 0;
  for (const auto& [uuid, points] : all) {
    const db::DeviceRecord& dev = devices[uuid];
    const DeviceKey gpu = device_key(dev);
    // What the search measured so far on this GPU, fastest first per point, for the next points'
    // seeds.
    std::map<PointKey, std::vector<Config>> found;
    for (const auto& [k, rec] : points) {
      const auto [dtype, op, problem, count, length] = k;
      const Shape shape{count, length};
      Hints hints;
      // 1. Another GPU's best at this point (the shipped or carried tuning of a GPU being tuned).
      if (o.hints_from_other_gpus)
        for (const auto& [other, their] : all) {
          if (other == uuid) continue;
          if (auto it = their.find(k); it != their.end()) {
            const auto b = std::min_element(it->second.us.begin(), it->second.us.end());
            hints.seeds.push_back(it->second.configs[std::size_t(b - it->second.us.begin())]);
          }
        }
      // 2. This search's choices at the nearest points searched before (same dtype and op first).
      // Their three fastest each, the nearest point's first.
      std::vector<std::pair<double, const std::vector<Config>*>> near;
      for (const auto& [pk, cs] : found) {
        const auto [d2, o2, p2, c2, l2] = pk;
        if (p2 != problem) continue;
        near.emplace_back(log_distance(shape, {c2, l2}) + (d2 == dtype && o2 == op ? 0 : 0.5), &cs);
      }
      std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t rank = 0; rank < 3; ++rank)
        for (std::size_t i = 0; i < std::min<std::size_t>(near.size(), 2); ++i)
          if (rank < near[i].second->size()) hints.seeds.push_back((*near[i].second)[rank]);
      // 3. The built-in default for the point.
      hints.seeds.push_back(builtin_config(problem, dtype, op, shape, {}, gpu));

      auto search = make_search(o.strategy, rec.configs, hints, o.budget, o.seed ^ (count * 0x9e37u) ^ length);
      std::size_t measured = 0, best_at = rec.us.size();
      std::vector<std::size_t> tried;
      while (auto i = search->next()) {
        ++measured;
        tried.push_back(*i);
        search->observe(*i, rec.us[*i], std::isfinite(rec.us[*i]));
        if (std::isfinite(rec.us[*i]) && (best_at == rec.us.size() || rec.us[*i] < rec.us[best_at])) best_at = *i;
      }
      const auto truth = std::size_t(std::min_element(rec.us.begin(), rec.us.end()) - rec.us.begin());
      ReplayPoint p;
      p.device = dev.name, p.dtype = dtype, p.op = op, p.problem = problem, p.shape = shape;
      p.candidates = rec.us.size(), p.measured = measured;
      p.best_us = rec.us[truth], p.best_key = rec.keys[truth];
      if (best_at < rec.us.size()) {
        p.found_us = rec.us[best_at], p.found_key = rec.keys[best_at];
        const std::vector<double>& us = rec.us; // a structured binding: not capturable before C++20 in clang 14
        std::stable_sort(tried.begin(), tried.end(), [&us](std::size_t a, std::size_t b) { return us[a] < us[b]; });
        auto& mine = found[k];
        for (std::size_t i : tried) mine.push_back(rec.configs[i]);
      }
      used += measured;
      recorded += rec.us.size();
      out.points.push_back(p);
    }
  }
  std::vector<double> ratios;
  for (const auto& p : out.points) ratios.push_back(p.ratio());
  if (!ratios.empty()) {
    out.median = median(ratios);
    out.worst = *std::min_element(ratios.begin(), ratios.end());
  }
  out.share = recorded ? double(used) / double(recorded) : 0;
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
