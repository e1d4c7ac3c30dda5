// Tests of the search strategies (tuner/search.cpp) on synthetic landscapes: budgets, the order of
// the exhaustive search, and that the guided search climbs to a known optimum.
#include <catch2/catch.hpp>

#include "tuner/search.h"
#include "tuner/measure.h"
#include "tuner/sweep_search.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <set>

using namespace reduce_tune;

namespace {

std::vector<Config> grid() {
  std::vector<Config> out;
  for (const char* v : {"streaming", "vectorized"})
    for (int b : {128, 256, 512, 1024})
      for (int u : {1, 2, 4, 8})
        for (int vec : {1, 2, 4}) {
          Config c;
          c.variant = v, c.block = b, c.unroll = u, c.vec = vec;
          out.push_back(c);
        }
  return out;
}

/// A smooth landscape with its optimum at vectorized b512 u4 v4.
double cost(const Config& c) {
  return 10 + (c.variant == "streaming" ? 3 : 0) + std::abs(std::log2(c.block / 512.0)) +
         std::abs(std::log2(c.unroll / 4.0)) + std::abs(std::log2(c.vec / 4.0));
}

std::size_t run(Search& s, const std::vector<Config>& cs, std::size_t* best) {
  std::size_t n = 0;
  double best_t = 1e300;
  while (auto i = s.next()) {
    ++n;
    const double t = cost(cs[*i]);
    s.observe(*i, t, true);
    if (t < best_t) best_t = t, *best = *i;
  }
  return n;
}

/// Two variants of one set of parameters (vectorized, and streaming, alike but slower) and one of
/// others (unrolling: no vec, no grid), fastest of all at 1024 threads and slow at 128.
std::vector<Config> three_variants() {
  std::vector<Config> cs;
  for (const char* v : {"vectorized", "streaming"})
    for (int b : {128, 256, 512})
      for (int u : {1, 2, 4, 8})
        for (int vec : {1, 2, 4})
          for (int g : {2, 4, 8}) {
            Config c;
            c.variant = v, c.block = b, c.unroll = u, c.vec = vec, c.grid = g;
            cs.push_back(c);
          }
  for (int b : {128, 256, 512, 1024})
    for (int u : {1, 2, 4, 8}) {
      Config c;
      c.variant = "unrolling", c.block = b, c.unroll = u;
      cs.push_back(c);
    }
  return cs;
}

double three_variants_cost(const Config& c) {
  const double u = std::abs(std::log2(c.unroll / 4.0));
  if (c.variant == "unrolling") return 8 + 1.5 * std::log2(1024.0 / c.block) + u;
  return 10 + (c.variant == "streaming" ? 1.0 : 0.0) + std::abs(std::log2(c.block / 128.0)) + u +
         std::abs(std::log2(c.vec / 4.0)) + std::abs(std::log2(c.grid / 4.0));
}

} // namespace

TEST_CASE("search: budgets as counts or shares", "[search]") {
  CHECK(parse_budget("40")->limit(1000) == 40);
  CHECK(parse_budget("40")->limit(10) == 10);
  CHECK(parse_budget("5%")->limit(1000) == 50);
  CHECK(parse_budget("5%")->limit(20) == 3); // at least 3
  // A run's share: dealt by the fourth root of each point's candidates, within the share.
  const std::vector<std::size_t> points = {1000, 1000, 60, 60, 60, 60, 60, 60, 60, 60, 4};
  const std::vector<std::size_t> plan = parse_budget("5%")->plan(points);
  std::size_t sum = 0, all = 0;
  for (std::size_t i = 0; i < points.size(); ++i) sum += plan[i], all += points[i];
  CHECK(double(sum) <= 0.05 * double(all));
  CHECK(plan[0] < 50);          // less than 5% of a large point ...
  CHECK(plan[2] > 3);           // ... for more than 5% of a small one
  CHECK(plan.back() == 4);      // a point of 4 candidates: all of them
  CHECK(plan[2] > plan.back());
  // A share too small for the floor: every point gets the floor (or all its candidates).
  const std::vector<std::size_t> tight = parse_budget("1%")->plan(points);
  CHECK(tight.front() == 3);
  CHECK(tight.back() == 3);
  CHECK(parse_budget("7")->plan({1000, 4}) == std::vector<std::size_t>{7, 4});
  std::string why;
  for (const char* bad : {"", "0", "-3", "2.5", "101%", "x", "5%%"}) {
    CHECK_FALSE(parse_budget(bad, &why));
    CHECK_THAT(why, Catch::Contains("expected"));
  }
  CHECK(parse_strategy("guided") == Strategy::guided);
  CHECK_FALSE(parse_strategy("annealing"));
}

TEST_CASE("search: exhaustive takes every candidate once, last first; random its budget", "[search]") {
  const auto cs = grid();
  auto e = make_search(Strategy::exhaustive, cs, {}, Budget{});
  std::set<std::size_t> seen;
  std::optional<std::size_t> first;
  while (auto i = e->next()) {
    if (!first) first = *i;
    CHECK(seen.insert(*i).second);
  }
  CHECK(seen.size() == cs.size());
  CHECK(*first == cs.size() - 1);
  auto r = make_search(Strategy::random, cs, {}, *parse_budget("10"), 7);
  std::size_t best = 0;
  CHECK(run(*r, cs, &best) == 10);
}

TEST_CASE("search: guided climbs from a poor seed to the optimum within its budget", "[search]") {
  const auto cs = grid();
  Hints h;
  Config seed;
  seed.variant = "streaming", seed.block = 128, seed.unroll = 1, seed.vec = 1;
  h.seeds.push_back(seed);
  auto g = make_search(Strategy::guided, cs, h, *parse_budget("30"));
  std::size_t best = 0;
  const std::size_t used = run(*g, cs, &best);
  CHECK(used <= 30);
  CHECK(cs[best].variant == "vectorized");
  CHECK(cost(cs[best]) == Approx(10));
  // A seed that is the optimum is measured first.
  Hints at;
  at.seeds.push_back(cs[best]);
  auto g2 = make_search(Strategy::guided, cs, at, *parse_budget("3"));
  CHECK(g2->next() == best);
}

TEST_CASE("search: guided keeps measurements for a variant none of its seeds is of", "[search]") {
  // Every seed is of one variant (as where the nearest points all found it best); the other
  // variant is faster everywhere, and only a measurement kept from the seeds finds it.
  const auto cs = grid();
  auto slow_seeded = [](const Config& c) { return c.variant == "streaming"; };
  auto t = [&](const Config& c) { return cost(c) + (slow_seeded(c) ? 2.0 : 0.0); };
  Hints h;
  for (int b : {128, 256, 512, 1024})
    for (int u : {2, 4}) {
      Config seed;
      seed.variant = "streaming", seed.block = b, seed.unroll = u, seed.vec = 4;
      h.seeds.push_back(seed);
    }
  const std::size_t limit = 12;
  auto g = make_search(Strategy::guided, cs, h, limit);
  std::vector<std::size_t> order;
  double best_t = 1e300;
  std::size_t best = 0;
  while (auto i = g->next()) {
    order.push_back(*i);
    g->observe(*i, t(cs[*i]), true);
    if (t(cs[*i]) < best_t) best_t = t(cs[*i]), best = *i;
  }
  CHECK(order.size() == limit);
  // Seven seeds at most (a quarter of the budget for moves, two for other variants), then the
  // other variant.
  const auto first_other = std::find_if(order.begin(), order.end(), [&](std::size_t i) { return !slow_seeded(cs[i]); });
  REQUIRE(first_other != order.end());
  CHECK(std::size_t(first_other - order.begin()) <= 7);
  CHECK(cs[best].variant == "vectorized");
  // A budget of three keeps none: the first two seeds, then a move.
  auto small = make_search(Strategy::guided, cs, h, 3);
  std::vector<std::string> measured;
  while (auto i = small->next()) {
    measured.push_back(key(cs[*i]));
    small->observe(*i, t(cs[*i]), true);
  }
  REQUIRE(measured.size() == 3);
  CHECK(measured[0] == key(h.seeds[0]));
  CHECK(measured[1] == key(h.seeds[1]));
}

TEST_CASE("search: guided probes an unseeded variant where another GPU found it best nearby", "[search]") {
  // The seeds are all vectorized at 128 threads. The old probe of an unseeded variant, its
  // candidate nearest to the best so far, measures unrolling at 128 threads (slower than the
  // seeds) and never reaches 1024; with another GPU's best at a nearby shape (unrolling at 1024
  // threads) among the hints, the probe is made there and finds the optimum.
  const std::vector<Config> cs = three_variants();
  auto t = three_variants_cost;
  Hints h;
  for (int u : {2, 4, 8})
    for (int g : {2, 4}) {
      Config seed;
      seed.variant = "vectorized", seed.block = 128, seed.unroll = u, seed.vec = 4, seed.grid = g;
      h.seeds.push_back(seed);
    }
  Config there; // another GPU's best at a nearby shape
  there.variant = "unrolling", there.block = 1024, there.unroll = 4;
  auto best_of = [&](const Hints& hints) {
    auto g = make_search(Strategy::guided, cs, hints, 10);
    double best = 1e300;
    std::size_t n = 0;
    while (auto i = g->next()) {
      ++n;
      g->observe(*i, t(cs[*i]), true);
      best = std::min(best, t(cs[*i]));
    }
    CHECK(n == 10);
    return best;
  };
  CHECK(best_of(h) > 9.9); // without: the seeded variant's best, no better
  Hints with = h;
  Config seeded = h.seeds[0]; // a nearby best of a variant the seeds are of: passed over
  with.nearby = {seeded, there};
  CHECK(best_of(with) == Approx(8));
}

TEST_CASE("search: the seeds name other GPUs' best at the nearest shapes, nearest first", "[search]") {
  SeedBook book;
  auto at = [](std::uint64_t count, std::uint64_t length, DType d = DType::f32) {
    return PointId{d, Op::sum, Problem::segments, Shape{count, length}};
  };
  auto config = [](const char* variant, int block) {
    Config c;
    c.variant = variant, c.block = block;
    return c;
  };
  book.elsewhere(at(512, 128), {config("segments_flat", 128), config("segments_flat", 256)});
  book.elsewhere(at(128, 512, DType::i32), {config("segments_block", 512)}); // another dtype of its size
  book.elsewhere(at(8, 8192), {config("segments_split", 256)});             // farther
  book.elsewhere(PointId{DType::f32, Op::sum, Problem::rows, Shape{512, 128}}, {config("rows_block", 256)});
  const Hints h = book.hints(at(512, 128));
  // Each point's best only, the point itself first, another problem's never.
  REQUIRE(h.nearby.size() == 3);
  CHECK(h.nearby[0] == config("segments_flat", 128));
  CHECK(h.nearby[1] == config("segments_block", 512));
  CHECK(h.nearby[2] == config("segments_split", 256));
}

TEST_CASE("search: guided spends its last measurements on the runner-up's evict-first twin", "[search]") {
  // Plain and evict-first columns_split configurations. The plain landscape is smooth with its
  // optimum at b256 u4 v1 g4 (A), and every evict-first twin is slower than its plain one, except
  // the twin of v2 (B, ranked second among the plain ones): the optimum, as a twin wins with some
  // loads and loses with others.
  std::vector<Config> cs;
  for (const char* v : {"columns_split", "columns_split_streaming"})
    for (int b : {128, 256, 512})
      for (int u : {1, 2, 4})
        for (int vec : {1, 2, 4})
          for (int g : {2, 4}) {
            Config c;
            c.variant = v, c.block = b, c.unroll = u, c.vec = vec, c.grid = g;
            c.finish = Finish::atomic;
            cs.push_back(c);
          }
  auto plain_cost = [](const Config& c) {
    if (c.block == 256 && c.unroll == 4 && c.vec == 2 && c.grid == 4) return 10.3;
    return 10 + std::abs(std::log2(c.block / 256.0)) + std::abs(std::log2(c.unroll / 4.0)) +
           std::abs(std::log2(double(c.vec))) + std::abs(std::log2(c.grid / 4.0));
  };
  auto cost = [&](const Config& c) {
    const bool twin = c.variant == "columns_split_streaming";
    if (twin && c.block == 256 && c.unroll == 4 && c.vec == 2 && c.grid == 4) return 9.0;
    return plain_cost(c) + (twin ? 1.0 : 0.0);
  };
  Config a;
  a.variant = "columns_split", a.block = 256, a.unroll = 4, a.vec = 1, a.grid = 4, a.finish = Finish::atomic;
  Config b = a;
  b.vec = 2;
  Config optimum = b;
  optimum.variant = "columns_split_streaming";
  Hints h;
  h.seeds = {a, b};
  for (std::size_t limit : {6, 8}) {
    auto g = make_search(Strategy::guided, cs, h, limit);
    std::vector<std::string> order;
    while (auto i = g->next()) {
      order.push_back(key(cs[*i]));
      g->observe(*i, cost(cs[*i]), true);
    }
    CHECK(order.size() == limit);
    REQUIRE(order.size() >= 3);
    CHECK(order[0] == key(a));
    CHECK(order[1] == key(b));
    Config twin_a = a;
    twin_a.variant = "columns_split_streaming";
    CHECK(order[2] == key(twin_a)); // the best's twin first, as before
    // The runner-up's twin within the last two measurements, not before.
    const auto at = std::find(order.begin(), order.end(), key(optimum));
    REQUIRE(at != order.end());
    CHECK(std::size_t(at - order.begin()) >= limit - 2);
  }
}

TEST_CASE("search: a sweep's point loop keeps the run's budget and seeds each point from the last", "[search]") {
  const auto cs = grid();
  std::vector<std::pair<PointId, std::size_t>> points;
  for (std::uint64_t n : {1u << 20, 1u << 22, 1u << 24})
    points.emplace_back(PointId{DType::f32, Op::sum, Problem::array, Shape{1, n}}, cs.size());
  SweepSearch s(Strategy::guided, *parse_budget("10%"), points);
  std::size_t total = 0;
  std::vector<std::string> first_of_point;
  for (const auto& [p, n] : points) {
    std::size_t calls = 0;
    const std::size_t visited = s.run(p, cs, [&](std::size_t i) {
      if (calls++ == 0) first_of_point.push_back(key(cs[i]));
      return cost(cs[i]);
    });
    CHECK(visited == calls);
    CHECK(visited <= s.limit(p, cs.size()));
    total += visited;
  }
  CHECK(double(total) <= 0.10 * double(cs.size() * points.size()));
  // The later points start where the first one ended: the optimum of the shared landscape.
  Config optimum;
  optimum.variant = "vectorized", optimum.block = 512, optimum.unroll = 4, optimum.vec = 4;
  REQUIRE(first_of_point.size() == 3);
  CHECK(first_of_point[0] != key(optimum));
  CHECK(first_of_point[1] == key(optimum));
  CHECK(first_of_point[2] == key(optimum));

  // Exhaustive: every candidate in order, until stop says so.
  SweepSearch e(Strategy::exhaustive, Budget{}, points);
  std::vector<std::size_t> order;
  e.run(points[0].first, cs, [&](std::size_t i) { return order.push_back(i), cost(cs[i]); },
        [&] { return order.size() == 5; });
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("search: a sweep asks what is known of every planned point before the first search", "[search]") {
  // What is known of a later point (another GPU's best there: unrolling at 1024 threads) directs
  // the first point's probe of a variant its seed is not of.
  const std::vector<Config> cs = three_variants();
  const PointId first{DType::f32, Op::sum, Problem::array, Shape{1, 1u << 20}};
  const PointId later{DType::f32, Op::sum, Problem::array, Shape{1, 1u << 21}};
  std::vector<std::pair<PointId, std::size_t>> points = {{first, cs.size()}, {later, cs.size()}};
  SweepSearch s(Strategy::guided, *parse_budget("10"), points);
  std::vector<PointId> asked;
  s.known([&](const PointId& p) -> std::optional<Config> {
    asked.push_back(p);
    Config c;
    if (p.shape.length == first.shape.length) c.variant = "vectorized", c.block = 128, c.unroll = 4, c.vec = 4, c.grid = 4;
    else c.variant = "unrolling", c.block = 1024, c.unroll = 4;
    return c;
  });
  double best = 1e300;
  s.run(first, cs, [&](std::size_t i) { return best = std::min(best, three_variants_cost(cs[i])), three_variants_cost(cs[i]); });
  CHECK(asked.size() == 2); // both points, once
  CHECK(best == Approx(8));
  s.run(later, cs, [&](std::size_t i) { return three_variants_cost(cs[i]); });
  CHECK(asked.size() == 2); // not asked again
}

TEST_CASE("first-use deadline: a search stops once past it, with three measurements, one valid", "[search][autotune]") {
  const auto now_s = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  PastDeadline none(0);
  for (int i = 0; i < 5; ++i) none.count(1.0);
  CHECK_FALSE(none()); // no deadline

  PastDeadline past(now_s() - 1); // passed already
  CHECK_FALSE(past());
  past.count(NAN);      // not measured (stored, pointless): does not count
  past.count(INFINITY); // failed its check: counts, not valid
  past.count(INFINITY);
  past.count(INFINITY);
  CHECK_FALSE(past()); // three measured, none valid: go on
  past.count(5.0);
  CHECK(past());

  PastDeadline later(now_s() + 3600);
  for (int i = 0; i < 5; ++i) later.count(1.0);
  CHECK_FALSE(later()); // not yet
  CHECK(later.expected_s() < 60);
}

TEST_CASE("first-use deadline: a search starts no measurement expected to end past it", "[search][autotune]") {
  const auto now_s = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  // Three measurements of at least 0.2 s each, before a deadline 0.75 s ahead: the fourth is
  // expected to take 0.2 s more, so it would end past the deadline (0.6 + 0.2 > 0.75).
  PastDeadline near(now_s() + 0.75);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    near.count(1.0);
  }
  CHECK(near.expected_s() >= 0.2);
  CHECK(near());
  // The same measurements with an hour to go: on.
  PastDeadline far(now_s() + 3600);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    far.count(1.0);
  }
  CHECK(far.expected_s() >= 0.02);
  CHECK_FALSE(far());
}

TEST_CASE("profile: the counts of inputs made ahead, references from prefix sums and inputs read back", "[search][profile]") {
  SweepTimes t;
  t.total_s = 10, t.input_s = 1, t.reference_s = 1, t.input_check_s = 0.5;
  t.inputs = 20, t.points = 142;
  const std::string plain = profile_text(t);
  CHECK(plain.find("generated ahead") == std::string::npos);
  CHECK(plain.find("prefix sums") == std::string::npos);
  t.inputs_ahead = 19, t.prefix_points = 100, t.input_checks = 20;
  const std::string counted = profile_text(t);
  CHECK(counted.find("19 generated ahead, while the one before was measured") != std::string::npos);
  CHECK(counted.find("(100 from their input's prefix sums)") != std::string::npos);
  CHECK(counted.find("straight") == std::string::npos); // none made straight into the GPU check's data
  CHECK(counted.find("20 input(s) read back and compared") != std::string::npos);
  t.inputs_hashed = 18; // the GPU's hash matched the host's for 18 of them
  CHECK_THAT(profile_text(t), Catch::Contains("20 input(s) checked: 18 by their hash on the GPU, the rest read back"));
  t.prefix_straight = 90, t.references_on_demand = 2; // of the 100, 90 without References, 2 made for a CPU check
  CHECK_THAT(profile_text(t), Catch::Contains("(100 from their input's prefix sums, 90 of them made from the prefix sums "
                                              "straight into the GPU check's data, their References made only where "
                                              "the CPU checked their results (2))"));
}

TEST_CASE("profile: the timed batches' holds and their reruns", "[search][profile]") {
  SweepTimes t;
  t.total_s = 10, t.timing_s = 4, t.measured = 100;
  CHECK(profile_text(t).find("held until queued") == std::string::npos); // no holds: not said
  t.held_batches = 300, t.hold_reruns = 2, t.hold_unprotected = 1;
  CHECK_THAT(profile_text(t), Catch::Contains("300 batches held until queued; 2 queued again after the hold "
                                              "timed out, 1 of them unprotected again"));
}
