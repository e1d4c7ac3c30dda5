// reduce-tune bench: input data and CPU reference, spread over the host's cores (2^30 elements
// take a few seconds on one).
#include "bench/data.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>
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

float as_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::string show(DType dtype, std::uint32_t bits) {
  char buf[64];
  if (dtype == DType::f32)
    std::snprintf(buf, sizeof buf, "%.9g", double(as_float(bits)));
  else
    std::snprintf(buf, sizeof buf, "%" PRId32, std::int32_t(bits));
  return buf;
}

} // namespace

std::unique_ptr<std::uint32_t[]> make_data(DType dtype, std::uint64_t n, std::uint64_t seed) {
  std::unique_ptr<std::uint32_t[]> a(new std::uint32_t[n]);
  std::uint32_t* p = a.get();
  for_chunks(n, [&](std::uint64_t first, std::uint64_t last, std::uint64_t c) {
    std::uint64_t s = seed ^ (c * 0xd1b54a32d192ed03ull);
    splitmix64(s);
    for (std::uint64_t i = first; i < last; ++i) {
      const std::uint64_t x = splitmix64(s);
      if (dtype == DType::f32) {
        // 24 random bits -> k * 2^-23 - 1, exact in float32, uniform in [-1, 1).
        float v = float(std::int64_t(x >> 40) - (std::int64_t(1) << 23)) * 0x1p-23f;
        if (v == 0.0f) v = 0x1p-24f;
        p[i] = bits_of(v);
      } else {
        p[i] = std::uint32_t(x >> 32);
      }
    }
  });
  return a;
}

std::uint32_t identity_bits(DType dtype, Op op) {
  if (op == Op::sum) return 0;
  if (dtype == DType::f32)
    return bits_of(op == Op::min ? std::numeric_limits<float>::infinity()
                                 : -std::numeric_limits<float>::infinity());
  return op == Op::min ? std::uint32_t(std::numeric_limits<std::int32_t>::max())
                       : std::uint32_t(std::numeric_limits<std::int32_t>::min());
}

Reference reference(const std::uint32_t* data, std::uint64_t n, DType dtype, Op op) {
  const std::uint64_t chunks = (n + kChunk - 1) / kChunk;
  struct Part {
    double sum = 0, abs_sum = 0;
    std::uint32_t bits = 0; // int sum (wrapping) or min/max bits
  };
  std::vector<Part> parts(chunks);
  const bool f = dtype == DType::f32;
  for_chunks(n, [&](std::uint64_t first, std::uint64_t last, std::uint64_t c) {
    Part part;
    if (op == Op::sum) {
      if (f) {
        for (std::uint64_t i = first; i < last; ++i) {
          const double x = as_float(data[i]);
          part.sum += x;
          part.abs_sum += std::fabs(x);
        }
      } else {
        std::uint32_t s = 0;
        for (std::uint64_t i = first; i < last; ++i) s += data[i];
        part.bits = s;
      }
    } else if (f) {
      float m = as_float(identity_bits(dtype, op));
      for (std::uint64_t i = first; i < last; ++i)
        m = op == Op::min ? std::min(m, as_float(data[i])) : std::max(m, as_float(data[i]));
      part.bits = bits_of(m);
    } else {
      std::int32_t m = std::int32_t(identity_bits(dtype, op));
      for (std::uint64_t i = first; i < last; ++i)
        m = op == Op::min ? std::min(m, std::int32_t(data[i])) : std::max(m, std::int32_t(data[i]));
      part.bits = std::uint32_t(m);
    }
    parts[c] = part;
  });

  Reference r;
  r.dtype = dtype;
  r.op = op;
  r.bits = identity_bits(dtype, op);
  for (const Part& p : parts) {
    if (op == Op::sum && f) {
      r.exact += p.sum;
      r.abs_sum += p.abs_sum;
    } else if (op == Op::sum) {
      r.bits += p.bits;
    } else if (f) {
      const float a = as_float(r.bits), b = as_float(p.bits);
      r.bits = bits_of(op == Op::min ? std::min(a, b) : std::max(a, b));
    } else {
      const std::int32_t a = std::int32_t(r.bits), b = std::int32_t(p.bits);
      r.bits = std::uint32_t(op == Op::min ? std::min(a, b) : std::max(a, b));
    }
  }
  if (op == Op::sum && f)
    r.bits = bits_of(float(r.exact));
  else
    r.exact = f ? double(as_float(r.bits)) : double(std::int32_t(r.bits));
  return r;
}

Verdict check(const Reference& ref, std::uint32_t got_bits) {
  Verdict v;
  v.got = show(ref.dtype, got_bits);
  if (ref.dtype == DType::f32 && ref.op == Op::sum) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", ref.exact);
    v.want = buf;
    const double got = as_float(got_bits);
    const double err = std::fabs(got - ref.exact); // NaN compares false below: fails
    v.rel_err = ref.abs_sum > 0 ? err / ref.abs_sum : err;
    v.ok = err <= 1e-6 * ref.abs_sum + 1e-6 * std::fabs(ref.exact);
    if (std::isnan(got)) v.rel_err = std::numeric_limits<double>::infinity();
  } else {
    v.want = show(ref.dtype, ref.bits);
    v.ok = got_bits == ref.bits;
    v.rel_err = v.ok ? 0 : 1;
  }
  return v;
}

} // namespace rt_bench
