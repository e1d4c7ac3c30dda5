// reduce-tune: the CPU check's bounds in linear form for the GPU's fast pass (tuner/fast_bound.h).
// Each case below expands the matching case of tuner/reference.cpp (op_bound, float_bound,
// squares_depth) or tuner/user_check.cpp (check_user) into a scale's coefficient, |want|'s and a
// constant; tests/test_fast_check.cpp compares them with the CPU check's bound.
#include "tuner/fast_bound.h"

#include "tuner/parallel.h"
#include "tuner/user_check.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

namespace reduce_tune {
namespace {

// The coefficients are shrunk by this much: the CPU computes its bound in another order (a few
// roundings of 2^-53 each, all of non-negative terms), so a bound 1e-9 below it stays below it.
constexpr double kShrink = 1 - 1e-9;

double unit(DType acc) { return acc == DType::f64 ? 0x1p-53 : 0x1p-24; }

// gamma(k) of the CPU's bounds, with their cut-off past k u = 1/2.
double gamma(double k, double u) {
  const double ku = k * u;
  return ku < 0.5 ? ku / (1 - ku) : 2.0;
}

// tuner/reference.cpp's squares_depth: float64 takes the order-free gamma(n) where larger.
double squares_depth(DType d, std::uint64_t depth, double count) {
  const auto n = std::uint64_t(std::max(1.0, count));
  return double(d == DType::f64 ? std::max(depth + 1, n) : depth + 1);
}

// A bound e = a s + b |want| + c of the accumulator, then the one rounding of a bf16 or f16
// result r (|r| <= |want| + e): e + u_h (|want| + e) + the half subnormal spacing.
FastBound rounded_to(DType result, FastBound e) {
  if (!is_half(result)) return e;
  const double uh = half_unit_roundoff(result);
  return {(1 + uh) * e.a, (1 + uh) * e.b + uh, (1 + uh) * e.c + half_subnormal_error(result)};
}

FastBound shrunk(FastBound f) { return {f.a * kShrink, f.b * kShrink, f.c * kShrink}; }

} // namespace

FastForm fast_form(Op op, DType result) {
  // reference.cpp's bounded_op: float results of the ops that combine by adding.
  const bool bounded = is_float(result) && combine_kind(op) == OpAtomic::add && op != Op::count_nonzero;
  if (!bounded) return FastForm::exact;
  switch (op) {
  case Op::sum:
  case Op::norm1:
  case Op::mean:
  case Op::sumsq:
  case Op::dot:
  case Op::norm2:
  case Op::logsumexp:
  case Op::var:
  case Op::var_population: return FastForm::bound;
  case Op::std_:
  case Op::std_population: return FastForm::root;
  default: return FastForm::none;
  }
}

double fast_scale(Op op, const Reference& r) {
  switch (op) {
  case Op::norm2: return std::sqrt(r.abs_sum); // a sum of squares: never negative
  case Op::logsumexp: return std::fabs(r.abs_sum);
  default: return r.abs_sum;
  }
}

double fast_want(const Reference& r) {
  const double e = r.exact;
  if (std::isnan(e) || std::isinf(e)) return e;
  const double rounded = r.value.to_double();
  return std::isinf(rounded) ? rounded : e; // a finite sum past the dtype's range
}

std::optional<FastBound> fast_bound(Op op, DType d, std::uint64_t depth, double count) {
  const FastForm form = fast_form(op, d);
  if (form != FastForm::bound && form != FastForm::root) return std::nullopt;
  // The accumulator's dtype: float32 for bf16 and f16.
  const DType acc = is_half(d) ? DType::f32 : d;
  const double u = unit(acc);
  switch (op) {
  case Op::sum:
  case Op::norm1: // float_bound: gamma(depth) sum|x| + u |exact|
    return shrunk(rounded_to(d, {gamma(double(depth), u), u, 0}));
  case Op::sumsq:
  case Op::dot:
    return shrunk(rounded_to(d, {gamma(squares_depth(d, depth, count), u), u, 0}));
  case Op::mean: // the sum's bound over the count, with depth + 2
    return shrunk(rounded_to(d, {gamma(double(depth + 2), u) / std::max(1.0, count), u, 0}));
  case Op::norm2: {
    // For the sum of squares s with e = k s (k = gamma + u): sqrt(s + e) - sqrt(s - e) + u sqrt(s
    // + e) = sqrt(s) D. The CPU subtracts two roots of about sqrt(s), each within about 2^-53 of
    // its value, and so does D here: 8 x 2^-53 covers both cancellations.
    const double k = gamma(squares_depth(acc, depth, count), u) + u;
    const double hi = std::sqrt(1 + k), lo = std::sqrt(std::max(0.0, 1 - k));
    const double dd = std::max(0.0, hi - lo + u * hi - 8 * 0x1p-53);
    FastBound b{dd, 0, 0};
    if (is_half(d)) { // b += u_h (hi + b) + the subnormal spacing
      const double uh = half_unit_roundoff(d);
      b = {dd + uh * (hi * (1 - 4 * 0x1p-53) + dd), 0, half_subnormal_error(d)};
    }
    return shrunk(b);
  }
  case Op::logsumexp: {
    // g / (1 - g) for the rescaled sum, 2 u |log S| and u |result|.
    const double g = gamma(6.0 * double(depth) + 2, u);
    return shrunk(rounded_to(d, {2 * u, u, g / (1 - std::min(g, 0.5))}));
  }
  case Op::var:
  case Op::var_population: {
    // gamma(4 depth + 4) sum x^2 / max(n - correction, 1) + u |var|.
    const double g = gamma(4.0 * double(depth) + 4, u);
    const double c = std::max(1.0, count - (op == Op::var ? 1 : 0));
    return shrunk(rounded_to(d, {g / c, u, 0}));
  }
  case Op::std_:
  case Op::std_population: {
    // The variance's bound e as var's, then sqrt(v + e) - sqrt(v - e) + u sqrt(v + e): computed
    // per result on the device (fast_limit), from e's coefficients shrunk (a smaller e, a smaller
    // spread).
    const double g = gamma(4.0 * double(depth) + 4, u);
    const double c = std::max(1.0, count - (op == Op::std_ ? 1 : 0));
    FastBound b{g / c * kShrink, u * kShrink, 0};
    b.root = true;
    b.u = u;
    if (is_half(d)) b.uh = half_unit_roundoff(d), b.sub = half_subnormal_error(d);
    return b;
  }
  default: return std::nullopt;
  }
}

std::optional<std::vector<FastBound>> bounds_by_length(
    const std::vector<std::uint64_t>& lengths, const std::function<std::optional<FastBound>(std::uint64_t)>& at) {
  std::vector<FastBound> out(lengths.size());
  std::atomic<bool> all{true};
  parallel_for(lengths.size(), 256, [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t k = lo; k < hi && all.load(std::memory_order_relaxed); ++k) {
      const std::optional<FastBound> b = at(lengths[k]);
      if (!b) return all.store(false);
      out[k] = *b;
    }
  });
  if (!all) return std::nullopt;
  return out;
}

std::optional<std::vector<FastBound>> fast_bounds(Op op, DType d, const std::vector<std::uint64_t>& lengths,
                                                  const std::function<std::uint64_t(std::uint64_t)>& depth) {
  return bounds_by_length(lengths, [&](std::uint64_t len) { return fast_bound(op, d, depth(len), double(len)); });
}

std::optional<FastBound> fast_user_bound(const UserOp& u, DType dtype, std::uint64_t depth) {
  const DType result = u.result_dtype(dtype);
  if (!is_float(result)) return FastBound{}; // integers: equal
  const double unit = user_unit_roundoff(u, dtype);
  const double k = double(depth + 2) * unit;
  if (!(k < 0.5)) return std::nullopt; // k / (1 - k) turns large, then negative: the CPU's alone
  // k / (1 - k) |check(|x|)| + 2 u |expected|, then a bf16 or f16 result's rounding.
  return shrunk(rounded_to(result, {k / (1 - k), 2 * unit, 0}));
}

float scale_down(double s) {
  // A negative scale (never one of the CPU check's: sums of magnitudes and squares) would loosen
  // the bound: NaN, which fails every result it scales, leaves them to the CPU.
  if (std::isnan(s) || s < 0) return std::numeric_limits<float>::quiet_NaN();
  const double m = s;
  if (m > double(std::numeric_limits<float>::max())) return std::numeric_limits<float>::max();
  float f = float(m);
  if (double(f) > m) f = std::nextafter(f, 0.0f);
  return f;
}

double fast_limit(const FastBound& b, double e, float scale) {
  if (!b.root) return b.a * double(scale) + b.b * std::fabs(e) + b.c;
  // The CPU's roots each lie within about 2^-53 of their value, and so do these: their
  // differences within 4.2 x 2^-53 sqrt(v + e) of each other, which 2^-50 covers.
  const double v = e * e, ev = b.a * double(scale) + b.b * v;
  const double hi = std::sqrt(v + ev), lo = std::sqrt(std::max(0.0, v - ev));
  double bound = std::max(0.0, hi - lo + b.u * hi - 0x1p-50 * hi);
  bound += b.uh * (std::fabs(e) + bound) + b.sub;
  return bound * kShrink;
}

bool fast_within(double g, double e, float scale, const FastBound& b) {
  if (std::isnan(e) || std::isnan(g)) return std::isnan(e) && std::isnan(g);
  if (std::isinf(e) || std::isinf(g)) return e == g;
  return std::fabs(g - e) <= fast_limit(b, e, scale);
}

bool fast_equal(Scalar got, Scalar want) {
  if (got == want) return true;
  if (got.dtype != want.dtype || !is_float(got.dtype)) return false;
  return std::isnan(got.to_double()) && std::isnan(want.to_double());
}

} // namespace reduce_tune
