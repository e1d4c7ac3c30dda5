// reduce-tune: sum references in the general reference's order, with small accumulators.
#include "tuner/sum_reference.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <type_traits>

namespace reduce_tune {
namespace {

constexpr std::uint64_t kParallelWork = std::uint64_t(1) << 20; // as tuner/reference.cpp

// f(lo, hi, t) over n items on the threads the general reference uses for `work` elements: one
// below 2^20 of them, else one per core, at most one per item; item ranges n * t / threads.
template <typename F> void items(std::uint64_t n, std::uint64_t work, F&& f) {
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = unsigned(work < kParallelWork ? 1 : std::max<std::uint64_t>(1, std::min(cores, n)));
  if (threads == 1) return f(std::uint64_t(0), n, 0u);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads, t); });
  for (std::thread& th : pool) th.join();
}

// The running sums of one result: the double sums of x and |x| for floats, the wrapping sum for
// integers (as the general reference's).
template <typename T> struct Sums {
  static constexpr bool kFloat = is_float_like_v<T>;
  using U = std::conditional_t<kFloat, double, std::make_unsigned_t<std::conditional_t<kFloat, int, T>>>;
  std::vector<U> sum;
  std::vector<double> abs; // floats only
  explicit Sums(std::size_t n) : sum(n, U(0)), abs(kFloat ? n : 0, 0.0) {}
  void add(std::size_t i, T x) {
    if constexpr (kFloat) {
      const double d = double(widen(x));
      sum[i] += d, abs[i] += std::fabs(d);
    } else {
      sum[i] = U(sum[i] + U(x));
    }
  }
};

// A result's Reference from its sums, as the general reference finishes a sum.
template <typename T> Reference finished(double sum, double abs, std::uint64_t n) {
  Reference r;
  r.count = double(n);
  r.abs_sum = abs;
  r.exact = sum;
  r.value = Scalar::of(T(r.exact));
  return r;
}
template <typename T, typename U> Reference finished_int(U sum, std::uint64_t n) {
  Reference r;
  r.count = double(n);
  r.value = Scalar::of(T(sum));
  return r;
}
template <typename T> Reference finish(const Sums<T>& s, std::size_t i, std::uint64_t n) {
  if constexpr (Sums<T>::kFloat) return finished<T>(s.sum[i], s.abs[i], n);
  else return finished_int<T>(s.sum[i], n);
}

template <typename T> void columns(const T* x, const Segmentation& s, std::vector<Reference>& out) {
  const std::uint64_t cols = s.shape.count, rows = s.shape.length, work = cols * rows;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (cols < cores && work >= kParallelWork) {
    // Ranges of rows on each thread, their sums merged in range order (as the general reference,
    // whose unused ranges add zeros, which change no sum).
    std::vector<Sums<T>> part(cores, Sums<T>(cols));
    items(rows, work, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
      for (std::uint64_t r = lo; r < hi; ++r)
        for (std::uint64_t c = 0; c < cols; ++c) part[t].add(c, x[r * s.stride + c]);
    });
    using U = typename Sums<T>::U;
    for (std::uint64_t c = 0; c < cols; ++c) {
      Sums<T> total(1);
      for (unsigned t = 0; t < cores; ++t) {
        if constexpr (Sums<T>::kFloat) total.sum[0] += part[t].sum[c], total.abs[0] += part[t].abs[c];
        else total.sum[0] = U(total.sum[0] + part[t].sum[c]);
      }
      out[c] = finish(total, 0, rows);
    }
    return;
  }
  items(cols, work, [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
    Sums<T> acc(hi - lo);
    for (std::uint64_t r = 0; r < rows; ++r) {
      const T* row = x + r * s.stride;
      for (std::uint64_t c = lo; c < hi; ++c) acc.add(c - lo, row[c]);
    }
    for (std::uint64_t c = lo; c < hi; ++c) out[c] = finish(acc, c - lo, rows);
  });
}

template <typename T> void segments(const T* x, const Segmentation& s, std::vector<Reference>& out) {
  const auto at = [&](std::uint64_t i) {
    return s.problem == Problem::segments ? std::uint64_t(s.offsets[i]) : i * s.stride;
  };
  items(s.shape.count, s.input_elements(), [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
    Sums<T> acc(1);
    for (std::uint64_t i = lo; i < hi; ++i) {
      const std::uint64_t len = s.length(i);
      const T* p = x + (len ? at(i) : 0);
      acc.sum[0] = 0;
      if constexpr (Sums<T>::kFloat) acc.abs[0] = 0;
      for (std::uint64_t k = 0; k < len; ++k) acc.add(0, p[k]);
      out[i] = finish(acc, 0, len);
    }
  });
}

} // namespace

bool sum_reference(const HostArray& a, const Segmentation& s, Op op, std::vector<Reference>& out) {
  if (op != Op::sum || s.problem == Problem::array) return false;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (s.problem != Problem::columns && s.shape.count < cores && s.input_elements() >= kParallelWork)
    return false;
  out.resize(s.shape.count);
  visit(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (s.problem == Problem::columns) columns(a.data<T>(), s, out);
    else segments(a.data<T>(), s, out);
  });
  return true;
}

} // namespace reduce_tune
