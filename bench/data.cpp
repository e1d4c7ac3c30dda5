// reduce-tune bench: input data, CPU reference and the timings' median; the first two spread over the
// host's cores (2^30 elements take a few seconds on one).
//
// Not tuner/reference.h's make_input / reference: that data depends on n (spikes at the last
// element and at power-of-two edges), so every size would need its own fill of up to 8 GiB, and
// its float sums are plain double sums, not accurate enough for a tight float64 bound.
#include "bench/data.h"

#include "tuner/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>
#include <type_traits>
#include <vector>

namespace rt_bench {
namespace {

using reduce_tune::DType;
using reduce_tune::Op;

/// Fixed chunks, so results do not depend on the thread count.
constexpr std::uint64_t kChunk = std::uint64_t(1) << 18;

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Calls f(first, last, chunk index) for every chunk of [0, n), on all cores.
template <typename F> void for_chunks(std::uint64_t n, F&& f) {
  const std::uint64_t chunks = (n + kChunk - 1) / kChunk;
  const unsigned threads =
      unsigned(std::min<std::uint64_t>(std::max(1u, std::thread::hardware_concurrency()), chunks));
  auto work = [&](unsigned t) {
    for (std::uint64_t c = t; c < chunks; c += threads)
      f(c * kChunk, std::min(n, (c + 1) * kChunk), c);
  };
  if (threads <= 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
}

template <typename T> std::uint64_t bits_of(T v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <typename T> T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

/// Element i of the array from the i-th random 64-bit word (see make_data).
template <typename T> T element(std::uint64_t x) {
  if constexpr (std::is_same_v<T, float>) {
    // 24 random bits -> k * 2^-23 - 1, exact in float32, uniform in [-1, 1).
    const float v = float(std::int64_t(x >> 40) - (std::int64_t(1) << 23)) * 0x1p-23f;
    return v != 0 ? v : 0x1p-24f;
  } else if constexpr (reduce_tune::is_half_float_v<T>) {
    // The float32 value rounded to the type; 0.5 where that is zero.
    const T v(double(element<float>(x)));
    return double(v) != 0 ? v : T(0.5);
  } else if constexpr (std::is_same_v<T, double>) {
    // 53 random bits -> k * 2^-52 - 1, exact in float64, uniform in [-1, 1).
    const double v = double(std::int64_t(x >> 11) - (std::int64_t(1) << 52)) * 0x1p-52;
    return v != 0 ? v : 0x1p-53;
  } else {
    // The high 32 bits or all 64 (conversions to signed types wrap, C++20).
    const T v = sizeof(T) == 4 ? T(x >> 32) : T(x);
    return v != 0 ? v : T(1);
  }
}

/// min/max, and the wrapping sum of integers (in the unsigned type: signed overflow is undefined).
template <typename T> T combine(T a, T b, Op op) {
  if (op == Op::min) return std::min(a, b);
  if (op == Op::max) return std::max(a, b);
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(a) + U(b));
  } else {
    return a + b;
  }
}

/// s + c: a double sum that keeps the rounding error of every add (Knuth's TwoSum; the build
/// uses no fast-math, which would fold it away). Per 2^18-element chunk this is as accurate as
/// summing in twice the precision, then one rounding: far inside the float64 bound.
struct CompensatedSum {
  double s = 0, c = 0;
  void add(double x) {
    const double t = s + x, z = t - s;
    c += (s - (t - z)) + (x - z);
    s = t;
  }
};

template <typename T> std::string show(T v) {
  std::ostringstream o;
  o.precision(std::numeric_limits<T>::max_digits10 + (reduce_tune::is_half_float_v<T> ? 1 : 0));
  o << v;
  return o.str();
}

std::string show(DType dtype, std::uint64_t bits) {
  return rt_bench::visit(dtype, [&](auto t) { return show(from_bits<decltype(t)>(bits)); });
}

template <typename T> Reference reference_of(const T* data, std::uint64_t n, Op op) {
  using A = reduce_tune::acc_t<T>; // float for bf16 and f16: their min/max are exact in it
  struct Part {
    A acc{};             // the chunk's result (float sums: unused)
    CompensatedSum sum;  // float sums
    double abs_sum = 0;
  };
  constexpr bool float_sum = reduce_tune::is_float_like_v<T>;
  std::vector<Part> parts((n + kChunk - 1) / kChunk);
  for_chunks(n, [&](std::uint64_t first, std::uint64_t last, std::uint64_t c) {
    Part part;
    part.acc = reduce_tune::identity<A>(op);
    if (float_sum && op == Op::sum) {
      for (std::uint64_t i = first; i < last; ++i) {
        part.sum.add(double(data[i]));
        part.abs_sum += std::fabs(double(data[i]));
      }
    } else {
      for (std::uint64_t i = first; i < last; ++i) part.acc = combine(part.acc, reduce_tune::widen(data[i]), op);
    }
    parts[c] = part;
  });

  Reference r;
  r.op = op;
  A acc = reduce_tune::identity<A>(op);
  CompensatedSum sum;
  for (const Part& p : parts) {
    acc = combine(acc, p.acc, op);
    sum.add(p.sum.s);
    sum.c += p.sum.c;
    r.abs_sum += p.abs_sum;
  }
  if (float_sum && op == Op::sum) {
    r.exact = sum.s + sum.c;
    r.bits = bits_of(T(r.exact)); // rounded once, also for bf16 and f16
  } else {
    r.exact = double(acc);
    r.bits = bits_of(T(acc));
  }
  return r;
}

} // namespace

// float32: 1e-6 (about 17 units of float32 roundoff u = 2^-24), as before. float64: 1e-13
// (about 900 u, u = 2^-53). A GPU sum of n <= 2^31 values in [-1, 1) rounds each add by at most
// u |partial|, and random signs keep the partials near sqrt(count), a few dozen in a thread's
// loop: even with every rounding the same way, n u 40 / sum|x| (sum|x| ~ n/2) is about 1e-14.
// Yet one dropped or doubled element (|x| ~ 0.5) moves the sum by about sum|x| / n, which is
// above 1e-13 sum|x| for every n < 2^43: the float64 check still sees it.
Reference widened(const Reference& ref) {
  Reference w = ref;
  w.dtype = DType::f32;
  const float v = float(ref.exact); // min/max: exact; sums: rounded once to float32
  std::uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  w.bits = b;
  return w;
}

double sum_tolerance(DType dtype) { return dtype == DType::f64 ? 1e-13 : 1e-6; }
double result_tolerance(DType dtype) {
  return reduce_tune::is_half(dtype) ? reduce_tune::half_unit_roundoff(dtype) : sum_tolerance(dtype);
}

void parallel_for(std::uint64_t n, const std::function<void(std::uint64_t, std::uint64_t)>& f) {
  for_chunks(n, [&](std::uint64_t first, std::uint64_t last, std::uint64_t) { f(first, last); });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::unique_ptr<std::byte[]> make_data(DType dtype, std::uint64_t n, std::uint64_t seed) {
  std::unique_ptr<std::byte[]> a(new std::byte[n * reduce_tune::size_of(dtype)]);
  fill_data(dtype, n, seed, a.get()); // new[] of bytes is aligned for any scalar type
  return a;
}

void fill_data(DType dtype, std::uint64_t n, std::uint64_t seed, void* out) {
  rt_bench::visit(dtype, [&](auto t) {
    using T = decltype(t);
    T* p = static_cast<T*>(out);
    for_chunks(n, [&](std::uint64_t first, std::uint64_t last, std::uint64_t c) {
      std::uint64_t s = seed ^ (c * 0xd1b54a32d192ed03ull);
      splitmix64(s);
      for (std::uint64_t i = first; i < last; ++i) p[i] = element<T>(splitmix64(s));
    });
  });
}

Reference reference(const void* data, std::uint64_t n, DType dtype, Op op) {
  Reference r = rt_bench::visit(dtype, [&](auto t) {
    using T = decltype(t);
    return reference_of(static_cast<const T*>(data), n, op);
  });
  r.dtype = dtype;
  return r;
}

Verdict check(const Reference& ref, std::uint64_t got_bits) {
  Verdict v;
  v.got = show(ref.dtype, got_bits);
  if (reduce_tune::is_float(ref.dtype) && ref.op == Op::sum) {
    v.want = show(ref.exact);
    const double got =
        rt_bench::visit(ref.dtype, [&](auto t) { return double(from_bits<decltype(t)>(got_bits)); });
    const double err = std::fabs(got - ref.exact); // NaN compares false below: fails
    const double eps = sum_tolerance(ref.dtype);
    v.rel_err = ref.abs_sum > 0 ? err / ref.abs_sum : err;
    v.ok = err <= eps * ref.abs_sum + result_tolerance(ref.dtype) * std::fabs(ref.exact);
    if (std::isnan(got)) v.rel_err = std::numeric_limits<double>::infinity();
  } else {
    v.want = show(ref.dtype, ref.bits);
    v.ok = got_bits == ref.bits;
    v.rel_err = v.ok ? 0 : 1;
  }
  return v;
}

} // namespace rt_bench
