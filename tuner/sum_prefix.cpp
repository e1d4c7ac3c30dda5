// reduce-tune: sum references from prefix sums.
#include "tuner/sum_prefix.h"

#include "tuner/parallel.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace reduce_tune {
namespace {

// f(t) for t in [0, threads) on as many threads (the calling one alone for one).
template <typename F> void on_threads(unsigned threads, F&& f) {
  if (threads <= 1) return f(0u);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back([&, t] { f(t); });
  for (std::thread& th : pool) th.join();
}

// Threads for n items, at least `min_each` items a thread, at most one a core.
unsigned threads_for(std::uint64_t n, std::uint64_t min_each) {
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  return unsigned(std::clamp<std::uint64_t>(n / min_each, 1, cores));
}

// The exponent of the lowest set bit of a finite nonzero d: d is an odd multiple of 2^that.
int low_exponent(double d) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(d);
  const int biased = int((bits >> 52) & 0x7ff);
  std::uint64_t mant = bits & ((std::uint64_t(1) << 52) - 1);
  if (biased) mant |= std::uint64_t(1) << 52; // normal: the implicit bit
  return (biased ? biased - 1075 : -1074) + std::countr_zero(mant);
}

constexpr std::uint64_t kMinChunk = std::uint64_t(1) << 20; // elements a thread, building
constexpr std::uint64_t kMinResults = std::uint64_t(1) << 16; // results a thread, answering

} // namespace

SumPrefix::SumPrefix(const HostArray& a) : dtype_(a.dtype), n_(a.n) {
  const unsigned threads = threads_for(n_, kMinChunk);
  const auto lo = [&](unsigned t) { return n_ * t / threads; };
  visit(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = a.data<T>();
    if constexpr (is_float_like_v<T>) {
      // First the exactness (see the class): every value finite, the lowest exponent of any
      // nonzero one, and sum |x|, each chunk's, then in order.
      struct Part {
        double sum = 0, abs = 0;
        int low = INT_MAX;
        bool finite = true;
      };
      std::vector<Part> part(threads);
      on_threads(threads, [&](unsigned t) {
        Part p;
        for (std::uint64_t i = lo(t); i < lo(t + 1); ++i) {
          const double d = double(widen(x[i]));
          if (!std::isfinite(d)) p.finite = false;
          else if (d != 0) p.low = std::min(p.low, low_exponent(d));
          p.sum += d, p.abs += std::fabs(d);
        }
        part[t] = p;
      });
      bool finite = true;
      int low = INT_MAX;
      double total_abs = 0;
      for (const Part& p : part) finite &= p.finite, low = std::min(low, p.low), total_abs += p.abs;
      // A sum of non-negative values rounds to at least the power of two it reaches, so a total
      // below 2^(53 + low) means no partial sum reached it: each was exact.
      exact_ = finite && (low == INT_MAX || total_abs < std::ldexp(1.0, 53 + low));
      if (!exact_) return;
      sum_.resize(n_ + 1), abs_.resize(n_ + 1);
      sum_[0] = abs_[0] = 0;
      std::vector<double> start_sum(threads, 0), start_abs(threads, 0); // exact: partial sums
      for (unsigned t = 1; t < threads; ++t)
        start_sum[t] = start_sum[t - 1] + part[t - 1].sum, start_abs[t] = start_abs[t - 1] + part[t - 1].abs;
      on_threads(threads, [&](unsigned t) {
        double s = start_sum[t], b = start_abs[t];
        for (std::uint64_t i = lo(t); i < lo(t + 1); ++i) {
          const double d = double(widen(x[i]));
          s += d, b += std::fabs(d);
          sum_[i + 1] = s, abs_[i + 1] = b;
        }
      });
    } else {
      // Integers: sums mod 2^64 (a value converts to its residue), so differences are the
      // segment sums mod 2^64, and mod 2^bits of T, as the wrapping reference.
      std::vector<std::uint64_t> part(threads, 0);
      on_threads(threads, [&](unsigned t) {
        std::uint64_t s = 0;
        for (std::uint64_t i = lo(t); i < lo(t + 1); ++i) s += static_cast<std::uint64_t>(x[i]);
        part[t] = s;
      });
      wrap_.resize(n_ + 1);
      wrap_[0] = 0;
      std::vector<std::uint64_t> start(threads, 0);
      for (unsigned t = 1; t < threads; ++t) start[t] = start[t - 1] + part[t - 1];
      on_threads(threads, [&](unsigned t) {
        std::uint64_t s = start[t];
        for (std::uint64_t i = lo(t); i < lo(t + 1); ++i) wrap_[i + 1] = s += static_cast<std::uint64_t>(x[i]);
      });
      exact_ = true;
    }
  });
}

bool SumPrefix::serves(const Segmentation& s, Op op) const {
  if (!exact_ || op != Op::sum) return false;
  if (s.problem == Problem::rows)
    return s.shape.count == 0 || (s.stride >= s.shape.length && s.input_elements() <= n_);
  if (s.problem != Problem::segments || s.offsets.size() != s.shape.count + 1) return false;
  // Every non-empty segment within the input (2^24 segments: on every core).
  std::atomic<bool> within{true};
  parallel_for(s.shape.count, kMinResults, [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t i = lo; i < hi; ++i)
      if (s.offsets[i + 1] > s.offsets[i] && (s.offsets[i] < 0 || std::uint64_t(s.offsets[i + 1]) > n_))
        return within.store(false, std::memory_order_relaxed);
  });
  return within.load();
}

void SumPrefix::reference(const Segmentation& s, std::vector<Reference>& out) const {
  if (!serves(s, Op::sum)) throw std::invalid_argument("SumPrefix: a shape it cannot answer");
  out.resize(s.shape.count);
  const unsigned threads = threads_for(s.shape.count, kMinResults);
  on_threads(threads, [&](unsigned t) {
    const std::uint64_t first = s.shape.count * t / threads, last = s.shape.count * (t + 1) / threads;
    references(s, first, last, out.data() + first); // within the input: served
  });
}

bool SumPrefix::references(const Segmentation& s, std::uint64_t first, std::uint64_t last, Reference* out) const {
  if (!exact_ || last > s.shape.count || first > last) return false;
  const bool segments = s.problem == Problem::segments;
  // serves()'s conditions, but for the segments' bounds: those of the range only.
  if (segments ? s.offsets.size() != s.shape.count + 1
               : s.problem != Problem::rows ||
                     !(s.shape.count == 0 || (s.stride >= s.shape.length && s.input_elements() <= n_)))
    return false;
  bool within = true;
  visit(dtype_, [&](auto tag) {
    using T = decltype(tag);
    for (std::uint64_t i = first; i < last; ++i) {
      const std::uint64_t len = s.length(i);
      if (len && segments && (s.offsets[i] < 0 || std::uint64_t(s.offsets[i + 1]) > n_)) {
        within = false;
        return;
      }
      const std::uint64_t b = len ? (segments ? std::uint64_t(s.offsets[i]) : i * s.stride) : 0, e = b + len;
      // As the element-by-element reference finishes a sum (tuner/reference.cpp).
      Reference r;
      r.count = double(len);
      if constexpr (is_float_like_v<T>) {
        r.abs_sum = len ? abs_[e] - abs_[b] : 0;
        r.exact = len ? sum_[e] - sum_[b] : 0;
        r.value = Scalar::of(T(r.exact));
      } else {
        r.value = Scalar::of(T(std::make_unsigned_t<T>(wrap_[e] - wrap_[b])));
      }
      out[i - first] = r;
    }
  });
  return within;
}

} // namespace reduce_tune
