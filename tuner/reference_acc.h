// reduce-tune: one result's CPU reference, accumulated element by element (tuner/reference.cpp
// reduces arrays, rows, columns and segments with it). The op is a template argument, so each op's
// loop over the elements holds its own arithmetic and nothing of the other ops'.
#pragma once

#include "kernels/values.h"
#include "tuner/min_max_fold.h"
#include "tuner/reference.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace reduce_tune {

/// What a reference accumulates, by the ops' arithmetic: RefAcc's loops are made once a kind and
/// dtype (the op within a kind is a branch the same way at every element).
enum class RefKind { sums, min_max, counts, arg, lse, var, dot };
constexpr RefKind ref_kind(Op op) {
  switch (op) {
  case Op::min:
  case Op::max: return RefKind::min_max;
  case Op::count_nonzero:
  case Op::any:
  case Op::all: return RefKind::counts;
  case Op::argmax:
  case Op::argmin: return RefKind::arg;
  case Op::logsumexp: return RefKind::lse;
  case Op::var:
  case Op::std_:
  case Op::var_population:
  case Op::std_population: return RefKind::var;
  case Op::dot: return RefKind::dot;
  default: return RefKind::sums; // sum, mean, sumsq, norm1, norm2
  }
}

/// f(std::integral_constant<RefKind, ref_kind(op)>{}): the kind as a compile-time value.
template <typename F> decltype(auto) visit_kind(Op op, F&& f) {
  switch (ref_kind(op)) {
  case RefKind::min_max: return f(std::integral_constant<RefKind, RefKind::min_max>{});
  case RefKind::counts: return f(std::integral_constant<RefKind, RefKind::counts>{});
  case RefKind::arg: return f(std::integral_constant<RefKind, RefKind::arg>{});
  case RefKind::lse: return f(std::integral_constant<RefKind, RefKind::lse>{});
  case RefKind::var: return f(std::integral_constant<RefKind, RefKind::var>{});
  case RefKind::dot: return f(std::integral_constant<RefKind, RefKind::dot>{});
  case RefKind::sums: break;
  }
  return f(std::integral_constant<RefKind, RefKind::sums>{});
}

/// The result of type T from its accumulator (exact for min/max and integers).
template <typename T> T narrow(acc_t<T> v) {
  if constexpr (is_half_float_v<T>) return T(double(v));
  else return v;
}

/// One result's reference of `op` (of kind K) over elements of T: the kernels' combine for the exact ops
/// (integers, min/max, counts), double sums of the mapped values for the float ones; logsumexp's
/// and var's accumulators in double for floats of 4 bytes or fewer (53 bits against at most 24),
/// else (float64, integers) in extended precision.
template <typename T, RefKind K> struct RefAcc {
  using A = acc_t<T>;
  static constexpr bool arg = K == RefKind::arg, lse = K == RefKind::lse, var = K == RefKind::var;
  static constexpr bool two_inputs = K == RefKind::dot;
  using W = std::conditional_t<is_float_like_v<T> && sizeof(T) <= 4, double, long double>;

  Op op = Op::sum;
  A acc{};                    // the kernels' accumulator: sum, min, max; integer sumsq
  double sum = 0, abs = 0;    // the mapped values' double sum and their |.|'s (floats, mean)
  __int128 isum = 0;          // integer mean: the exact sum
  std::uint64_t n = 0, nonzero = 0;
  // argmax, argmin: the winner so far and its index in the range (-1: none yet).
  A best{};
  std::int64_t best_i = -1;
  // logsumexp: the running maximum and the sum of exp(x - max).
  W lm = -std::numeric_limits<W>::infinity(), ls = 0;
  // var, std, in two passes over the same elements (the corrected two-pass algorithm of Chan,
  // Golub and LeVeque): a centring accumulator's s1 is their sum, whose mean (finish(): `exact`)
  // is the shift of the second pass's, where s1 and s2 are the sums of x - shift and its square;
  // M2 = s2 - s1^2 / n, with no division an element.
  bool centring = false;
  W shift = 0, s1 = 0, s2 = 0;

  explicit RefAcc(Op o) : op(o), acc(identity<A>(o)) {}
  /// var: the first pass's accumulator.
  static RefAcc centre(Op o) {
    RefAcc a(o);
    a.centring = true;
    return a;
  }
  /// var: the second pass's, around the mean the first one found.
  static RefAcc around(Op o, double mean) {
    RefAcc a(o);
    a.shift = mean;
    return a;
  }

  // torch's rule: a NaN beats any number and the first NaN later ones; else the larger (smaller)
  // value, the first on ties.
  void take_arg(A v, std::int64_t i) {
    bool take = best_i < 0;
    if (!take) {
      const bool better = op == Op::argmax ? v > best : v < best;
      const bool tie = v == best && i < best_i;
      if constexpr (std::is_floating_point_v<A>) {
        const bool an = std::isnan(best), bn = std::isnan(v);
        take = bn ? (!an || i < best_i) : (!an && (better || tie));
      } else {
        take = better || tie;
      }
    }
    if (take) best = v, best_i = i;
  }
  // exp(d) for d <= 0, in double (correctly rounded or within an ulp; the maximum's own term is
  // exactly 1, so a sum errs by at most about max(|d|) 2^-53 relative); 0 below double's smallest
  // subnormal, without the library's slow path (integers' differences reach -2^64).
  static W exp_below(W d) { return d < W(-746) ? W(0) : W(std::exp(double(d))); }
  // Merges a maximum and rescaled sum into lm, ls as the kernels' combine does (NaN wins).
  void take_lse(W m, W s) {
    const W r = (std::isnan(lm) || lm > m) ? lm : m;
    const W ea = lm == r ? W(1) : exp_below(lm - r), eb = m == r ? W(1) : exp_below(m - r);
    ls = ls * ea + s * eb;
    lm = r;
  }

  void add(T x) {
    const A v = widen(x);
    if constexpr (arg) {
      take_arg(v, std::int64_t(n));
    } else if constexpr (lse) {
      take_lse(W(double(v)), W(1));
    } else if constexpr (var) {
      const W xv = is_float_like_v<T> ? W(double(v)) : W(v);
      if (centring) {
        s1 += xv;
      } else {
        // An infinity makes M2 NaN (inf - inf), as torch's var gives.
        const W d = xv - shift;
        s1 += d;
        s2 += d * d;
        abs += double(xv) * double(xv);
      }
    } else if constexpr (K == RefKind::counts) {
      if (v != A(0)) ++nonzero; // a NaN is not zero
    } else if constexpr (K == RefKind::min_max) {
      acc = host_ops::combine(acc, v, op);
    } else if constexpr (is_float_like_v<T>) {
      const double d = double(v);
      const double m = op == Op::sumsq || op == Op::norm2 ? d * d : op == Op::norm1 ? std::fabs(d) : d;
      sum += m;
      abs += std::fabs(m);
    } else if (op == Op::mean) {
      isum += v;
      abs += std::fabs(double(v));
    } else if (op == Op::sumsq) {
      using U = std::make_unsigned_t<A>;
      acc = A(U(acc) + U(v) * U(v)); // wraps as the kernels' unsigned product and sum
    } else {
      acc = host_ops::combine(acc, v, op);
    }
    ++n;
  }
  // dot: the product x * y as the mapped value.
  void add2(T x, T y) {
    ++n;
    if constexpr (is_float_like_v<T>) {
      const double m = double(widen(x)) * double(widen(y));
      sum += m;
      abs += std::fabs(m);
    } else {
      using U = std::make_unsigned_t<A>;
      acc = A(U(acc) + U(widen(x)) * U(widen(y))); // wraps as the kernels' unsigned arithmetic
    }
  }
  /// Adds x[0, len) (min and max of 16 elements or more: by fold_min_max where none is a NaN; a
  /// call costs more than a few elements' combines).
  void add_all(const T* x, std::uint64_t len) {
    if constexpr (K == RefKind::min_max) {
      if (len >= 16) {
        const MinMaxFold<T> f = fold_min_max(x, len, combine_kind(op) == OpAtomic::min);
        if (!f.nan) return add_folded(MinMaxKey<T>::value(f.key), len);
      }
    }
    for (std::uint64_t i = 0; i < len; ++i) add(x[i]);
  }
  /// min and max: adds `count` elements whose min or max (as the op) is m.
  void add_folded(T m, std::uint64_t count) {
    acc = host_ops::combine(acc, widen(m), op);
    n += count;
  }
  /// Merges the accumulator of the elements that follow this one's (var: of the same pass and
  /// shift).
  void merge(const RefAcc& o) {
    if constexpr (arg)
      if (o.best_i >= 0) take_arg(o.best, o.best_i + std::int64_t(n));
    if constexpr (lse) take_lse(o.lm, o.ls);
    if constexpr (var) s1 += o.s1, s2 += o.s2;
    n += o.n, nonzero += o.nonzero, sum += o.sum, abs += o.abs, isum += o.isum;
    acc = host_ops::combine(acc, o.acc, op); // integer sumsq: a wrapping add, as its combine
  }

  Reference finish() const {
    Reference r;
    r.count = double(n);
    if constexpr (K == RefKind::counts) {
      if (op == Op::count_nonzero) r.value = Scalar::of(std::int64_t(nonzero));
      else r.value = Scalar::of(std::uint8_t(op == Op::any ? nonzero > 0 : nonzero == n));
    } else if constexpr (K == RefKind::min_max) r.value = Scalar::of(narrow<T>(acc));
    else if constexpr (arg) r.value = Scalar::of(std::int64_t(best_i)); // -1: empty
    else if constexpr (lse) {
      const W log_sum = std::log(ls);
      r.exact = double(lm + log_sum); // empty or all -inf: -inf; NaN: NaN
      r.abs_sum = double(log_sum);    // log of the rescaled sum, for the bound
      if constexpr (is_float_like_v<T>) r.value = Scalar::of(T(r.exact));
    } else if constexpr (var) {
      if (centring) {
        r.exact = n ? double(s1 / W(n)) : 0.0; // the second pass's shift
        return r;
      }
      W m2 = n ? s2 - s1 * s1 / W(n) : W(0);
      if (m2 < 0) m2 = 0; // rounding below zero (a NaN stays)
      const std::uint64_t correction = op == Op::var || op == Op::std_;
      // n <= correction: 0 / 0 (NaN) or inf, as torch; made, not divided (extended precision's
      // division by zero or of NaNs takes a slow path on some hosts).
      W v = n > correction ? m2 / W(n - correction)
            : m2 > 0       ? std::numeric_limits<W>::infinity()
                           : std::numeric_limits<W>::quiet_NaN();
      if ((op == Op::std_ || op == Op::std_population) && v > 0) v = std::sqrt(v);
      r.exact = double(v);
      r.abs_sum = abs; // the sum of squares, for the bound
      if constexpr (is_float_like_v<T>) r.value = Scalar::of(T(r.exact));
      else r.value = Scalar::of(r.exact);
    } else if constexpr (is_float_like_v<T>) {
      r.abs_sum = abs;
      r.exact = op == Op::mean ? sum / double(n) : op == Op::norm2 ? std::sqrt(sum) : sum;
      r.value = Scalar::of(T(r.exact)); // rounded once (0 / 0: NaN)
    } else if (op == Op::mean) {
      r.abs_sum = abs;
      r.exact = double(isum) / double(n);
      r.value = Scalar::of(r.exact);
    } else {
      r.value = Scalar::of(T(acc));
    }
    return r;
  }
};

} // namespace reduce_tune
