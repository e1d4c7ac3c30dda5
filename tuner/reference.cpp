// reduce-tune: test data and the CPU reference.
#include "tuner/reference.h"

#include "kernels/ops.h"
#include "tuner/mix.h"
#include "tuner/parallel.h"
#include "tuner/reference_acc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace reduce_tune {
namespace {

// Threads for n items: one below 2^20 items, else one a core (tuner/parallel.h runs them).
unsigned chunk_threads(std::uint64_t n) { return n < (1u << 20) ? 1 : host_cores(); }

// The same for n items that hold `work` elements in all: one below 2^20 elements, else one a core,
// at most one an item. (By the items alone, 256 rows of 2^20 elements were reduced on one thread.)
unsigned item_threads(std::uint64_t n, std::uint64_t work) {
  return work < (1u << 20) ? 1 : unsigned(std::clamp<std::uint64_t>(n, 1, host_cores()));
}

// The accumulators of one result before its elements: `start(i)` for result i. var and std take
// two passes over the same elements (RefAcc): the first finds each result's mean, which the second
// centres on.
template <typename T, RefKind K> struct Starts {
  Op op;
  const std::vector<Reference>* means = nullptr; // var's second pass: each result's first
  bool centring = false;                         // var's first pass
  RefAcc<T, K> operator()(std::uint64_t i) const {
    if constexpr (RefAcc<T, K>::var) {
      if (centring) return RefAcc<T, K>::centre(op);
      return RefAcc<T, K>::around(op, (*means)[i].exact);
    }
    return RefAcc<T, K>(op);
  }
};

// Adds element i of x (and of y, for an op of two inputs).
template <typename T, RefKind K> void feed(RefAcc<T, K>& acc, const T* x, const T* y, std::uint64_t i) {
  if constexpr (RefAcc<T, K>::two_inputs) acc.add2(x[i], y[i]);
  else acc.add(x[i]);
}

// Adds elements [lo, hi) of x (and of y).
template <typename T, RefKind K>
void feed_all(RefAcc<T, K>& acc, const T* x, const T* y, std::uint64_t lo, std::uint64_t hi) {
  if constexpr (RefAcc<T, K>::two_inputs) {
    for (std::uint64_t i = lo; i < hi; ++i) feed(acc, x, y, i);
  } else {
    acc.add_all(x + lo, hi - lo);
  }
}

// Reduces [0, n) in parallel chunks from `start`; `y`: the second input of an op of two (else null).
template <typename T, RefKind K>
Reference reduce_host(const T* x, std::uint64_t n, const T* y, const RefAcc<T, K>& start) {
  const unsigned slots = chunk_threads(n);
  std::vector<RefAcc<T, K>> part(slots, start);
  parallel_ranges(n, slots, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    RefAcc<T, K> acc = start;
    feed_all(acc, x, y, lo, hi);
    part[t] = acc;
  });
  RefAcc<T, K> acc = start;
  for (unsigned t = 0; t < slots; ++t) acc.merge(part[t]);
  return acc.finish();
}

// Runs `pass(starts)` once, or, for var and std, twice: `out` holds the means after the first.
template <typename T, RefKind K, typename Pass>
void in_passes(Op op, std::vector<Reference>& out, Pass&& pass) {
  if constexpr (RefAcc<T, K>::var) pass(Starts<T, K>{op, nullptr, true});
  pass(Starts<T, K>{op, &out, false});
}

} // namespace

HostArray make_input(DType dtype, std::uint64_t n, std::uint64_t seed, unsigned threads) {
  HostArray a;
  a.dtype = dtype;
  a.n = n;
  a.bytes.resize(n * size_of(dtype));
  visit(dtype, [&](auto t) {
    using T = decltype(t);
    T* x = a.data<T>();
    parallel_ranges(n, threads ? threads : chunk_threads(n), [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
      for (std::uint64_t i = lo; i < hi; ++i) {
        const std::uint64_t r = mix(seed * 0x100000001b3ull + i);
        if constexpr (is_float_like_v<T>) {
          // Uniform in [-1, 1) on a 2^-23 grid (the 2-byte floats: rounded to the type); never
          // exactly zero.
          const double u = double(std::int64_t(r >> 40) - (1ll << 23)) / double(1 << 23);
          x[i] = T(u == 0 ? 0.5 : u);
          if (double(x[i]) == 0) x[i] = T(0.5);
        } else {
          T v;
          std::memcpy(&v, &r, sizeof v);
          x[i] = v == 0 ? T(1) : v;
        }
      }
    });
    if constexpr (is_float_like_v<T>) {
      auto spike = [&](std::uint64_t i, T s) {
        if (i < n) x[i] = s;
      };
      spike(0, T(1024));
      spike(n - 1, T(-1024));
      for (int j = 5; j < 64 && (std::uint64_t(1) << j) < n; ++j) {
        spike((std::uint64_t(1) << j) - 1, j % 2 ? T(1024) : T(-1024));
        spike(std::uint64_t(1) << j, j % 2 ? T(-1024) : T(1024));
      }
    }
  });
  return a;
}

namespace {

// Whether the inputs fit the op: two of one dtype and length for an op of two, else one.
void check_inputs(const HostArray& x, const HostArray* y, Op op) {
  if (describe(op).traits.two_inputs != (y != nullptr))
    throw std::invalid_argument("reference: " + std::string(name(op)) + " reads " +
                                (y ? "one input" : "two inputs"));
  if (y && (y->dtype != x.dtype || y->n != x.n))
    throw std::invalid_argument("reference: the two inputs differ in dtype or length");
}

} // namespace

namespace {

// The reference of x[0, n) (and y's, for an op of two inputs), in parallel chunks.
template <typename T, RefKind K> Reference reduce_array(Op op, const T* x, std::uint64_t n, const T* y) {
  RefAcc<T, K> start(op);
  if constexpr (RefAcc<T, K>::var)
    start = RefAcc<T, K>::around(op, reduce_host(x, n, y, RefAcc<T, K>::centre(op)).exact);
  return reduce_host(x, n, y, start);
}

} // namespace

Reference reference(const HostArray& a, Op op) {
  check_inputs(a, nullptr, op);
  return visit(a.dtype, [&](auto t) {
    using T = decltype(t);
    return visit_kind(op, [&](auto k) { return reduce_array<T, decltype(k)::value>(op, a.data<T>(), a.n, nullptr); });
  });
}

Reference reference(const HostArray& x, const HostArray& y, Op op) {
  check_inputs(x, &y, op);
  return visit(x.dtype, [&](auto t) {
    using T = decltype(t);
    return visit_kind(op, [&](auto k) { return reduce_array<T, decltype(k)::value>(op, x.data<T>(), x.n, y.data<T>()); });
  });
}

namespace {

// Columns: each thread takes a range of columns and walks the rows, a block of columns at a time
// (their accumulators stay in cache), so reads stay row-major. Fewer columns than cores: each
// thread takes a range of rows for every column, and the ranges' accumulators are merged in row
// order.
template <typename T, RefKind K>
void reduce_columns_host(const T* x, const T* y, const Segmentation& s, const Starts<T, K>& start,
                         std::vector<Reference>& out) {
  using Acc = RefAcc<T, K>;
  const std::uint64_t cols = s.shape.count, rows = s.shape.length, work = cols * rows;
  const unsigned cores = host_cores();
  // Row r's columns [lo, hi) into acc[0, hi - lo).
  const auto add_row = [&](std::vector<Acc>& acc, std::uint64_t r, std::uint64_t lo, std::uint64_t hi) {
    const std::uint64_t at = r * s.stride;
    for (std::uint64_t c = lo; c < hi; ++c) feed(acc[c - lo], x + at, y ? y + at : nullptr, c);
  };
  // Rows [r0, r1) of columns [lo, hi) (min and max: folded into the columns' keys a row at a time,
  // a loop that vectorises; columns that hold a NaN again element by element).
  const auto add_rows = [&](std::vector<Acc>& acc, std::uint64_t r0, std::uint64_t r1, std::uint64_t lo,
                            std::uint64_t hi) {
    if constexpr (K == RefKind::min_max) {
      using M = MinMaxKey<T>;
      const bool min = combine_kind(start.op) == OpAtomic::min;
      std::vector<typename M::Key> keys(hi - lo, M::identity(min));
      if (r1 > r0 && !fold_min_max_columns(x + r0 * s.stride + lo, s.stride, r1 - r0, hi - lo, min, keys.data())) {
        for (std::uint64_t c = lo; c < hi; ++c) acc[c - lo].add_folded(M::value(keys[c - lo]), r1 - r0);
        return;
      }
    }
    for (std::uint64_t r = r0; r < r1; ++r) add_row(acc, r, lo, hi);
  };
  const auto starts = [&](std::vector<Acc>& acc, std::uint64_t lo, std::uint64_t hi) {
    acc.clear();
    for (std::uint64_t c = lo; c < hi; ++c) acc.push_back(start(c));
  };
  if (cols < cores && work >= (1u << 20)) {
    std::vector<std::vector<Acc>> part(cores);
    for (auto& p : part) starts(p, 0, cols);
    parallel_ranges(rows, item_threads(rows, work), [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
      add_rows(part[t], lo, hi, 0, cols);
    });
    for (std::uint64_t c = 0; c < cols; ++c) {
      Acc acc = start(c);
      for (unsigned t = 0; t < cores; ++t) acc.merge(part[t][c]);
      out[c] = acc.finish();
    }
    return;
  }
  constexpr std::uint64_t kBlock = 1024;
  parallel_ranges(cols, item_threads(cols, work), [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
    std::vector<Acc> acc;
    for (std::uint64_t b = lo; b < hi; b += kBlock) {
      const std::uint64_t e = std::min(hi, b + kBlock);
      starts(acc, b, e);
      add_rows(acc, 0, rows, b, e);
      for (std::uint64_t c = b; c < e; ++c) out[c] = acc[c - b].finish();
    }
  });
}

} // namespace

std::uint64_t Segmentation::input_elements() const {
  switch (problem) {
  case Problem::array: return shape.length;
  case Problem::rows:
  case Problem::columns: {
    const std::uint64_t rows = problem == Problem::rows ? shape.count : shape.length;
    const std::uint64_t cols = problem == Problem::rows ? shape.length : shape.count;
    return rows == 0 ? 0 : (rows - 1) * stride + cols;
  }
  case Problem::segments: return offsets.empty() ? 0 : std::uint64_t(offsets.back());
  }
  return 0;
}

std::uint64_t Segmentation::length(std::uint64_t i) const {
  if (problem != Problem::segments) return shape.length;
  const std::int64_t b = offsets[i], e = offsets[i + 1];
  return e > b ? std::uint64_t(e - b) : 0;
}

namespace {

void segmented_host(const HostArray& a, const HostArray* b, const Segmentation& s, Op op,
                    std::vector<Reference>& out) {
  out.resize(s.shape.count);
  const std::uint64_t work = s.input_elements();
  const unsigned cores = host_cores();
  visit(a.dtype, [&](auto t) {
    using T = decltype(t);
    const T* x = a.data<T>();
    const T* y = b ? b->data<T>() : nullptr;
    const auto at = [&](std::uint64_t i) {
      return s.problem == Problem::segments ? std::uint64_t(s.offsets[i]) : i * s.stride;
    };
    visit_kind(op, [&](auto k) {
      constexpr RefKind K = decltype(k)::value;
      in_passes<T, K>(op, out, [&](const Starts<T, K>& start) {
        if (s.problem == Problem::columns) return reduce_columns_host<T, K>(x, y, s, start, out);
        // Fewer results than cores: each one's elements in parallel, as the 1-D reference.
        if (s.shape.count < cores && work >= (1u << 20)) {
          for (std::uint64_t i = 0; i < s.shape.count; ++i)
            out[i] = reduce_host(x + at(i), s.length(i), y ? y + at(i) : nullptr, start(i));
          return;
        }
        parallel_ranges(s.shape.count, item_threads(s.shape.count, work),
                        [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
          for (std::uint64_t i = lo; i < hi; ++i) {
            RefAcc<T, K> acc = start(i);
            const T* xi = x + at(i);
            const T* yi = y ? y + at(i) : nullptr;
            feed_all(acc, xi, yi, 0, s.length(i));
            out[i] = acc.finish();
          }
        });
      });
    });
  });
}

} // namespace

std::vector<Reference> segmented_reference(const HostArray& a, const Segmentation& s, Op op) {
  std::vector<Reference> out;
  segmented_reference(a, s, op, out);
  return out;
}

void segmented_reference(const HostArray& a, const Segmentation& s, Op op, std::vector<Reference>& out) {
  check_inputs(a, nullptr, op);
  segmented_host(a, nullptr, s, op, out);
}

std::vector<Reference> segmented_reference(const HostArray& x, const HostArray& y,
                                           const Segmentation& s, Op op) {
  check_inputs(x, &y, op);
  std::vector<Reference> out;
  segmented_host(x, &y, s, op, out);
  return out;
}

double float_bound(DType dtype, std::uint64_t depth, double abs_sum, double exact) {
  // The accumulation: float64 for float64, float32 for float32, bf16 and f16.
  const double u = dtype == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double ku = double(depth) * u;
  const double gamma = ku < 0.5 ? ku / (1 - ku) : 2.0; // past 1/2 the classic bound says little
  const double e = gamma * abs_sum + u * std::fabs(exact);
  if (!is_half(dtype)) return e;
  // The one rounding of the float32 result s to the element type: u_h |s| in the normal range,
  // with |s| <= |exact| + e; half the subnormal spacing below it.
  return e + half_unit_roundoff(dtype) * (std::fabs(exact) + e) + half_subnormal_error(dtype);
}

namespace {

// Whether a result of `op` on floats is checked against a bound rather than compared exactly:
// the float sums of mapped values (sum, mean, sumsq, norm1, norm2). `d`: the reference's dtype.
bool bounded_op(Op op, DType d) {
  return is_float(d) && combine_kind(op) == OpAtomic::add && op != Op::count_nonzero;
}

// The depth a sum of squares is bounded with. Its terms are all positive, so nothing cancels and
// the depth model meets its worst case; float64 results on an H100 were off their references by
// up to 63 u (the same value from every kernel, FMA-contracted squares) where the model allows
// 10-20 u. For float64 the order-free bound of any summation of n terms, gamma(n) sum x^2, is used
// instead where it is larger: still ~1e-13 relative at 2^20 elements, far below what a lost or
// doubled element gives.
std::uint64_t squares_depth(DType d, std::uint64_t depth, const Reference& ref) {
  const std::uint64_t n = std::uint64_t(std::max(1.0, ref.count));
  return d == DType::f64 ? std::max(depth + 1, n) : depth + 1;
}

// The bound of a bounded op's result of dtype `d` (the reference's, or float32 for a wide one).
double op_bound(Op op, DType d, std::uint64_t depth, const Reference& ref) {
  switch (op) {
  case Op::sumsq: // each square is rounded once more in the accumulator
  case Op::dot:   // each product likewise (or not at all, fused into the add)
    return float_bound(d, squares_depth(d, depth, ref), ref.abs_sum, ref.exact);
  case Op::mean: // the sum's bound over the count, plus integers' conversion and the division
    return float_bound(d, depth + 2, ref.abs_sum / std::max(1.0, ref.count), ref.exact);
  case Op::norm2: {
    // sqrt(s') for a sum of squares s' within e of s: |sqrt(s') - sqrt(s)| <= sqrt(s + e) -
    // sqrt(s - e), then the square root's rounding and, for bf16 and f16, the element type's.
    const DType acc = is_half(d) ? DType::f32 : d;
    const double s = ref.abs_sum, e = float_bound(acc, squares_depth(acc, depth, ref), s, s);
    const double u = acc == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    const double hi = std::sqrt(s + e);
    double b = hi - std::sqrt(std::max(0.0, s - e)) + u * hi;
    if (is_half(d)) b += half_unit_roundoff(d) * (hi + b) + half_subnormal_error(d);
    return b;
  }
  case Op::logsumexp: {
    // The rescaled sum S of positive terms: each level of the combine chain rounds an exp (2 ulp
    // in float32, an argument rounded once), a product and a sum: a relative error of at most
    // gamma(6 depth + 2). Its log is then off by at most gamma / (1 - gamma), plus the log's own
    // rounding (2 u |log S|, abs_sum holds log S) and the final add's (u |result|).
    const DType acc = is_half(d) ? DType::f32 : d;
    const double u = acc == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    const double ku = (6.0 * double(depth) + 2) * u;
    const double g = ku < 0.5 ? ku / (1 - ku) : 2.0;
    double b = g / (1 - std::min(g, 0.5)) + 2 * u * std::fabs(ref.abs_sum) + u * std::fabs(ref.exact);
    if (is_half(d)) b += half_unit_roundoff(d) * (std::fabs(ref.exact) + b) + half_subnormal_error(d);
    return b;
  }
  case Op::var:
  case Op::std_:
  case Op::var_population:
  case Op::std_population: {
    // Chan's pairwise merge of (count, mean, M2): Chan, Golub and LeVeque bound its relative error
    // by about depth u kappa, kappa = sqrt(sum x^2 / M2), i.e. an absolute error of depth u
    // sqrt(sum x^2 M2) <= depth u sum x^2; 4 depth + 4 covers the roundings of each merge (the
    // weight, the mean's update, the squared difference and its products) and the conversion of
    // integers to float64. Then the division by n - correction (u |var|) and, for std, the spread
    // of sqrt over var's interval plus the root's rounding; bf16 and f16 round once more.
    const DType acc = is_half(d) ? DType::f32 : d;
    const double u = acc == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    const double ku = (4.0 * double(depth) + 4) * u;
    const double g = ku < 0.5 ? ku / (1 - ku) : 2.0;
    const double c = std::max(1.0, ref.count - ((op == Op::var || op == Op::std_) ? 1 : 0));
    const bool root = op == Op::std_ || op == Op::std_population;
    const double var = root ? ref.exact * ref.exact : ref.exact;
    const double ev = g * ref.abs_sum / c + u * std::fabs(var);
    double b = ev;
    if (root) {
      const double hi = std::sqrt(var + ev);
      b = hi - std::sqrt(std::max(0.0, var - ev)) + u * hi;
    }
    if (is_half(d)) b += half_unit_roundoff(d) * (std::fabs(ref.exact) + b) + half_subnormal_error(d);
    return b;
  }
  default: return float_bound(d, depth, ref.abs_sum, ref.exact);
  }
}

/// The verdict of check() without its texts (which cost more than the comparison: the segmented
/// sweep checks millions of results per configuration). error and bound as in Check.
bool within(const Reference& ref, Scalar got, Op op, std::uint64_t depth, double& error, double& bound) {
  const DType d = ref.value.dtype;
  // A float32 result of a bf16 or f16 reduction (Target::wide_result): min and max are the exact
  // element widened (signed zeros included), a sum has the float32 bound, without the rounding
  // to the element type.
  const bool wide = got.dtype != d;
  if (!bounded_op(op, d)) {
    const double g = got.to_double(), r = ref.value.to_double();
    if (is_float(d) && std::isnan(g) && std::isnan(r)) return true;
    return wide ? g == r && std::signbit(g) == std::signbit(r) : got == ref.value;
  }
  const double g = got.to_double(), e = ref.exact;
  if (std::isnan(e) || std::isinf(e)) return std::isnan(e) ? std::isnan(g) : g == e;
  // A finite value past the dtype's range (a float16 sum of squares of 1024s): the infinity it
  // rounds to.
  const double rounded = ref.value.to_double();
  if (!wide && std::isinf(rounded)) return g == rounded;
  error = std::fabs(g - e);
  bound = op_bound(op, wide ? got.dtype : d, depth, ref);
  return std::isfinite(g) && error <= bound;
}

} // namespace

Check check(const Reference& ref, Scalar got, Op op, std::uint64_t depth) {
  Check c;
  c.ok = within(ref, got, op, depth, c.error, c.bound);
  c.observed = got.to_string();
  const double e = ref.exact;
  if (bounded_op(op, ref.value.dtype) && std::isfinite(e)) {
    std::ostringstream o;
    o.precision(17);
    o << e;
    c.expected = o.str();
  } else {
    c.expected = ref.value.to_string();
  }
  return c;
}

} // namespace reduce_tune

namespace reduce_tune {

Check check_segmented(const std::vector<Reference>& refs, const HostArray& got,
                      const Segmentation& s, Op op,
                      const std::function<std::uint64_t(std::uint64_t)>& depth) {
  const std::size_t es = size_of(got.dtype);
  const bool bounded = !refs.empty() && bounded_op(op, refs.front().value.dtype);
  // A float sum equal to its reference's rounded value (same dtype, finite) passes at once: its
  // error is the rounding of `exact` alone, the least any result of that dtype can have (within
  // float_bound's u |exact| term in the normal range), and most results of short segments are it.
  const auto rounded = [&](const Reference& r, const Scalar& v) {
    return v == r.value && std::isfinite(r.exact) && std::isfinite(v.to_double());
  };
  // In parallel chunks; each finds its first failure, and the first chunk's that failed wins.
  const unsigned slots = chunk_threads(s.shape.count);
  std::vector<std::optional<std::pair<std::uint64_t, Check>>> first(slots);
  parallel_ranges(s.shape.count, slots, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    std::uint64_t last_len = ~0ull, last_depth = 0;
    for (std::uint64_t i = lo; i < hi; ++i) {
      Scalar v;
      v.dtype = got.dtype;
      std::memcpy(&v.bits, got.bytes.data() + i * es, es);
      // The common cases, without a bound or texts.
      if (bounded ? rounded(refs[i], v) : v == refs[i].value) continue;
      const std::uint64_t len = s.length(i);
      if (bounded && len != last_len) last_len = len, last_depth = depth(len);
      double error = 0, bound = 0;
      if (within(refs[i], v, op, bounded ? last_depth : 0, error, bound)) continue;
      first[t] = std::make_pair(i, check(refs[i], v, op, bounded ? last_depth : 0));
      return;
    }
  });
  for (auto& f : first)
    if (f) {
      Check& one = f->second;
      const std::uint64_t i = f->first;
      const std::string at = "result " + std::to_string(i) + " of " + std::to_string(s.shape.count) +
                             " (" + std::to_string(s.length(i)) + " elements): ";
      one.expected = at + one.expected;
      one.observed = at + one.observed;
      return one;
    }
  Check ok;
  ok.ok = true;
  return ok;
}

} // namespace reduce_tune
