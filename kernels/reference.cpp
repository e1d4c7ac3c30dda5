// reduce-tune: test data and the CPU reference.
#include "kernels/reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

namespace reduce_tune {
namespace {

// Counter-based generator: element i depends only on (seed, i), so chunks fill in parallel.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename F> void parallel_chunks(std::uint64_t n, F&& f) {
  const unsigned threads = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads, t); });
  for (auto& th : pool) th.join();
}

template <typename T> T combine(T a, T b, Op op) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == Op::min) return std::fmin(a, b);
    if (op == Op::max) return std::fmax(a, b);
    return a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    if (op == Op::min) return std::min(a, b);
    if (op == Op::max) return std::max(a, b);
    return T(U(a) + U(b)); // two's-complement wrap
  }
}

// Reduces [0, n) in parallel chunks; floats sum in double.
template <typename T> Reference reduce_host(const T* x, std::uint64_t n, Op op) {
  const unsigned slots = std::max(1u, std::thread::hardware_concurrency());
  std::vector<T> part(slots, identity<T>(op));
  std::vector<double> dsum(slots, 0.0), dabs(slots, 0.0);
  parallel_chunks(n, [&](std::uint64_t lo, std::uint64_t hi, unsigned t) {
    T acc = identity<T>(op);
    double s = 0, a = 0;
    for (std::uint64_t i = lo; i < hi; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        s += double(x[i]);
        a += std::fabs(double(x[i]));
      }
      acc = combine(acc, x[i], op);
    }
    part[t] = acc, dsum[t] = s, dabs[t] = a;
  });
  Reference r;
  T acc = identity<T>(op);
  for (unsigned t = 0; t < slots; ++t) {
    acc = combine(acc, part[t], op);
    r.exact += dsum[t];
    r.abs_sum += dabs[t];
  }
  if constexpr (std::is_floating_point_v<T>)
    if (op == Op::sum) acc = T(r.exact);
  r.value = Scalar::of(acc);
  return r;
}

} // namespace

template <typename T> Scalar Scalar::of(T v) {
  Scalar s;
  if constexpr (std::is_same_v<T, std::int32_t>) s.dtype = DType::i32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) s.dtype = DType::u32;
  else if constexpr (std::is_same_v<T, std::int64_t>) s.dtype = DType::i64;
  else if constexpr (std::is_same_v<T, float>) s.dtype = DType::f32;
  else s.dtype = DType::f64;
  std::memcpy(&s.bits, &v, sizeof v);
  return s;
}

template <typename T> T Scalar::as() const {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template Scalar Scalar::of(std::int32_t);
template Scalar Scalar::of(std::uint32_t);
template Scalar Scalar::of(std::int64_t);
template Scalar Scalar::of(float);
template Scalar Scalar::of(double);
template std::int32_t Scalar::as() const;
template std::uint32_t Scalar::as() const;
template std::int64_t Scalar::as() const;
template float Scalar::as() const;
template double Scalar::as() const;

double Scalar::to_double() const {
  return visit(dtype, [&](auto t) { return double(as<decltype(t)>()); });
}

std::string Scalar::to_string() const {
  return visit(dtype, [&](auto t) {
    std::ostringstream o;
    o.precision(std::numeric_limits<decltype(t)>::max_digits10);
    o << as<decltype(t)>();
    return o.str();
  });
}

HostArray make_input(DType dtype, std::uint64_t n, std::uint64_t seed) {
  HostArray a;
  a.dtype = dtype;
  a.n = n;
  a.bytes.resize(n * size_of(dtype));
  visit(dtype, [&](auto t) {
    using T = decltype(t);
    T* x = a.data<T>();
    parallel_chunks(n, [&](std::uint64_t lo, std::uint64_t hi, unsigned) {
      for (std::uint64_t i = lo; i < hi; ++i) {
        const std::uint64_t r = mix(seed * 0x100000001b3ull + i);
        if constexpr (std::is_floating_point_v<T>) {
          // Uniform in [-1, 1) on a 2^-24 grid; never exactly zero.
          const double u = double(std::int64_t(r >> 40) - (1ll << 23)) / double(1 << 23);
          x[i] = T(u == 0 ? 0.5 : u);
        } else {
          T v;
          std::memcpy(&v, &r, sizeof v);
          x[i] = v == 0 ? T(1) : v;
        }
      }
    });
    if constexpr (std::is_floating_point_v<T>) {
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

Scalar identity(DType dtype, Op op) {
  return visit(dtype, [op](auto t) { return Scalar::of(identity<decltype(t)>(op)); });
}

Reference reference(const HostArray& a, Op op) {
  return visit(a.dtype, [&](auto t) { return reduce_host(a.data<decltype(t)>(), a.n, op); });
}

Scalar combine_on_host(const HostArray& partials, std::uint64_t count, Op op) {
  return visit(partials.dtype, [&](auto t) {
    using T = decltype(t);
    const T* p = partials.data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      if (op == Op::sum) {
        double s = 0;
        for (std::uint64_t i = 0; i < count; ++i) s += double(p[i]);
        return Scalar::of(T(s));
      }
    }
    T acc = identity<T>(op);
    for (std::uint64_t i = 0; i < count; ++i) acc = combine(acc, p[i], op);
    return Scalar::of(acc);
  });
}

double float_bound(DType dtype, std::uint64_t depth, double abs_sum, double exact) {
  const double u = dtype == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double ku = double(depth) * u;
  const double gamma = ku < 0.5 ? ku / (1 - ku) : 2.0; // past 1/2 the classic bound says little
  return gamma * abs_sum + u * std::fabs(exact);
}

Check check(const Reference& ref, Scalar got, Op op, std::uint64_t depth) {
  Check c;
  c.expected = ref.value.to_string();
  c.observed = got.to_string();
  const DType d = ref.value.dtype;
  if (!is_float(d) || op != Op::sum) {
    c.ok = got == ref.value ||
           (is_float(d) && std::isnan(got.to_double()) && std::isnan(ref.value.to_double()));
    return c;
  }
  const double g = got.to_double(), e = ref.exact;
  if (std::isnan(e) || std::isinf(e)) {
    c.ok = std::isnan(e) ? std::isnan(g) : g == e;
    return c;
  }
  c.error = std::fabs(g - e);
  c.bound = float_bound(d, depth, ref.abs_sum, e);
  c.ok = std::isfinite(g) && c.error <= c.bound;
  std::ostringstream o;
  o.precision(17);
  o << e;
  c.expected = o.str();
  return c;
}

} // namespace reduce_tune
