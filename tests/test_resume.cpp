// A resumed segmented sweep decides the evict-first twins as the uninterrupted sweep did: the twin
// filter is seeded from the stored times of the plain configurations the resumed sweep skips. No
// GPU: the decisions are a pure function of the times (tests/test_gpu_resume.cpp measures).
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/segmented.h"
#include "tuner/segmented_sweep.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

using namespace reduce_tune;

namespace {

/// The rows sweep's configurations, plain ones first (the sweep's order), and their keys.
struct Sweep {
  std::vector<Config> ordered;
  std::set<std::string> keys;
};

Sweep rows_sweep() {
  Sweep s;
  for (const Variant& v : variants(Problem::rows))
    for (const Config& c : space(v)) s.ordered.push_back(c);
  std::stable_partition(s.ordered.begin(), s.ordered.end(),
                        [](const Config& c) { return !evict_first_twin_of(c); });
  for (const Config& c : s.ordered) s.keys.insert(key(c));
  return s;
}

/// A configuration's time at the point: distinct, in no order related to the sweep's.
double time_of(const Config& c) {
  std::uint64_t h = 1469598103934665603ull;
  for (char ch : key(c)) h = (h ^ std::uint8_t(ch)) * 1099511628211ull;
  return 1.0 + double(h % 100000) / 1000.0;
}

db::Measurement stored_row(const Config& c, double us, bool valid = true) {
  db::Measurement m;
  m.key = key(c);
  m.problem = Problem::rows;
  m.valid = valid;
  m.median_us = valid ? us : 0;
  return m;
}

/// What a sweep of one point measures, in order, as measure_segmented decides: a configuration the
/// store holds is skipped, a twin the filter rejects is skipped, the rest are measured (and a
/// plain configuration's time ranks the twins). `filter` starts as the sweep seeds it.
std::vector<std::string> sweep_point(const Sweep& s, const std::vector<db::Measurement>& store, TwinFilter filter) {
  std::set<std::string> held;
  for (const auto& m : store) held.insert(m.key);
  std::vector<std::string> measured;
  for (const Config& c : s.ordered) {
    const std::string k = key(c);
    if (held.count(k) || filter.skip(c)) continue;
    measured.push_back(k);
    filter.measured(c, time_of(c));
  }
  return measured;
}

std::vector<db::Measurement> rows_of(const std::vector<std::string>& keys) {
  std::vector<db::Measurement> out;
  for (const auto& k : keys) {
    const Config c = *parse_key(k);
    out.push_back(stored_row(c, time_of(c)));
  }
  return out;
}

TwinFilter seeded(const Sweep& s, const std::vector<db::Measurement>& store) {
  TwinFilter f;
  f.stored(store, s.keys);
  return f;
}

} // namespace

TEST_CASE("resume: the rows sweep has more plain configurations with twins than the filter keeps", "[resume]") {
  const Sweep s = rows_sweep();
  std::size_t with_twin = 0;
  std::set<std::string> plains_of_twins;
  for (const Config& c : s.ordered)
    if (auto p = evict_first_twin_of(c)) plains_of_twins.insert(key(*p));
  for (const auto& k : plains_of_twins) with_twin += s.keys.count(k);
  // Otherwise every twin is measured and the tests below could not tell a seeded filter from none.
  REQUIRE(with_twin > TwinFilter::kKeep);
}

TEST_CASE("resume: interrupted anywhere, the resumed sweep measures exactly what the uninterrupted one "
          "still would", "[resume]") {
  const Sweep s = rows_sweep();
  const std::vector<std::string> full = sweep_point(s, {}, TwinFilter{});
  REQUIRE(full.size() < s.ordered.size()); // some twins were left out
  for (std::size_t k = 0; k <= full.size(); ++k) {
    INFO("interrupted after " << k << " of " << full.size() << " measurements");
    const std::vector<std::string> done(full.begin(), full.begin() + std::ptrdiff_t(k));
    const std::vector<db::Measurement> store = rows_of(done);
    const std::vector<std::string> rest = sweep_point(s, store, seeded(s, store));
    CHECK(rest == std::vector<std::string>(full.begin() + std::ptrdiff_t(k), full.end()));
  }
}

TEST_CASE("resume: a complete store resumes to no measurement; without the stored times it would not",
          "[resume]") {
  const Sweep s = rows_sweep();
  const std::vector<db::Measurement> store = rows_of(sweep_point(s, {}, TwinFilter{}));
  CHECK(sweep_point(s, store, seeded(s, store)).empty());
  // The filter as it was before seeding: every twin whose plain configuration is stored is measured.
  CHECK_FALSE(sweep_point(s, store, TwinFilter{}).empty());
}

TEST_CASE("resume: the seed takes valid times of this sweep's plain configurations, the latest of each",
          "[resume]") {
  const Sweep s = rows_sweep();
  std::vector<Config> plains;
  for (const Config& c : s.ordered)
    if (!evict_first_twin_of(c)) {
      Config t = c;
      t.variant += "_streaming";
      if (s.keys.count(key(t))) plains.push_back(c);
    }
  REQUIRE(plains.size() > TwinFilter::kKeep + 1);
  auto twin = [](Config c) {
    c.variant += "_streaming";
    return c;
  };
  // The first kKeep plain configurations are the fastest; the next one is seventh.
  std::vector<db::Measurement> store;
  for (std::size_t i = 0; i <= TwinFilter::kKeep; ++i) store.push_back(stored_row(plains[i], 10.0 + double(i)));
  const Config seventh = plains[TwinFilter::kKeep];
  CHECK(seeded(s, store).skip(twin(seventh)));
  CHECK_FALSE(seeded(s, store).skip(twin(plains[0])));

  // A later measurement of the fastest makes it the slowest: the seventh moves up.
  auto later = store;
  later.push_back(stored_row(plains[0], 100.0));
  CHECK_FALSE(seeded(s, later).skip(twin(seventh)));
  CHECK(seeded(s, later).skip(twin(plains[0])));

  // A failed check ranks nothing: the fastest's twin is measured, as when the sweep found it failed.
  auto failed = store;
  failed[0] = stored_row(plains[0], 0, false);
  CHECK_FALSE(seeded(s, failed).skip(twin(seventh)));

  // Times of configurations outside this sweep (an earlier, wider one) do not rank this sweep's.
  Sweep narrow = s;
  narrow.keys.erase(key(plains[0]));
  TwinFilter f;
  f.stored(store, narrow.keys);
  CHECK_FALSE(f.skip(twin(seventh)));
}
