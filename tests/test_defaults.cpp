// Tests of the built-in defaults (runtime/defaults.cpp and its generated table): every call, on
// GPUs of other sizes and architectures than those the table was derived on, gets a configuration
// valid there that meets its requirements; the classes cover every shape once, in hardware terms.
#include <catch2/catch.hpp>

#include "kernels/catalogue.h"
#include "kernels/segmented.h"
#include "runtime/defaults.h"
#include "runtime/lookup.h"

#include <bit>
#include <cmath>
#include <string>
#include <vector>

using namespace reduce_tune;

namespace {

constexpr DType kDTypes[] = {DType::i32, DType::u32, DType::i64, DType::f32,
                             DType::f64, DType::bf16, DType::f16};
constexpr Op kOps[] = {Op::sum, Op::min, Op::max};
constexpr Problem kSegmented[] = {Problem::rows, Problem::columns, Problem::segments};

DeviceKey gpu(const char* name, int sms, std::int64_t l2_mib, int major, int minor,
              double gbps, int max_block = 1024) {
  DeviceKey k;
  k.uuid = std::string("GPU-") + name;
  k.name = name;
  k.sm_count = sms;
  k.l2_bytes = l2_mib << 20;
  k.cc_major = major;
  k.cc_minor = minor;
  k.peak_gbps = gbps;
  k.max_block = max_block;
  return k;
}

// The GPU the table was derived on, and others it was not: an A100-like, an L4-like, a small
// Turing part, and one whose blocks are limited to 256 threads.
const std::vector<DeviceKey> kProfiles = {
    gpu("H100-like", 132, 50, 9, 0, 3352), gpu("A100-like", 108, 40, 8, 0, 1555),
    gpu("L4-like", 58, 48, 8, 9, 300),     gpu("small", 20, 4, 7, 5, 320),
    gpu("narrow-blocks", 40, 6, 8, 6, 450, 256)};

/// Every combination of requirements a call can bring for (problem, dtype): a float32 result is
/// asked of bf16 and f16 1-D reductions only.
std::vector<Requirements> requirement_sets(Problem p, DType d) {
  std::vector<Requirements> out;
  for (bool det : {false, true})
    for (bool device : {false, true})
      for (bool in_place : {false, true})
        for (bool wide : {false, true}) {
          if (wide && !(is_half(d) && p == Problem::array)) continue;
          Requirements r;
          r.deterministic = det, r.device_result = device, r.allow_in_place = in_place;
          r.wide_result = wide;
          out.push_back(r);
        }
  return out;
}

Target target(Problem p, DType d, Op o, const Requirements& req, const DeviceKey& k) {
  Target t;
  t.dtype = d, t.op = o, t.problem = p;
  t.cc = k.cc_major * 10 + k.cc_minor;
  t.max_block = k.max_block;
  t.sm_count = k.sm_count;
  t.wide_result = req.wide_result;
  return t;
}

/// The shapes a segmented problem is checked at: counts and lengths 1 .. 2^24 (every third power
/// of two, and a few that are not powers), at most 2^31 elements; offsets also with the mean
/// length unknown (0).
std::vector<Shape> segmented_shapes(Problem p) {
  std::vector<std::uint64_t> sizes = {3, 1000, 21845};
  for (int e = 0; e <= 24; e += 3) sizes.push_back(std::uint64_t(1) << e);
  std::vector<Shape> out;
  for (std::uint64_t c : sizes) {
    for (std::uint64_t l : sizes)
      if (c * l <= (std::uint64_t(1) << 31)) out.push_back({c, l});
    if (p == Problem::segments) out.push_back({c, 0});
  }
  return out;
}

std::vector<Shape> array_shapes() {
  std::vector<Shape> out = {{1, 0}, {1, 3}, {1, 1000}, {1, (1u << 20) + 1}};
  for (int e = 0; e <= 30; ++e) out.push_back({1, std::uint64_t(1) << e});
  return out;
}

/// A table key as the defaults give it for dtype `d`: the vector width scaled from 4-byte
/// elements where that is valid, the block within the device's limit.
Config for_dtype(const char* k, const Target& t) {
  Config c = *parse_key(k);
  if (c.block > t.max_block) c.block = int(std::bit_floor(unsigned(t.max_block)));
  const Config scaled = translated(c, DType::f32, t.dtype);
  if (!invalid_reason(scaled, t)) c = scaled;
  return c;
}

/// Why `c` fails the call, or empty.
std::string violation(const Config& c, Problem p, DType d, Shape shape, const Target& t,
                      const Requirements& req) {
  const Variant* v = find_variant(c.variant);
  if (!v) return "unknown variant";
  if (v->problem != p) return "a variant of another problem";
  if (auto why = invalid_reason(c, t)) return "invalid: " + *why;
  if (req.deterministic && !deterministic(c, d)) return "not deterministic";
  if (req.device_result && c.finish == Finish::host) return "finishes on the host";
  if (!req.allow_in_place && v->in_place) return "works in place";
  if (p == Problem::segments && shape.length == 0 && needs_mean(c)) return "needs the mean length";
  try { // the launch geometry exists for the call
    if (p == Problem::array) plan(c, t, std::max<std::uint64_t>(shape.length, 1));
    else segmented_plan(c, t, shape);
  } catch (const std::exception& e) {
    return std::string("no launch plan: ") + e.what();
  }
  return {};
}

/// Checks every dtype, op, profile and requirement set for `shapes` of problem p; returns the
/// number of calls checked.
std::size_t check_all(Problem p, const std::vector<Shape>& shapes) {
  std::size_t calls = 0;
  for (const DeviceKey& k : kProfiles)
    for (DType d : kDTypes)
      for (Op o : kOps)
        for (const Requirements& req : requirement_sets(p, d))
          for (Shape shape : shapes) {
            const Config c = builtin_config(p, d, o, shape, req, k);
            const Target t = target(p, d, o, req, k);
            const std::string why = violation(c, p, d, shape, t, req);
            const DefaultClass* cls = default_class(p, d, shape, k.sm_count);
            // The table serves every call: the class's fast configuration where it does, else
            // its atomic-free one (never the last resort).
            std::string from_table;
            if (!cls) {
              from_table = "no class holds the call";
            } else {
              const Config fast = for_dtype(cls->fast, t), exact = for_dtype(cls->exact, t);
              const Shape at = lookup_point(shape);
              const bool exact_serves = violation(exact, p, d, shape, t, req).empty();
              // The exact one also where the fast one is pointless at the shape (in elements) and
              // it is not, and for a 1-D min/max whose atomic combine is several instructions or
              // a CAS loop on a data-sized grid.
              const bool pointless_fast = p != Problem::array && at.length != 0 &&
                                          pointless(fast, at) && !pointless(exact, at);
              const bool slow_atomics =
                  p == Problem::array && fast.grid == 0 && !deterministic(fast, DType::f32) &&
                  o != Op::sum && (size_of(d) == 8 || (is_half(d) && !req.wide_result));
              const bool fast_serves = violation(fast, p, d, shape, t, req).empty() &&
                                       !(exact_serves && (pointless_fast || slow_atomics));
              if (fast_serves ? !(c == fast) : !(c == exact))
                from_table = "not the class's " + std::string(fast_serves ? "fast" : "exact") +
                             " configuration";
            }
            ++calls;
            if (why.empty() && from_table.empty()) continue;
            INFO(k.name << " " << name(p) << " " << name(d) << " " << name(o) << " " << shape.count
                        << " x " << shape.length << (req.deterministic ? " deterministic" : "")
                        << (req.device_result ? " device-result" : "")
                        << (req.allow_in_place ? " in-place" : "")
                        << (req.wide_result ? " wide" : "") << ": " << key(c));
            CHECK(why == "");
            CHECK(from_table == "");
          }
  return calls;
}

} // namespace

TEST_CASE("defaults: the table's keys", "[defaults]") {
  REQUIRE_FALSE(default_classes().empty());
  for (const DefaultClass& k : default_classes()) {
    INFO(name(k.problem) << ": " << k.fast << " / " << k.exact);
    for (const char* text : {k.fast, k.exact}) {
      std::string why;
      const std::optional<Config> c = parse_key(text, &why);
      REQUIRE(c);
      CHECK(find_variant(c->variant)->problem == k.problem);
      CHECK(key(*c) == text); // keys as this build writes them
    }
    // The exact configuration is deterministic for every dtype.
    CHECK(deterministic(*parse_key(k.exact), DType::f32));
    CHECK((k.mean_known || k.problem == Problem::segments));
    for (const auto& b : k.bounds) CHECK(b[0] < b[1]);
  }
}

TEST_CASE("defaults: each shape is in exactly one class of its problem", "[defaults]") {
  // Any features, consistent or not, on a grid finer than the bounds (integers): the classes
  // partition the space.
  for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
    for (bool mean_known : {true, false}) {
      if (!mean_known && p != Problem::segments) continue;
      std::size_t points = 0;
      for (double a = -12.5; a < 40; a += 0.5)
        for (double b = -12.5; b < 40; b += 1.5)
          for (double c = -12.5; c < 40; c += 1.5) {
            const double x[kDefaultFeatures] = {std::exp2(a), std::exp2(b), std::exp2(c)};
            int holding = 0;
            for (const DefaultClass& k : default_classes()) {
              if (k.problem != p || k.mean_known != mean_known) continue;
              bool in = true;
              for (int f = 0; f < kDefaultFeatures; ++f)
                in = in && x[f] >= std::exp2(k.bounds[f][0]) && x[f] < std::exp2(k.bounds[f][1]);
              holding += in;
            }
            ++points;
            if (holding != 1) {
              INFO(name(p) << (mean_known ? "" : " (mean unknown)") << " at 2^" << a << ", 2^"
                           << b << ", 2^" << c);
              CHECK(holding == 1);
            }
          }
      CHECK(points > 10000);
    }
}

TEST_CASE("defaults: classes are in hardware terms", "[defaults]") {
  // Twice the results on twice the SMs, or half the elements of twice the size: the same class.
  for (Problem p : kSegmented)
    for (int sms : {16, 64, 128})
      for (int ce = 0; ce <= 24; ce += 2)
        for (int le = 1; le <= 24; le += 2) {
          const std::uint64_t c = std::uint64_t(1) << ce, l = std::uint64_t(1) << le;
          INFO(name(p) << " " << c << " x " << l << " on " << sms << " SMs");
          CHECK(default_class(p, DType::f32, {c, l}, sms) ==
                default_class(p, DType::f32, {2 * c, l}, 2 * sms));
          CHECK(default_class(p, DType::f64, {c, l / 2}, sms) ==
                default_class(p, DType::f32, {c, l}, sms));
          CHECK(default_class(p, DType::bf16, {c, 2 * l}, sms) ==
                default_class(p, DType::f32, {c, l}, sms));
        }
  for (int e = 0; e <= 28; ++e) {
    const std::uint64_t n = std::uint64_t(1) << e;
    CHECK(default_class(Problem::array, DType::f32, {1, n}, 20) ==
          default_class(Problem::array, DType::f32, {1, 4 * n}, 80));
  }
  // A grid in blocks per SM carries to any GPU: the 1-D default's grid of a large array is
  // g blocks on each of its SMs (or data-sized), never a count of the GPU it was measured on.
  for (const DeviceKey& k : kProfiles) {
    const Config c = builtin_config(Problem::array, DType::f32, Op::sum, {1, 1u << 26}, {}, k);
    const Target t = target(Problem::array, DType::f32, Op::sum, {}, k);
    const LaunchPlan pl = plan(c, t, 1u << 26);
    if (c.grid > 0) CHECK(pl.grid == unsigned(c.grid * k.sm_count));
  }
}

TEST_CASE("defaults: the offsets of unknown mean length", "[defaults][segmented]") {
  for (int e = 0; e <= 26; ++e) {
    const DefaultClass* k = default_class(Problem::segments, DType::f32, {std::uint64_t(1) << e, 0}, 132);
    REQUIRE(k);
    CHECK_FALSE(k->mean_known);
    CHECK_FALSE(needs_mean(*parse_key(k->fast)));
  }
  CHECK(default_class(Problem::segments, DType::f32, {1 << 20, 4}, 132)->mean_known);
  CHECK(default_class(Problem::rows, DType::f32, {1 << 20, 0}, 132)->mean_known); // as length 1
}

TEST_CASE("defaults: the 1-D reduction, every dtype, op, GPU and requirement", "[defaults]") {
  CHECK(check_all(Problem::array, array_shapes()) > 10000);
}

TEST_CASE("defaults: rows, columns and offsets, every dtype, op, GPU and requirement",
          "[defaults][segmented]") {
  for (Problem p : kSegmented) {
    INFO(name(p));
    CHECK(check_all(p, segmented_shapes(p)) > 10000);
  }
}

TEST_CASE("defaults: requirements pick the atomic-free configuration", "[defaults]") {
  const DeviceKey h100 = kProfiles[0];
  Requirements det;
  det.deterministic = true;
  for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
    for (Shape shape : p == Problem::array ? array_shapes() : segmented_shapes(p)) {
      const DefaultClass* k = default_class(p, DType::f32, shape, h100.sm_count);
      REQUIRE(k);
      const Config fast = *parse_key(k->fast), exact = *parse_key(k->exact);
      INFO(name(p) << " " << shape.count << " x " << shape.length << ": " << k->fast);
      // float32: the fast one unless deterministic results are asked; int32 sums take atomics.
      CHECK(builtin_config(p, DType::f32, Op::sum, shape, {}, h100) == fast);
      CHECK(builtin_config(p, DType::f32, Op::sum, shape, det, h100) ==
            (deterministic(fast, DType::f32) ? fast : exact));
      CHECK(builtin_config(p, DType::i32, Op::sum, shape, det, h100) == fast);
      // A bf16 sum rounds once: in 1-D no atomic finish unless its result is float32; the
      // segmented atomic finishes add float32 accumulators and round in their post pass, and
      // asked for determinism they give way as float32's do.
      const Config half = builtin_config(p, DType::bf16, Op::sum, shape, {}, h100);
      if (p == Problem::array) CHECK(deterministic(half, DType::bf16));
      else CHECK(deterministic(builtin_config(p, DType::bf16, Op::sum, shape, det, h100), DType::bf16));
      // mean and any take float32 sum's fast configuration on the segmented problems (the
      // atomic ones through the post pass).
      if (p != Problem::array) {
        CHECK(builtin_config(p, DType::f32, Op::mean, shape, {}, h100) == fast);
        CHECK(builtin_config(p, DType::f32, Op::any, shape, {}, h100) == fast);
      }
      if (p == Problem::array) { // its class is of half the bytes
        Requirements wide;
        wide.wide_result = true;
        CHECK(builtin_config(p, DType::bf16, Op::sum, shape, wide, h100).finish ==
              parse_key(default_class(p, DType::bf16, shape, h100.sm_count)->fast)->finish);
      }
    }
}

TEST_CASE("defaults: 1-D min/max of 8-byte and 16-bit elements keep atomics off big grids",
          "[defaults]") {
  // The data-sized grid with one atomic a block that the float32 sums take at 2^24 and above is
  // kept for float32 max, and replaced for float64 (several instructions a combine) and bf16 (a
  // CAS loop).
  const DeviceKey h100 = kProfiles[0];
  const Shape big{1, 1u << 26};
  const Config f32 = builtin_config(Problem::array, DType::f32, Op::max, big, {}, h100);
  const Config sum = builtin_config(Problem::array, DType::f64, Op::sum, big, {}, h100);
  for (DType d : {DType::f64, DType::i64, DType::bf16, DType::f16}) {
    const Config c = builtin_config(Problem::array, d, Op::max, big, {}, h100);
    INFO(name(d) << ": " << key(c));
    CHECK((c.grid > 0 || c.finish == Finish::lastblock || c.finish == Finish::twopass));
  }
  INFO(key(f32) << ", float64 sum " << key(sum));
  if (f32.grid == 0) CHECK_FALSE(deterministic(f32, DType::f32)); // as the sums
  CHECK(sum.finish == f32.finish);
}

TEST_CASE("defaults: the Choice says it is the built-in default", "[defaults]") {
  const Choice c = builtin_choice(Problem::columns, DType::f32, Op::max, {256, 65536}, {},
                                  kProfiles[1], "no tuning here");
  CHECK(c.match == Match::builtin);
  CHECK(c.problem == Problem::columns);
  CHECK(c.note == "no tuning here");
  CHECK(c.config == builtin_config(Problem::columns, DType::f32, Op::max, {256, 65536}, {},
                                   kProfiles[1]));
  CHECK(c.median_us == 0);
  CHECK(c.device_name.empty());
}
