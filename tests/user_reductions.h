// User reductions the CPU and GPU tests share, each with its CPU evaluation (Reduction::check,
// which is not part of the description, so the hash is the same with or without it): a logsumexp
// with a struct accumulator, and the first non-zero element of float32 input in a float64
// accumulator, a combine that is associative but not commutative.
#pragma once

#include "kernels/catalogue.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace reduce_tune::testing {

/// The sum of squares: map `x * x`, the default (additive) combine, identity and post-map.
inline Reduction sum_of_squares() {
  Reduction r;
  r.map = "x * x";
  r.combine = "a + b";
  r.identity = "0";
  r.post = "a";
  return r;
}

/// The catalogue's target for user reduction `u` on `dtype` elements.
inline Target user_target(const UserOp& u, DType dtype, Problem problem = Problem::array, int cc = 90) {
  Target t;
  t.dtype = dtype;
  t.cc = cc;
  t.problem = problem;
  t.user = &u;
  return t;
}

/// logsumexp of float32 or bfloat16: a running maximum and a sum rescaled to it.
inline Reduction log_sum_exp() {
  Reduction r;
  r.preamble = "struct lse { float m; float s; };\n"
               "__device__ lse lse_merge(lse a, lse b) {\n"
               "  const float m = fmaxf(a.m, b.m);\n"
               "  if (m == -INFINITY) return a;\n"
               "  return lse{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};\n"
               "}";
  r.accumulator = "lse";
  r.accumulator_bytes = 8;
  r.identity = "{-INFINITY, 0.f}";
  r.map = "lse{float(x), 1.f}";
  r.combine = "lse_merge(a, b)";
  r.post = "a.m + logf(a.s)";
  r.inputs = {DType::f32, DType::bf16};
  r.check = [](const double* x, std::size_t n) {
    double m = -INFINITY, s = 0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    for (std::size_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
    return n ? m + std::log(s) : -INFINITY;
  };
  return r;
}

/// The first non-zero element (0.0 for none) as a float64: its value, or (`index`) its index plus
/// one, so that the order shows whatever the input's values.
inline Reduction first_nonzero_of(bool index) {
  Reduction r;
  r.accumulator = "double";
  r.map = index ? "x != 0 ? double(i + 1) : 0.0" : "x != 0 ? double(x) : 0.0";
  r.combine = "a != 0 ? a : b";
  r.identity = "0.0";
  r.commutative = false;
  r.result = DType::f64;
  r.inputs = {DType::f32};
  if (index)
    r.check = [](const double* x, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i)
        if (x[i] != 0) return double(i + 1);
      return 0.0;
    };
  else
    r.check = [](const double* x, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i)
        if (x[i] != 0) return x[i];
      return 0.0;
    };
  return r;
}

/// The first non-zero value: its map does not read the index, so the flat mapping takes it.
inline Reduction first_nonzero_value() { return first_nonzero_of(false); }
/// The first non-zero element's index plus one.
inline Reduction first_nonzero_index() { return first_nonzero_of(true); }

} // namespace reduce_tune::testing
