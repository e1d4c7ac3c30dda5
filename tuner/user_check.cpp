// reduce-tune: checks of a user reduction's results against its CPU evaluation (tuner/user_check.h).
#include "tuner/user_check.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace reduce_tune {
namespace {

/// Elements [from, from + count * step) of `a`, `step` apart, as doubles (and their magnitudes).
void elements(const HostArray& a, std::uint64_t from, std::uint64_t count, std::uint64_t step,
              std::vector<double>& x, std::vector<double>& abs_x) {
  x.resize(count);
  abs_x.resize(count);
  visit(a.dtype, [&](auto t) {
    using T = decltype(t);
    const T* p = a.data<T>();
    for (std::uint64_t i = 0; i < count; ++i) {
      x[i] = double(p[from + i * step]);
      abs_x[i] = std::abs(x[i]);
    }
  });
}

std::string text(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

} // namespace

UserExpected user_expected(const UserOp& u, const HostArray& a) {
  UserExpected e;
  if (!u.description.check) return e;
  e.checked = true;
  std::vector<double> x, abs_x;
  elements(a, 0, a.n, 1, x, abs_x);
  e.value.push_back(u.description.check(x.data(), x.size()));
  e.magnitude.push_back(u.description.check(abs_x.data(), abs_x.size()));
  return e;
}

UserExpected user_expected(const UserOp& u, const HostArray& a, const Segmentation& s) {
  UserExpected e;
  if (!u.description.check) return e;
  e.checked = true;
  std::vector<double> x, abs_x;
  for (std::uint64_t i = 0; i < s.shape.count; ++i) {
    switch (s.problem) {
    case Problem::rows: elements(a, i * s.stride, s.shape.length, 1, x, abs_x); break;
    case Problem::columns: elements(a, i, s.shape.length, s.stride, x, abs_x); break;
    default: {
      const auto b = std::uint64_t(s.offsets[i]), end = std::uint64_t(s.offsets[i + 1]);
      elements(a, b, end > b ? end - b : 0, 1, x, abs_x);
    }
    }
    e.value.push_back(u.description.check(x.data(), x.size()));
    e.magnitude.push_back(u.description.check(abs_x.data(), abs_x.size()));
  }
  return e;
}

double user_unit_roundoff(const UserOp& u, DType dtype) {
  const std::string& acc = u.description.accumulator;
  const bool wide = u.result_dtype(dtype) == DType::f64 || acc.find("double") != std::string::npos ||
                    (acc.empty() && dtype == DType::f64);
  return wide ? 0x1p-53 : 0x1p-24;
}

Check check_user(const UserOp& u, DType dtype, const UserExpected& e, std::size_t i, double got,
                 std::uint64_t depth) {
  Check c;
  c.observed = text(got);
  if (!e.checked) {
    c.ok = true;
    c.expected = kNotChecked;
    return c;
  }
  const double want = e.value.at(i);
  c.expected = text(want);
  const DType result = u.result_dtype(dtype);
  if (std::isnan(want) || std::isnan(got)) {
    c.ok = std::isnan(want) && std::isnan(got);
    return c;
  }
  if (std::isinf(want) || std::isinf(got)) {
    c.ok = want == got;
    return c;
  }
  c.error = std::abs(got - want);
  if (!is_float(result)) {
    c.ok = got == want;
    return c;
  }
  const double unit = user_unit_roundoff(u, dtype);
  const double k = double(depth + 2) * unit;
  double bound = k / (1 - k) * std::abs(e.magnitude.at(i)) + 2 * unit * std::abs(want);
  if (result == DType::bf16) bound += 0x1p-8 * (std::abs(want) + bound) + 0x1p-134;
  if (result == DType::f16) bound += 0x1p-11 * (std::abs(want) + bound) + 0x1p-25;
  c.bound = bound;
  c.ok = c.error <= bound;
  return c;
}

Check check_user_segmented(const UserOp& u, DType dtype, const UserExpected& e, const HostArray& got,
                           const Segmentation& s, const std::function<std::uint64_t(std::uint64_t)>& depth) {
  Check ok;
  ok.ok = true;
  if (!e.checked) {
    ok.expected = kNotChecked;
    ok.observed = std::to_string(s.shape.count) + " results";
    return ok;
  }
  for (std::uint64_t i = 0; i < s.shape.count; ++i) {
    Scalar v;
    v.dtype = got.dtype;
    std::memcpy(&v.bits, got.bytes.data() + i * size_of(got.dtype), size_of(got.dtype));
    Check c = check_user(u, dtype, e, i, v.to_double(), depth(s.length(i)));
    if (!c.ok) {
      c.expected = "result " + std::to_string(i) + ": " + c.expected;
      return c;
    }
  }
  return ok;
}

} // namespace reduce_tune
