// The sweep's time-left estimate, driven by a fake clock.
#include <catch2/catch.hpp>

#include "tuner/eta.h"

#include <cmath>
#include <cstdint>
#include <vector>

using namespace reduce_tune;

namespace {

// A clock the test advances by hand.
struct FakeClock {
  double t = 1000;
  Eta::Clock fn() { return [this] { return t; }; }
};

} // namespace

TEST_CASE("eta: unknown before the first measured point, then the points left at the observed rate", "[eta]") {
  FakeClock clock;
  Eta eta(0, clock.fn());
  eta.plan(1024, 10);
  eta.start();
  CHECK(eta.remaining_s() < 0);
  clock.t += 7; // time before start() is not a point's
  eta.start();
  for (int i = 0; i < 4; ++i) {
    clock.t += 0.5;
    eta.measured(1024);
  }
  CHECK(eta.remaining_s() == Approx(6 * 0.5));
  for (int i = 0; i < 6; ++i) {
    clock.t += 0.5;
    eta.measured(1024);
  }
  CHECK(eta.remaining_s() == 0);
}

TEST_CASE("eta: points already stored cost nothing and do not dilute the rate", "[eta]") {
  FakeClock clock;
  Eta eta(0, clock.fn());
  eta.plan(4096, 100);
  eta.start();
  eta.skipped(4096, 50); // a resumed run: half was stored before
  for (int i = 0; i < 10; ++i) {
    clock.t += 1;
    eta.measured(4096);
  }
  CHECK(eta.remaining_s() == Approx(40));
}

TEST_CASE("eta: larger sizes ahead cost their bytes, by the prior before the data measure it", "[eta]") {
  const double a = 1e-3, b = 1e-9; // 1 ms a point plus 1 ns a byte
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  FakeClock clock;
  Eta eta(b, clock.fn());
  for (double x : {kib, mib, gib}) eta.plan(x, 100);
  eta.start();
  for (int i = 0; i < 100; ++i) {
    clock.t += a + b * kib;
    eta.measured(kib);
  }
  CHECK(eta.point_s(gib) == Approx(a + b * gib));
  CHECK(eta.remaining_s() == Approx(100 * (a + b * mib) + 100 * (a + b * gib)));
}

TEST_CASE("eta: a wrong prior gives way to the fitted cost once the bytes' cost is measurable", "[eta]") {
  const double a = 1e-3, b = 1e-9;
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  FakeClock clock;
  Eta eta(10 * b, clock.fn());
  for (double x : {kib, mib, gib}) eta.plan(x, 100);
  eta.start();
  for (double x : {kib, mib})
    for (int i = 0; i < 100; ++i) {
      clock.t += a + b * x;
      eta.measured(x);
    }
  CHECK(eta.point_s(gib) == Approx(a + b * gib).epsilon(1e-6));
  for (int i = 0; i < 10; ++i) {
    clock.t += a + b * gib;
    eta.measured(gib);
  }
  CHECK(eta.remaining_s() == Approx(90 * (a + b * gib)).epsilon(1e-6));
}

TEST_CASE("eta: a slope fitted to noise at small sizes is not extrapolated to large ones", "[eta]") {
  const double prior = 6e-12; // 21 reads at 3.35 TB/s
  const double kib = 1024, gib = kib * kib * kib;
  FakeClock clock;
  Eta eta(prior, clock.fn());
  for (double x : {kib, 4 * kib, gib}) eta.plan(x, 100);
  eta.start();
  // 1.00 ms at 1 KiB, 1.02 ms at 4 KiB: a least-squares slope of 6.5 ns a byte (7 s at 1 GiB).
  for (int i = 0; i < 100; ++i) {
    clock.t += 1.00e-3;
    eta.measured(kib);
  }
  for (int i = 0; i < 100; ++i) {
    clock.t += 1.02e-3;
    eta.measured(4 * kib);
  }
  CHECK(eta.point_s(gib) == Approx(1.01e-3 - prior * 2.5 * kib + prior * gib).epsilon(1e-6));
  CHECK(eta.point_s(gib) < 0.01);
}

TEST_CASE("eta: a simulated default sweep is estimated honestly all the way", "[eta]") {
  // Two dtypes of 4 bytes, 2^10 .. 2^28 by 4x, 948 points each: the default sweep's 18,960. Each
  // point costs 1.5 ms plus 4 ps a byte (a 1 GiB input: 5.8 ms), +-20 % by point.
  const double a = 1.5e-3, b = 4e-12, prior = 21 / 3.35e12;
  std::vector<double> sizes;
  for (int e = 10; e <= 28; e += 2) sizes.push_back(4 * std::ldexp(1.0, e));
  const std::size_t per_size = 948;
  std::vector<double> cost, bytes; // the sweep's points in order
  std::uint64_t rng = 12345;
  for (int d = 0; d < 2; ++d)
    for (double x : sizes)
      for (std::size_t i = 0; i < per_size; ++i) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const double noise = 0.8 + 0.4 * double(rng >> 11) / double(1ull << 53);
        cost.push_back((a + b * x) * noise);
        bytes.push_back(x);
      }
  double left = 0;
  for (double c : cost) left += c;

  FakeClock clock;
  Eta eta(prior, clock.fn());
  for (double x : sizes) eta.plan(x, 2 * per_size);
  eta.start();
  double worst_first_half = 0, worst_second_half = 0;
  for (std::size_t i = 0; i < cost.size(); ++i) {
    clock.t += cost[i];
    eta.measured(bytes[i]);
    left -= cost[i];
    const double est = eta.remaining_s();
    REQUIRE(est >= 0);
    if (i + 1 == 6952) CHECK(est > 10); // the reported "eta 0s at 6952 of 18960"
    if (left < 1) continue; // the last second: relative error means little
    const double err = std::abs(est / left - 1);
    (i < cost.size() / 2 ? worst_first_half : worst_second_half) =
        std::max(i < cost.size() / 2 ? worst_first_half : worst_second_half, err);
  }
  CHECK(eta.remaining_s() == 0);
  CHECK(worst_first_half < 0.35); // sizes not yet seen: the prior, then an extrapolated fit
  CHECK(worst_second_half < 0.05); // every size seen once
}

TEST_CASE("eta: formatted for a progress line", "[eta]") {
  CHECK(format_eta(-1) == "?");
  CHECK(format_eta(std::nan("")) == "?");
  CHECK(format_eta(0) == "0s");
  CHECK(format_eta(42.4) == "42s");
  CHECK(format_eta(185) == "3m05s");
  CHECK(format_eta(3725) == "1h02m");
}
